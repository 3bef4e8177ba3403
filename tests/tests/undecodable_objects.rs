//! A watch never stalls on one bad object (issue 12): a CSV whose stored JSON does not decode as our type (the
//! API server accepts `maxSurge: 9999999999` in its Deployment spec, an int-or-string field with no range, while
//! k8s-openapi's `IntOrString` holds an `i32`) sits beside a good CSV
//! when olm-operator starts. Before, the initial list failed as a whole and the watcher retried it for ever: no
//! CSV of the cluster reconciled. Now the bad one is skipped and reported (a warning naming it, the
//! `olm_rs_undecodable_objects_total{kind}` counter) and the good one installs.

mod catalog_fixture;

use catalog_fixture::*;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use olm_tests::{Cluster, await_object, eventually, with_namespace};
use serde_json::json;

#[tokio::test]
async fn a_csv_that_does_not_decode_is_skipped_and_the_others_reconcile() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "undecodable", |ctx| async move {
        operator_group(&ctx).await?;
        let resource = ApiResource::erase::<ClusterServiceVersion>(&());
        let raw: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &ctx.namespace, &resource);
        let bad: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "bad.v1.0.0"},
            "spec": {"displayName": "bad", "version": "1.0.0",
                "installModes": [{"type": "OwnNamespace", "supported": true}],
                "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "bad", "spec": {
                    "selector": {"matchLabels": {"app": "bad"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 9_999_999_999_u64}},
                    "template": {"metadata": {"labels": {"app": "bad"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}]}}}
        }))?;
        raw.create(&PostParams::default(), &bad).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(
            csvs.get("bad.v1.0.0").await.is_err(),
            "the stored CSV must not decode as our type"
        );
        create::<ClusterServiceVersion>(&ctx, Op::new("good", "1.0.0").csv()).await?;

        let olm = olm_operator(&ctx).await?;
        await_object(&csvs, "good.v1.0.0", DEADLINE, "Succeeded beside a bad CSV", |c| {
            c.is_some_and(|c| c.phase() == CsvPhase::Succeeded)
        })
        .await?;
        let olm = &olm;
        eventually(DEADLINE, "the bad CSV counted and named", || async move {
            let (_, body) = olm.get("/metrics").await?;
            let metrics = String::from_utf8_lossy(&body);
            let counted = metrics.lines().any(|l| {
                l.starts_with("olm_rs_undecodable_objects_total{kind=\"ClusterServiceVersion\"}")
                    && l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v >= 1.0)
            });
            let named = olm.logs().contains("bad.v1.0.0");
            Ok((counted && named).then_some(()))
        })
        .await?;
        Ok(())
    })
    .await
}
