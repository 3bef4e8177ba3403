//! Catalog deprecation notices on a Subscription (OLM `updateDeprecatedStatus`, issue 17).
//!
//! A file-based catalog served by `registry serve` carries an `olm.deprecations` entry for the package, the
//! channel `stable` and the bundle `dep.v1.0.0`. The deprecated bundle still installs (only the `olm.deprecated`
//! property blocks a bundle), and its Subscription shows `PackageDeprecated`, `ChannelDeprecated` and
//! `BundleDeprecated` (status True, the catalog's message, no reason) and the `Deprecated` roll-up joining the
//! messages with "; ". The catalog is then served again (same port, the CatalogSource polls every 2 s) with only
//! the package notice: the channel and bundle conditions go and the roll-up follows; then with no notice: every
//! deprecation condition goes.

use kube::Api;
use kube::api::PostParams;
use messages::crd::catalog_source::{
    CatalogSource, CatalogSourceSpec, RegistryPoll, SourceType, UpdateStrategy,
};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::subscription::{SubscriptionState, SubscriptionStatus};
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, TestContext, await_object, with_namespace};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const PACKAGE: &str = "package dep is end of life, move to dep2";
const CHANNEL: &str = "channel stable is frozen";
const BUNDLE: &str = "dep.v1.0.0 has a known data-loss bug";

/// Every deprecation condition on the status: (type, status, reason, message), sorted by type.
fn deprecations(s: &SubscriptionStatus) -> Vec<(String, String, String, String)> {
    let mut out: Vec<(String, String, String, String)> = s
        .conditions
        .iter()
        .filter(|c| c.type_.as_str().ends_with("Deprecated"))
        .map(|c| {
            (
                c.type_.as_str().to_owned(),
                c.status.clone(),
                c.reason.as_str().to_owned(),
                c.message.clone(),
            )
        })
        .collect();
    out.sort();
    out
}

fn expected(conditions: &[(&str, &str)]) -> Vec<(String, String, String, String)> {
    let mut out: Vec<(String, String, String, String)> = conditions
        .iter()
        .map(|(t, m)| ((*t).into(), "True".into(), String::new(), (*m).into()))
        .collect();
    out.sort();
    out
}

/// The package-manifest catalog of the fixture rendered as FBC (`registry render`), plus `olm.deprecations`
/// entries for the given references.
fn write_fbc(dir: &Path, entries: &[(Value, &str)]) -> anyhow::Result<PathBuf> {
    let source = Catalog::with(vec![Op::new("dep", "1.0.0")]).write_file(dir, "source")?;
    let rendered = std::process::Command::new(olm_tests::bin_path("registry")?)
        .arg("render")
        .arg(&source)
        .output()?;
    anyhow::ensure!(
        rendered.status.success(),
        "registry render failed: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let mut fbc = String::from_utf8(rendered.stdout)?;
    if !entries.is_empty() {
        let entries: Vec<Value> = entries
            .iter()
            .map(|(reference, message)| json!({"reference": reference, "message": message}))
            .collect();
        fbc.push('\n');
        fbc.push_str(
            &json!({"schema": "olm.deprecations", "package": "dep", "entries": entries})
                .to_string(),
        );
        fbc.push('\n');
    }
    let dir = dir.join("fbc");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("catalog.json");
    std::fs::write(&path, fbc)?;
    Ok(path)
}

async fn polled_catalog(ctx: &TestContext, port: u16) -> anyhow::Result<()> {
    let mut cs = CatalogSource::new(
        "cat",
        CatalogSourceSpec {
            source_type: SourceType::Grpc,
            address: Some(format!("127.0.0.1:{port}")),
            update_strategy: Some(UpdateStrategy {
                registry_poll: Some(RegistryPoll {
                    interval: Some("2s".into()),
                }),
            }),
            priority: None,
            config_map: None,
            image: None,
            grpc_pod_config: None,
            secrets: None,
            display_name: None,
            description: None,
            publisher: None,
            icon: None,
        },
    );
    cs.metadata.namespace = Some(ctx.namespace.clone());
    Api::<CatalogSource>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&PostParams::default(), &cs)
        .await?;
    Ok(())
}

#[tokio::test]
async fn catalog_deprecations_show_on_the_subscription_and_go_with_the_catalog_notice()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "deprecations", |ctx| async move {
        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        let package = (json!({"schema": "olm.package"}), PACKAGE);
        let channel = (json!({"schema": "olm.channel", "name": "stable"}), CHANNEL);
        let bundle = (
            json!({"schema": "olm.bundle", "name": "dep.v1.0.0"}),
            BUNDLE,
        );
        let fbc = write_fbc(&dir, &[package.clone(), channel, bundle])?;
        let port = free_port()?;
        let serve = RegistryProcess::start(&[&fbc], port)?;
        operator_group(&ctx).await?;
        polled_catalog(&ctx, port).await?;
        subscription(&ctx, sub_to(&ctx, "dep", "dep", "cat")).await?;

        // The deprecated bundle installs, and every level's notice shows.
        await_sub(&ctx, "dep", "the deprecated bundle installed", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "dep.v1.0.0"
        })
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(&csvs, "dep.v1.0.0", DEADLINE, "dep.v1.0.0 Succeeded", |c| {
            c.is_some_and(|c| c.phase() == CsvPhase::Succeeded)
        })
        .await?;
        let all = expected(&[
            ("PackageDeprecated", PACKAGE),
            ("ChannelDeprecated", CHANNEL),
            ("BundleDeprecated", BUNDLE),
            ("Deprecated", &format!("{PACKAGE}; {CHANNEL}; {BUNDLE}")),
        ]);
        await_sub(&ctx, "dep", "the four deprecation conditions", |s| {
            deprecations(s) == all
        })
        .await?;

        // The catalog keeps only the package notice: the channel and bundle conditions go.
        drop(serve);
        let fbc = write_fbc(&dir, &[package])?;
        let serve = RegistryProcess::start(&[&fbc], port)?;
        let package_only = expected(&[("PackageDeprecated", PACKAGE), ("Deprecated", PACKAGE)]);
        await_sub(&ctx, "dep", "only the package deprecation", |s| {
            deprecations(s) == package_only
        })
        .await?;

        // No notice left: every deprecation condition goes.
        drop(serve);
        let fbc = write_fbc(&dir, &[])?;
        let _serve = RegistryProcess::start(&[&fbc], port)?;
        let sub = await_sub(&ctx, "dep", "no deprecation condition", |s| {
            deprecations(s).is_empty()
        })
        .await?;
        assert_eq!(
            sub.status.map(|s| s.installed_csv).as_deref(),
            Some("dep.v1.0.0")
        );
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    })
    .await
}
