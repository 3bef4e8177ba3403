//! The objects an InstallPlan's steps refer to are read again after a restart: a catalog-operator with an empty
//! digest cache pulls the bundle image by digest and finds, for every step, the very object the plan was built
//! from; a second read is served from its cache. Local registry only (`hack/registry.sh up`), no API server.

use catalog_operator::bundle_ref::{self, BundleObjectRef};
use catalog_operator::unpacker::{Unpacker, pull_bundle};
use oci::Auth;
use olm_tests::oci_fixture::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn a_restarted_reader_finds_every_referenced_object() -> anyhow::Result<()> {
    let Some(root) = community_bundles() else {
        anyhow::bail!("../shared/catalogs/community-operators-prod-bundles is absent");
    };
    let registry = oci::Registry::default();
    let reference = format!(
        "{}/bundle-refs-{}/sonar:v3",
        registry_addr(),
        std::process::id()
    );
    let digest =
        oci::publish::push_bundle(&registry, &root.join("sonar-operator/3.3.0"), &reference)
            .await?;
    let image = oci::publish::pinned(&reference, &digest);

    // Plan time: the bundle as resolution saw it, and its steps.
    let unpacked = pull_bundle(&registry, &image, &Auth::Anonymous).await?;
    let (chosen, filled) = resolved(&unpacked, &image, Some("sonar-operator.v3.2.0"));
    let name = chosen.name.clone();
    let steps = catalog_operator::steps::bundle_steps(
        &filled.bundle,
        &chosen,
        &filled.source,
        "ns",
        &BTreeMap::new(),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let refs: Vec<(usize, BundleObjectRef)> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| BundleObjectRef::parse(&s.resource.manifest).map(|r| (i, r)))
        .collect();
    assert_eq!(
        refs.len(),
        unpacked.objects.len(),
        "every bundle object is a reference"
    );

    // After a restart: an empty cache pulls the image again and resolves each reference to the planned object.
    let fresh = Arc::new(Unpacker::new(oci::Registry::default(), 64 << 20));
    let again = fresh
        .get(&image, &Auth::Anonymous, Duration::from_secs(60))
        .await?;
    let pulled = fresh.registry_requests();
    assert!(pulled > 0, "the fresh reader pulled the image");
    for (i, r) in &refs {
        let step = &steps[*i];
        let obj = bundle_ref::resolve(
            r,
            &name,
            &again.object_strings(),
            &again.files,
            &step.resource.kind,
            &step.resource.name,
            "ns",
        )
        .map_err(anyhow::Error::msg)?;
        assert_eq!(obj["metadata"]["name"], step.resource.name.as_str());
        if step.resource.kind == "ClusterServiceVersion" {
            let planned = catalog_operator::steps::csv_manifest(
                &filled.bundle,
                &chosen,
                &filled.source,
                "ns",
                &BTreeMap::new(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            assert_eq!(obj, planned, "the CSV as the plan made it");
        }
    }
    fresh
        .get(&image, &Auth::Anonymous, Duration::from_secs(60))
        .await?;
    assert_eq!(
        fresh.registry_requests(),
        pulled,
        "a second read comes from the cache"
    );
    Ok(())
}
