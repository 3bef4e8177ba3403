//! End to end with a real package: the `registry` binary serves a bundle-directory package from
//! `../shared/catalogs` (odoo-operator: no webhooks, no minKubeVersion above our 1.20 control plane) over gRPC, both operators run, and a Subscription ends with the CSV Succeeded and its
//! Deployment Available. Skipped (with a note) when the shared catalogs are absent.

mod catalog_fixture;

use catalog_fixture::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::SubscriptionState;
use olm_tests::{Cluster, OperatorProcess, await_object, with_namespace};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn shared_catalogs() -> Option<PathBuf> {
    let dir = std::env::var_os("OLM_RS_SHARED")
        .map(|d| PathBuf::from(d).join("catalogs"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/catalogs"));
    dir.is_dir().then_some(dir)
}

#[tokio::test]
async fn a_real_bundle_package_installs_to_succeeded_with_its_deployment_available()
-> anyhow::Result<()> {
    let Some(catalogs) = shared_catalogs() else {
        eprintln!("skipped: ../shared/catalogs is absent");
        return Ok(());
    };
    let package = catalogs.join("community-operators-prod-bundles/operators/odoo-operator");
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "realpkg", |ctx| async move {
        let port = free_port()?;
        let _registry = RegistryProcess::start(&[&package], port)?;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = OperatorProcess::start(
            ctx.cluster,
            "olm-operator",
            &["--watched-namespaces", &ctx.namespace],
        )
        .await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "community", &format!("127.0.0.1:{port}")).await?;
        let started = Instant::now();
        subscription(
            &ctx,
            "odoo",
            "odoo-operator",
            "community",
            json!({"channel": "alpha"}),
        )
        .await?;
        let sub = await_sub(&ctx, "odoo", "AtLatestKnown", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let csv_name = sub.status.map(|s| s.installed_csv).unwrap_or_default();
        assert_eq!(csv_name, "odoo-operator.v0.0.2", "the head of the channel");
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let csv = await_object(
            &csvs,
            &csv_name,
            Duration::from_secs(180),
            "Succeeded",
            |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded"),
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
