//! Bundle images pulled from a real OCI registry (Debian's docker-registry on loopback, started by
//! `hack/control-plane.sh up`): real community bundles pushed by `oci::publish` (what `olm-oci push-tree` runs),
//! served by an FBC that references them by digest and carries no inline objects, as real catalogs do.
//! Three packages install to Succeeded; a second install of a bundle is served from the digest cache (the
//! registry's access log shows no new request); and every kind of bad image ends in a clear
//! `BundleUnpackFailed` condition with no InstallPlan and nothing applied (an index without a manifest for the
//! platform catalog-operator runs on among them).

use kube::Api;
use kube::api::{DeleteParams, ListParams};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_csv_succeeded, await_object, eventually, with_namespace};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Three community packages whose every CSV is valid under OLM's published CRD schema (odoo-operator and etcd, used
/// before, lack `resources[].name`, which OLM's schema requires) and declares no minKubeVersion above the control plane.
/// None is installed by another test: their CRDs are cluster-wide, and two tests running at once must not apply
/// different versions of one CRD.
const PACKAGES: &[(&str, &str)] = &[
    ("pcc-operator", "stable"),
    ("sonar-operator", "stable"),
    ("analytics-operator", "alpha"),
];

async fn await_succeeded(ctx: &olm_tests::TestContext, sub: &str) -> anyhow::Result<String> {
    let s = await_sub(ctx, sub, "AtLatestKnown", |s| {
        s.state == SubscriptionState::AtLatestKnown
    })
    .await?;
    let csv_name = s.status.map(|s| s.installed_csv).unwrap_or_default();
    await_csv_succeeded(
        &ctx.client,
        &ctx.namespace,
        &csv_name,
        Duration::from_secs(180),
    )
    .await?;
    Ok(csv_name)
}

#[tokio::test]
async fn three_community_packages_install_from_bundle_images_and_a_reinstall_hits_the_cache()
-> anyhow::Result<()> {
    let Some(root) = community_bundles() else {
        anyhow::bail!("../shared/catalogs/community-operators-prod-bundles is absent");
    };
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "bundleimg", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let packages: Vec<String> = PACKAGES.iter().map(|(p, _)| p.to_string()).collect();
        let published = oci::publish::push_tree(&registry, &root, &packages, &prefix).await?;
        assert!(
            published.bundles.len() >= 8,
            "bundles pushed: {:?}",
            published.bundles
        );
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        std::fs::create_dir_all(&dir)?;
        let fbc = dir.join("catalog.json");
        std::fs::write(&fbc, &published.fbc)?;
        let text = String::from_utf8(published.fbc.clone())?;
        assert!(
            !text.contains("olm.bundle.object"),
            "the catalog must carry no inline objects"
        );

        let port = free_port()?;
        let _serve = RegistryProcess::start(&[&fbc], port)?;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "community", &format!("127.0.0.1:{port}")).await?;
        let started = Instant::now();
        for (package, channel) in PACKAGES {
            subscription(
                &ctx,
                sub_to(&ctx, package, package, "community").channel(channel),
            )
            .await?;
        }
        let mut installed = BTreeMap::new();
        for (package, _) in PACKAGES {
            installed.insert(package.to_string(), await_succeeded(&ctx, package).await?);
        }
        eprintln!(
            "3 Subscriptions → CSVs Succeeded from bundle images in {:?}",
            started.elapsed()
        );

        // Every plan records the bundle images it unpacked, as OLM's status.bundleLookups.
        let plans = plans(&ctx).list(&ListParams::default()).await?;
        let lookups: Vec<(String, String)> = plans
            .items
            .iter()
            .flat_map(|p| p.status.iter().flat_map(|s| s.bundle_lookups.iter()))
            .map(|l| (l.identifier.clone(), l.path.clone()))
            .collect();
        for csv in installed.values() {
            let image = published.bundles.get(csv).cloned().unwrap_or_default();
            assert!(
                lookups.contains(&(csv.clone(), image.clone())),
                "a bundleLookup for {csv} at {image}: {lookups:?}"
            );
        }

        // A second install of the same bundle: no request reaches the registry for it.
        let repo = format!("{}/pcc-operator-bundle", ctx.namespace);
        let before = requests_for(&repo)?;
        assert!(before > 0, "the first install pulled from the registry");
        let again_csv = installed["pcc-operator"].clone();
        subs(&ctx)
            .delete("pcc-operator", &DeleteParams::default())
            .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        csvs.delete(&again_csv, &DeleteParams::default()).await?;
        let gone = &again_csv;
        let csvs_ref = &csvs;
        eventually(DEADLINE, "the CSV deleted", || async move {
            Ok(csvs_ref.get_opt(gone).await?.is_none().then_some(()))
        })
        .await?;
        subscription(
            &ctx,
            sub_to(&ctx, "pcc-again", "pcc-operator", "community").channel("stable"),
        )
        .await?;
        assert_eq!(await_succeeded(&ctx, "pcc-again").await?, again_csv);
        assert_eq!(
            requests_for(&repo)?,
            before,
            "the reinstall was served from the digest cache"
        );
        Ok(())
    })
    .await
}

/// One bad image per case: (package, image reference, expected reason).
async fn push_bad_images(
    registry: &oci::Registry,
    prefix: &str,
    unreachable: &str,
    hanging: &str,
) -> anyhow::Result<Vec<(String, String, &'static str)>> {
    use oci::build::{LAYER_MEDIA_TYPE, tar_gz};
    let annotations = "annotations:\n  operators.operatorframework.io.bundle.package.v1: p-nocsv\n  operators.operatorframework.io.bundle.channels.v1: stable\n";
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\n";
    let mut out = Vec::new();
    let no_csv = tar_gz(&[
        (
            "metadata/annotations.yaml".into(),
            annotations.as_bytes().to_vec(),
        ),
        ("manifests/crd.yaml".into(), crd.as_bytes().to_vec()),
    ])?;
    // One image of one layer: `repo@digest`.
    let push_layer = |name: &'static str, layer: Vec<u8>| async move {
        let r = format!("{prefix}/{name}:v1");
        let d = registry
            .push(
                &r,
                &oci::Auth::Anonymous,
                vec![(LAYER_MEDIA_TYPE.into(), layer)],
                &BTreeMap::new(),
            )
            .await?;
        anyhow::Ok(oci::publish::pinned(&r, &d))
    };
    out.push((
        "p-nocsv".into(),
        push_layer("nocsv", no_csv).await?,
        "NoClusterServiceVersion",
    ));

    let not_bundle = tar_gz(&[("bin/tool".into(), b"#!/bin/sh\n".to_vec())])?;
    out.push((
        "p-notbundle".into(),
        push_layer("notbundle", not_bundle).await?,
        "NotABundle",
    ));

    let r = format!("{prefix}/helmchart:v1");
    let d = registry
        .push_with_config(
            &r,
            &oci::Auth::Anonymous,
            vec![(
                "application/vnd.cncf.helm.chart.content.v1.tar+gzip".into(),
                b"chart".to_vec(),
            )],
            b"{}".to_vec(),
            "application/vnd.cncf.helm.config.v1+json",
        )
        .await?;
    out.push((
        "p-mediatype".into(),
        oci::publish::pinned(&r, &d),
        "WrongMediaType",
    ));

    // An index with no manifest for the platform catalog-operator runs on.
    let (layers, labels) = late_bundle();
    let child = registry
        .push(
            &format!("{prefix}/otherplatform:child"),
            &oci::Auth::Anonymous,
            layers,
            &labels,
        )
        .await?;
    let r = format!("{prefix}/otherplatform:v1");
    let d = registry
        .push_index(
            &r,
            &oci::Auth::Anonymous,
            &[(child, oci::platform::Platform::new("linux", "s390x", None))],
        )
        .await?;
    out.push((
        "p-platform".into(),
        oci::publish::pinned(&r, &d),
        "NoMatchingPlatform",
    ));

    let missing = format!("{prefix}/missing@sha256:{}", "0".repeat(64));
    out.push(("p-missing".into(), missing, "ImageNotFound"));
    out.push((
        "p-unreachable".into(),
        format!("{unreachable}/x/y@sha256:{}", "1".repeat(64)),
        "RegistryUnreachable",
    ));
    out.push((
        "p-timeout".into(),
        format!("{hanging}/x/y@sha256:{}", "2".repeat(64)),
        "DeadlineExceeded",
    ));
    Ok(out)
}

/// A minimal valid bundle of package `p-late` (layers, labels), pushed only once its absence has been seen.
fn late_bundle() -> ImageContent {
    let annotations = "annotations:\n  operators.operatorframework.io.bundle.package.v1: p-late\n  operators.operatorframework.io.bundle.channels.v1: stable\n";
    let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "p-late.v1.0.0"},
        "spec": {"version": "1.0.0", "displayName": "p-late",
                 "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true}],
                 "install": {"strategy": "deployment", "spec": {"deployments": []}}}});
    let layer = oci::build::tar_gz(&[
        (
            "metadata/annotations.yaml".into(),
            annotations.as_bytes().to_vec(),
        ),
        ("manifests/csv.json".into(), csv.to_string().into_bytes()),
    ])
    .unwrap_or_default();
    (
        vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
        BTreeMap::new(),
    )
}

#[tokio::test]
async fn bad_bundle_images_end_in_clear_conditions_and_apply_nothing() -> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "badimg", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        // Nothing listens on this port: connections are refused.
        let unreachable = format!("127.0.0.1:{}", free_port()?);
        // This one accepts connections (kernel backlog) and never answers: only the unpack timeout ends it.
        let hanging = std::net::TcpListener::bind("127.0.0.1:0")?;
        let hanging_addr = hanging.local_addr()?.to_string();
        let mut cases = push_bad_images(&registry, &prefix, &unreachable, &hanging_addr).await?;
        let late = late_bundle();
        let late_digest = oci::client::digest_of(late.0.clone(), &late.1);
        cases.push(("p-late".into(), format!("{prefix}/late@{late_digest}"), "ImageNotFound"));
        let mut docs = Vec::new();
        for (package, image, _) in &cases {
            let csv = format!("{package}.v1.0.0");
            docs.extend(fbc_package(package, &[(&csv, "1.0.0", None, image)]));
        }
        let serve = RegistryProcess::serve_fbc(&ctx, &fbc_text(&docs))?;
        let port = serve.port;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let mut og = Og::named("og").targets(&[&ctx.namespace]).build();
        og.metadata.annotations = Some(
            [("operatorframework.io/bundle-unpack-timeout".to_string(), "3s".to_string())].into(),
        );
        create(&ctx, og).await?;
        address_catalog(&ctx, "bad", &format!("127.0.0.1:{port}")).await?;
        for (package, _, _) in &cases {
            subscription(&ctx, sub_to(&ctx, package, package, "bad")).await?;
        }
        for (package, image, reason) in &cases {
            let sub = await_sub(&ctx, package, &format!("BundleUnpackFailed {reason}"), |s| {
                sub_condition(s, "BundleUnpackFailed").is_some_and(|(st, r, m)| {
                    st == "True" && r == "BundleUnpackFailed" && m.contains(reason)
                })
            })
            .await?;
            let (_, _, message) = sub
                .status
                .as_ref()
                .and_then(|s| sub_condition(s, "BundleUnpackFailed"))
                .unwrap_or_default();
            assert!(message.starts_with("Bundle unpacking failed - "), "{message}");
            assert!(message.contains(image.split('@').next().unwrap_or_default()), "{message} names the image");
            assert!(message.contains("Retrying in"), "{message}");
            let st = sub.status.unwrap_or_default();
            assert!(st.install_plan_ref.is_none() && st.current_csv.is_empty(), "{package}: nothing planned");
            eprintln!("{package}: {message}");
        }
        // Nothing was applied: no plan, no CSV, no CRD from the bundle without a CSV.
        assert!(plans(&ctx).list(&ListParams::default()).await?.items.is_empty());
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(csvs.list(&ListParams::default()).await?.items.is_empty());
        let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(ctx.client.clone());
        assert!(crds.get_opt("things.example.com").await?.is_none());
        // Failures are retried with backoff: the image that was missing is pushed now (the catalog named its
        // digest in advance), and the next attempt installs it.
        let late_ref = format!("{prefix}/late:v1");
        registry
            .push(&late_ref, &oci::Auth::Anonymous, late.0.clone(), &late.1)
            .await?;
        let sub = await_sub(&ctx, "p-late", "planned after the late push", |s| {
            s.install_plan_ref.is_some() && sub_condition(s, "BundleUnpackFailed").is_none()
        })
        .await?;
        assert_eq!(sub.status.map(|s| s.current_csv).unwrap_or_default(), "p-late.v1.0.0");
        await_object(&csvs, "p-late.v1.0.0", DEADLINE, "created by the plan", |c| c.is_some()).await?;
        drop(hanging);
        Ok(())
    })
    .await
}
