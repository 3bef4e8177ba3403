//! A catalog image laid out as opm builds it, served by olm-rs. `opm generate dockerfile` (built from its Go
//! module) writes the Dockerfile for an FBC folder; no container engine runs here, so the test carries out what
//! that Dockerfile puts in the image: its `ADD <dir> /configs`, the serve cache its `RUN opm serve … --cache-only`
//! makes (run with the same opm), and its `LABEL`s. Only the base image's binaries are missing, which olm-rs does
//! not use. A CatalogSource naming the image reads READY, and a Subscription installs from it.

use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::with_namespace;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn opm(args: &[&str], dir: &Path) -> anyhow::Result<String> {
    let bin = olm_tests::peer_bin_dir("opm")?.join("opm");
    let out = Command::new(bin).args(args).current_dir(dir).output()?;
    anyhow::ensure!(
        out.status.success(),
        "opm {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// The `ADD`/`COPY` sources into `/configs` and the `LABEL`s of opm's Dockerfile.
fn dockerfile_facts(text: &str) -> (Vec<String>, BTreeMap<String, String>) {
    let mut adds = Vec::new();
    let mut labels = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ADD", src, "/configs"] => adds.push((*src).to_string()),
            ["LABEL", rest @ ..] => {
                for kv in rest {
                    if let Some((k, v)) = kv.split_once('=') {
                        labels.insert(k.to_string(), v.trim_matches('"').to_string());
                    }
                }
            }
            _ => {}
        }
    }
    (adds, labels)
}

#[tokio::test]
async fn olm_rs_serves_a_catalog_image_laid_out_by_opm_generate_dockerfile() -> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "opmbuilt", |ctx| async move {
        let SampleEtcd {
            registry,
            prefix,
            published,
        } = SampleEtcd::push(&ctx.namespace).await?;

        // The FBC folder and opm's Dockerfile for it.
        let work = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        std::fs::create_dir_all(work.join("catalog/etcd"))?;
        std::fs::write(work.join("catalog/etcd/catalog.json"), &published.fbc)?;
        opm(&["generate", "dockerfile", "catalog"], &work)?;
        let dockerfile = std::fs::read_to_string(work.join("catalog.Dockerfile"))?;
        let (adds, labels) = dockerfile_facts(&dockerfile);
        assert_eq!(adds, ["catalog"], "{dockerfile}");
        assert_eq!(
            labels
                .get("operators.operatorframework.io.index.configs.v1")
                .map(String::as_str),
            Some("/configs"),
            "{dockerfile}"
        );
        // What its RUN step makes: opm's serve cache, beside the configs.
        opm(
            &["serve", "catalog", "--cache-dir", "cache", "--cache-only"],
            &work,
        )?;
        let mut files = oci::build::files_from_dir(&work.join("catalog"), "configs")?;
        files.extend(oci::build::files_from_dir(
            &work.join("cache"),
            "tmp/cache",
        )?);
        assert!(
            files.iter().any(|(p, _)| p.starts_with("tmp/cache/")),
            "opm wrote its cache"
        );
        let reference = format!("{prefix}/opm-built-catalog:v1");
        let digest = registry
            .push(
                &reference,
                &oci::Auth::Anonymous,
                vec![(
                    oci::build::LAYER_MEDIA_TYPE.into(),
                    oci::build::tar_gz(&files)?,
                )],
                &labels,
            )
            .await?;

        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        let image = oci::publish::pinned(&reference, &digest);
        create(&ctx, Catsrc::named("opm-built").image(&image).build()).await?;
        await_catalog_ready(&ctx, "opm-built").await?;
        subscribe_to_sample_etcd(&ctx, "opm-built").await?;
        await_sub(&ctx, "etcd", "installed from opm's layout", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "etcdoperator.v0.9.4"
        })
        .await?;
        std::fs::remove_dir_all(&work).ok();
        Ok(())
    })
    .await
}
