//! CRD upgrade safety (spec §8 scenarios 28, 31): an upgrade whose CRD drops a stored version fails its plan
//! with "risk of data loss" once the retry window passes; an upgrade that keeps every stored version goes through.

mod catalog_fixture;

use catalog_fixture::*;
use messages::crd::install_plan::InstallPlanPhase;
use olm_tests::{Cluster, await_object, with_namespace};
use serde_json::json;

#[tokio::test]
async fn an_upgrade_that_drops_a_stored_crd_version_fails_with_risk_of_data_loss() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "ipcrd", |ctx| async move {
        let _op = catalog_operator(&ctx, &["--install-plan-retry-timeout", "2s"]).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let mut old = Crd::new("sprockets", &format!("{suffix}.crd.olm-rs.io"), "Sprocket");
        old.versions = vec!["v1alpha1".into()];
        let mut kept = old.clone();
        kept.versions = vec!["v1alpha1".into(), "v1".into()];
        let mut dropped = old.clone();
        dropped.versions = vec!["v1".into()];
        let catalog = Catalog::with(vec![
            Op::new("mu", "1.0.0").owns(&old),
            Op::new("mu", "1.1.0").replaces("mu.v1.0.0").owns(&kept),
            Op::new("mu", "2.0.0").replaces("mu.v1.1.0").owns(&dropped),
        ]);
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &catalog, 0).await?;
        subscription(&ctx, "mu", "mu", "cat", json!({"startingCSV": "mu.v1.0.0"})).await?;

        // 1.0.0 → 1.1.0 keeps v1alpha1 (stored): allowed. 1.1.0 → 2.0.0 drops it: blocked.
        let sub = await_sub(&ctx, "mu", "the plan for 2.0.0 failed", |s| s.current_csv == "mu.v2.0.0" && sub_condition(s, "InstallPlanFailed").is_some()).await?;
        let status = sub.status.expect("status");
        assert_eq!(status.installed_csv, "mu.v1.1.0", "the safe upgrade went through");
        let failed = sub_condition(&status, "InstallPlanFailed").expect("condition");
        assert_eq!(failed.1, "InstallComponentFailed");
        let plan_name = status.install_plan.map(|p| p.name).expect("plan ref");
        let plan = await_object(&plans(&ctx), &plan_name, DEADLINE, "Failed", |ip| ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Failed)).await?;
        let message = plan.status.as_ref().and_then(|s| s.conditions.last()).map(|c| c.message.clone()).unwrap_or_default();
        assert!(message.contains("risk of data loss"), "{message}");
        Ok(())
    })
    .await
}
