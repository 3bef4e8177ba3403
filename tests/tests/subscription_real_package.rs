//! End to end with real packages: the `registry` binary serves a bundle-directory package from
//! `../shared/catalogs` over gRPC and both operators run. apicurito (no webhooks, no minKubeVersion above the
//! control plane, every CSV valid under OLM's published CRD schema) ends with its channel head Succeeded and its
//! Deployment Available. odoo-operator's v0.0.2 lacks `resources[].name`, which OLM's schema requires: its plan
//! fails with the API server's reason, as it would on a cluster running OLM v0. The shared catalogs are the tests'
//! input: they fail when it is absent.

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_csv_succeeded, await_object, shared_catalogs, with_namespace};
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_real_bundle_package_installs_to_succeeded_with_its_deployment_available()
-> anyhow::Result<()> {
    let catalogs = shared_catalogs()?;
    let package = catalogs.join("community-operators-prod-bundles/operators/apicurito");
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "realpkg", |ctx| async move {
        let port = free_port()?;
        let _registry = RegistryProcess::start(&[&package], port)?;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "community", &format!("127.0.0.1:{port}")).await?;
        let started = Instant::now();
        subscription(
            &ctx,
            sub_to(&ctx, "apicurito", "apicurito", "community").channel("latest"),
        )
        .await?;
        let sub = await_sub(&ctx, "apicurito", "AtLatestKnown", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let csv_name = sub.status.map(|s| s.installed_csv).unwrap_or_default();
        assert_eq!(csv_name, "apicurito.v1.0.3", "the head of the channel");
        let csv = await_csv_succeeded(
            &ctx.client,
            &ctx.namespace,
            &csv_name,
            Duration::from_secs(180),
        )
        .await?;
        eprintln!(
            "Subscription created → CSV Succeeded in {:?}",
            started.elapsed()
        );
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let names: Vec<String> = csv
            .spec
            .install
            .spec
            .iter()
            .flat_map(|s| s.deployments.iter().map(|d| d.name.clone()))
            .collect();
        assert!(!names.is_empty());
        for name in names {
            await_object(&deployments, &name, DEADLINE, "Available", |d| {
                d.and_then(|d| d.status.as_ref())
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| {
                        c.iter()
                            .any(|c| c.type_ == "Available" && c.status == "True")
                    })
            })
            .await?;
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_csv_olms_schema_rejects_fails_its_plan_with_the_apiservers_reason() -> anyhow::Result<()>
{
    let catalogs = shared_catalogs()?;
    let package = catalogs.join("community-operators-prod-bundles/operators/odoo-operator");
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "schema-reject", |ctx| async move {
        let port = free_port()?;
        let _registry = RegistryProcess::start(&[&package], port)?;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "community", &format!("127.0.0.1:{port}")).await?;
        subscription(
            &ctx,
            sub_to(&ctx, "odoo", "odoo-operator", "community").channel("alpha"),
        )
        .await?;
        let sub = await_sub(&ctx, "odoo", "InstallPlanFailed", |s| {
            s.conditions
                .iter()
                .any(|c| c.type_.to_string() == "InstallPlanFailed" && c.status == "True")
        })
        .await?;
        let failed = sub
            .status
            .and_then(|s| {
                s.conditions
                    .into_iter()
                    .find(|c| c.type_.to_string() == "InstallPlanFailed")
            })
            .map(|c| c.message)
            .unwrap_or_default();
        // The API server's field path, with list indices from Kubernetes 1.3x on
        // (`spec.customresourcedefinitions.owned[0].resources[0].name: Required value`).
        assert!(
            failed.contains(
                "spec.customresourcedefinitions.owned[0].resources[0].name: Required value"
            ),
            "{failed}"
        );
        Ok(())
    })
    .await
}
