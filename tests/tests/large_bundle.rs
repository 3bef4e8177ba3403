//! A bundle image of 3 MiB of manifests, one of them a 1 MiB CRD, installs through olm-rs: the InstallPlan's steps
//! refer to the bundle's objects by image digest, file and position instead of carrying them
//! (`catalog_operator::bundle_ref`), so the plan stays far below what etcd stores per object (about 1.5 MiB),
//! and every object still reaches the cluster. Prints the plan's stored size and the time to install.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_object, with_namespace};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Instant;

const CRD_BYTES: usize = 1 << 20;
const CONFIGMAPS: usize = 4;
const CONFIGMAP_BYTES: usize = 540 << 10;

/// A CRD of about `CRD_BYTES`: many described properties, as generated CRDs of large APIs are.
fn big_crd(group: &str) -> Value {
    let description =
        "A setting of the large operator, described at length as generated API docs are. "
            .repeat(2);
    let mut properties = serde_json::Map::new();
    let mut i = 0;
    let mut size = 0;
    while size < CRD_BYTES + CRD_BYTES / 20 {
        let name = format!("setting{i:05}");
        size += name.len() + description.len() + 40;
        properties.insert(name, json!({"type": "string", "description": description}));
        i += 1;
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("larges.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "larges", "singular": "large", "kind": "Large", "listKind": "LargeList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": properties}}}}}]}})
}

fn csv(group: &str) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "large.v1.0.0", "annotations": {"createdAt": null}},
        "spec": {"version": "1.0.0", "displayName": "large",
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true}],
            "customresourcedefinitions": {"owned": [{"name": format!("larges.{group}"), "version": "v1", "kind": "Large"}]},
            "install": {"strategy": "deployment", "spec": {"deployments": []}}}})
}

#[tokio::test]
async fn a_three_mib_bundle_installs_and_its_plan_refers_to_the_objects() -> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "largebundle", |ctx| async move {
        let group = format!("{}.large.example.com", ctx.namespace);
        let mut files: Vec<(String, Vec<u8>)> = vec![
            (
                "metadata/annotations.yaml".into(),
                b"annotations:\n  operators.operatorframework.io.bundle.package.v1: large\n  operators.operatorframework.io.bundle.channels.v1: stable\n".to_vec(),
            ),
            ("manifests/large.clusterserviceversion.json".into(), csv(&group).to_string().into_bytes()),
            ("manifests/larges.crd.json".into(), big_crd(&group).to_string().into_bytes()),
        ];
        for i in 0..CONFIGMAPS {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("large-data-{i}")},
                "data": {"blob": "x".repeat(CONFIGMAP_BYTES)}});
            files.push((format!("manifests/data-{i}.configmap.json"), cm.to_string().into_bytes()));
        }
        let manifest_bytes: usize = files
            .iter()
            .filter(|(p, _)| p.starts_with("manifests/"))
            .map(|(_, b)| b.len())
            .sum();
        assert!(manifest_bytes >= 3 << 20, "{manifest_bytes} bytes of manifests");
        let crd_bytes = files[2].1.len();
        assert!(crd_bytes >= CRD_BYTES, "CRD of {crd_bytes} bytes");

        let registry = oci::Registry::default();
        let reference = format!("{}/{}/large-bundle:v1", registry_addr(), ctx.namespace);
        let digest = registry
            .push(
                &reference,
                &oci::Auth::Anonymous,
                vec![(oci::build::LAYER_MEDIA_TYPE.into(), oci::build::tar_gz(&files)?)],
                &BTreeMap::new(),
            )
            .await?;
        let image = oci::publish::pinned(&reference, &digest);
        let serve = RegistryProcess::serve_fbc(
            &ctx,
            &fbc_text(&fbc_package("large", &[("large.v1.0.0", "1.0.0", None, &image)])),
        )?;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "large", &format!("127.0.0.1:{}", serve.port)).await?;
        let started = Instant::now();
        subscription(&ctx, sub_to(&ctx, "large", "large", "large")).await?;
        let sub = await_sub(&ctx, "large", "AtLatestKnown", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(&csvs, "large.v1.0.0", DEADLINE, "Succeeded", |c| {
            c.is_some_and(|c| c.phase().as_str() == "Succeeded")
        })
        .await?;
        let installed = started.elapsed();

        // Every object reached the cluster whole.
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let crd = crds.get(&format!("larges.{group}")).await?;
        let stored_crd = serde_json::to_vec(&crd)?.len();
        assert!(stored_crd >= CRD_BYTES, "the CRD as stored: {stored_crd} bytes");
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        for i in 0..CONFIGMAPS {
            let cm = cms.get(&format!("large-data-{i}")).await?;
            let blob = cm.data.unwrap_or_default().remove("blob").unwrap_or_default();
            assert_eq!(blob.len(), CONFIGMAP_BYTES, "large-data-{i}");
        }

        // The plan refers to the objects: small, readable, each reference naming the image by digest.
        let plan_name = sub
            .status
            .and_then(|s| s.install_plan_ref)
            .and_then(|r| r.name)
            .unwrap_or_default();
        let plans: Api<InstallPlan> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let plan = plans.get(&plan_name).await?;
        let plan_bytes = serde_json::to_vec(&plan)?.len();
        let steps = plan.status.map(|s| s.plan).unwrap_or_default();
        let referring = steps
            .iter()
            .filter(|s| s.resource.manifest.contains(&format!("\"bundleImage\":\"{image}\"")))
            .count();
        assert_eq!(referring, 2 + CONFIGMAPS, "CSV, CRD and ConfigMaps refer to the image");
        assert!(plan_bytes < 64 << 10, "the InstallPlan is {plan_bytes} bytes");
        println!(
            "large bundle: {manifest_bytes} bytes of manifests ({crd_bytes}-byte CRD) installed in {:.2} s; InstallPlan stored as {plan_bytes} bytes with {} steps",
            installed.as_secs_f64(),
            steps.len()
        );
        Ok(())
    })
    .await
}
