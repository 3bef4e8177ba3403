//! Multi-platform image indexes in the local registry (`hack/control-plane.sh up` or `hack/registry.sh up`; no
//! API server): a bundle image index resolves to the platform catalog-operator runs on, or to the one a
//! client is given, and an index without that platform is refused naming the platforms it has. The pull is
//! catalog-operator's own (`catalog_operator::unpacker::pull_bundle`).

use catalog_operator::unpacker::pull_bundle;
use oci::Auth;
use oci::platform::Platform;
use olm_tests::oci_fixture::*;
use std::collections::BTreeMap;

/// Pushes a bundle image whose CSV is named `csv` as `reference`; returns its manifest digest.
async fn push_bundle(
    registry: &oci::Registry,
    reference: &str,
    csv: &str,
) -> anyhow::Result<String> {
    let annotations = "annotations:\n  operators.operatorframework.io.bundle.package.v1: multi\n  \
                       operators.operatorframework.io.bundle.channels.v1: stable\n";
    let manifest = format!(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {csv}\nspec: {{}}\n"
    );
    let layer = oci::build::tar_gz(&[
        (
            "metadata/annotations.yaml".into(),
            annotations.as_bytes().to_vec(),
        ),
        ("manifests/csv.yaml".into(), manifest.into_bytes()),
    ])?;
    Ok(registry
        .push(
            reference,
            &Auth::Anonymous,
            vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
            &BTreeMap::new(),
        )
        .await?)
}

#[tokio::test]
async fn an_index_resolves_to_the_running_platform_or_is_refused_naming_what_it_has()
-> anyhow::Result<()> {
    let registry = oci::Registry::default();
    let repo = format!(
        "{}/platforms-{}/bundle",
        registry_addr(),
        std::process::id()
    );
    let here = Platform::current();
    let elsewhere = Platform::new("linux", "s390x", None);
    assert_ne!(
        here, elsewhere,
        "this test needs a platform other than s390x"
    );
    let mine = push_bundle(&registry, &format!("{repo}:here"), "multi.here").await?;
    let theirs = push_bundle(&registry, &format!("{repo}:elsewhere"), "multi.elsewhere").await?;

    // The other platform first: a client that took the first (or only amd64) entry would read the wrong CSV.
    let both = registry
        .push_index(
            &format!("{repo}:both"),
            &Auth::Anonymous,
            &[(theirs.clone(), elsewhere.clone()), (mine, here.clone())],
        )
        .await?;
    let image = oci::publish::pinned(&format!("{repo}:both"), &both);
    let pulled = pull_bundle(&registry, &image, &Auth::Anonymous).await?;
    assert_eq!(
        pulled.csv["metadata"]["name"], "multi.here",
        "resolved for {here}"
    );
    let s390x = oci::Registry::default().with_platform(elsewhere.clone());
    let pulled = pull_bundle(&s390x, &image, &Auth::Anonymous).await?;
    assert_eq!(pulled.csv["metadata"]["name"], "multi.elsewhere");

    // An index with no entry for this platform: refused, naming what it has; never the other platform's content.
    let only = registry
        .push_index(
            &format!("{repo}:only-elsewhere"),
            &Auth::Anonymous,
            &[(theirs, elsewhere)],
        )
        .await?;
    let image = oci::publish::pinned(&format!("{repo}:only-elsewhere"), &only);
    let e = pull_bundle(&registry, &image, &Auth::Anonymous)
        .await
        .expect_err("no entry for this platform");
    assert_eq!(e.reason(), "NoMatchingPlatform");
    let message = e.to_string();
    assert!(
        message.contains(&format!("no manifest for {here}"))
            && message.contains("it has: linux/s390x"),
        "{message}"
    );
    Ok(())
}
