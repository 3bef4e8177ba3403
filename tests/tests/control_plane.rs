//! The local control plane itself: our CRDs installed, kubectl habits (short names, category, printer columns),
//! empty strings accepted in custom resources (kubernetes#99804 must not come back), and the node simulator making a real
//! Deployment Available through the real deployment controller.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::csv::InstallModeType;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Approval;
use messages::testing::{Csv, Ip};
use olm_tests::{Cluster, DEFAULT_DEADLINE, await_object, with_namespace};
use serde_json::json;

fn csv(
    name: &str,
    display: &str,
    version: &str,
    replaces: &str,
) -> anyhow::Result<ClusterServiceVersion> {
    let mut csv = Csv::named(name)
        .version(version)
        .replaces(replaces)
        .install_modes(&[InstallModeType::OwnNamespace])
        .build();
    csv.spec.display_name = display.to_string();
    Ok(csv)
}

#[tokio::test]
async fn kubectl_lists_olm_kinds_by_short_name_category_and_printer_columns() -> anyhow::Result<()>
{
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "kubectl", |ctx| async move {
        let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        api.create(
            &PostParams::default(),
            &csv(
                "etcdoperator.v0.9.4",
                "etcd",
                "0.9.4",
                "etcdoperator.v0.9.2",
            )?,
        )
        .await?;
        let ns = ctx.namespace.as_str();
        let all = ctx
            .cluster
            .kubectl(&["get", "csv,sub,ip,og,catsrc", "-n", ns])?;
        assert!(all.contains("etcdoperator.v0.9.4"), "{all}");
        let table = ctx.cluster.kubectl(&["get", "csvs", "-n", ns])?;
        let header = table.lines().next().unwrap_or_default();
        for column in ["NAME", "DISPLAY", "VERSION", "REPLACES", "PHASE"] {
            assert!(
                header.contains(column),
                "column {column} missing from: {header}"
            );
        }
        let row = table.lines().nth(1).unwrap_or_default();
        for value in [
            "etcdoperator.v0.9.4",
            "etcd",
            "0.9.4",
            "etcdoperator.v0.9.2",
        ] {
            assert!(row.contains(value), "{value} missing from: {row}");
        }
        let by_category = ctx
            .cluster
            .kubectl(&["get", "olm", "-n", ns, "-o", "name"])?;
        assert!(
            by_category.contains("clusterserviceversion.operators.coreos.com/etcdoperator.v0.9.4"),
            "{by_category}"
        );
        for short in ["sub", "subs", "ip", "og", "catsrc", "csv"] {
            ctx.cluster.kubectl(&["get", short, "-n", ns])?;
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_empty_string_in_a_custom_resource_is_kept() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "emptystr", |ctx| async move {
        let api: Api<InstallPlan> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let ip = Ip::named("install-x")
            .csvs(&["a.v1"])
            .approval(Approval::Automatic, true)
            .build();
        api.create(&PostParams::default(), &ip).await?;
        let status = json!({"status": {"phase": "Installing", "catalogSources": [], "plan": [{
            "resolving": "a.v1", "status": "Unknown",
            "resource": {"sourceName": "cs", "sourceNamespace": ctx.namespace, "group": "", "version": "v1", "kind": "ServiceAccount", "name": "a", "manifest": "{}"}
        }]}});
        api.patch_status("install-x", &PatchParams::default(), &Patch::Merge(status)).await?;
        let read = api.get("install-x").await?;
        let value = serde_json::to_value(&read)?;
        assert_eq!(value.pointer("/status/plan/0/resource/group"), Some(&json!("")), "{value}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_node_simulator_makes_a_real_deployment_available() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "nodesim", |ctx| async move {
        let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let mut spec = messages::testing::app_deployment("web", "web", "example/web:1");
        spec.replicas = Some(2);
        let mut deployment = Deployment {
            spec: Some(spec),
            ..Deployment::default()
        };
        deployment.metadata.name = Some("web".into());
        api.create(&PostParams::default(), &deployment).await?;
        let available = await_object(
            &api,
            "web",
            DEFAULT_DEADLINE,
            "Deployment Available with 2 ready replicas",
            |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()).is_some_and(|s| {
                    s.ready_replicas == Some(2)
                        && s.conditions
                            .iter()
                            .flatten()
                            .any(|c| c.type_ == "Available" && c.status == "True")
                })
            },
        )
        .await?;
        assert_eq!(available.status.and_then(|s| s.available_replicas), Some(2));
        Ok(())
    })
    .await
}
