//! CRD upgrade safety (spec §8 scenarios 28, 31): when the catalog publishes an upgrade whose CRD drops a
//! stored version, the upgrade's plan fails with "risk of data loss" once the retry window passes.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::install_plan::InstallPlanPhase;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use serde_json::json;

#[tokio::test]
async fn an_upgrade_that_drops_a_stored_crd_version_fails_with_risk_of_data_loss()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "ipcrd", |ctx| async move {
        let _op = catalog_operator(&ctx, &["--install-plan-retry-timeout", "2s"]).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let mut old = Crd::new("sprockets", &format!("{suffix}.crd.olm-rs.io"), "Sprocket");
        old.versions = vec!["v1alpha1".into()];
        let mut dropped = old.clone();
        dropped.versions = vec!["v1".into()];
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(vec![Op::new("mu", "1.0.0").owns(&old)]),
            0,
        )
        .await?;
        subscription(&ctx, sub_to(&ctx, "mu", "mu", "cat")).await?;
        await_sub(&ctx, "mu", "1.0.0 installed", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "mu.v1.0.0"
        })
        .await?;

        // Publish 2.0.0, whose CRD no longer has the stored version v1alpha1.
        let upgraded = Catalog::with(vec![
            Op::new("mu", "1.0.0").owns(&dropped),
            Op::new("mu", "2.0.0").replaces("mu.v1.0.0").owns(&dropped),
        ]);
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        cms.patch(
            "cat",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": upgraded.configmap_data()})),
        )
        .await?;

        let sub = await_sub(&ctx, "mu", "the plan for 2.0.0 failed", |s| {
            s.current_csv == "mu.v2.0.0" && sub_condition(s, "InstallPlanFailed").is_some()
        })
        .await?;
        let status = sub.status.expect("status");
        assert_eq!(status.installed_csv, "mu.v1.0.0");
        assert_eq!(
            sub_condition(&status, "InstallPlanFailed").map(|c| c.1),
            Some("InstallComponentFailed".to_string())
        );
        let plan_name = status.install_plan.map(|p| p.name).expect("plan ref");
        let plan = await_object(&plans(&ctx), &plan_name, DEADLINE, "Failed", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Failed)
        })
        .await?;
        let message = plan
            .status
            .as_ref()
            .and_then(|s| s.conditions.last())
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            message.contains("risk of data loss updating sprockets."),
            "{message}"
        );
        assert!(message.contains("removes version v1alpha1"), "{message}");
        Ok(())
    })
    .await
}
