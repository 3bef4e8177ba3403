//! Scenario 36 (OLM `fail_forward_e2e_test.go`, `TestResolver` "FailForward{Enabled,Disabled}/2EntryReplacementChain"):
//! an upgrade that fails, then a fix published in the catalog.
//!
//! `ff.v1.0.0` installs and Succeeds; the catalog then publishes `ff.v1.1.0` (replaces v1.0.0) whose Deployment
//! the API server rejects (`progressDeadlineSeconds` not greater than `minReadySeconds`; OLM's e2e uses an
//! invalid deployment name, `v0.2.0-invalid-deployment`), so the CSV goes `Failed`
//! (`InstallComponentFailedNoRetry`) and v1.0.0 stays `Replacing`; then the catalog publishes the fix
//! `ff.v1.2.0` (replaces v1.1.0).
//! - With the OperatorGroup's `upgradeStrategy: TechPreviewUnsafeFailForward` the Subscription moves to
//!   v1.2.0, which Succeeds, and the failed chain is cleaned up.
//! - With `Default` the Subscription stays on the failed v1.1.0: resolution reports the candidate v1.2.0
//!   rejected because v1.0.0 still holds the package (OLM's NotSatisfiable), and v1.2.0 is never installed.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, CsvReason};
use messages::crd::operator_group::{OperatorGroup, OperatorGroupSpec, UpgradeStrategyName};
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::csv_fixture::csv_phases;
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

/// Time for the failing CSV to fail or for the fix to install (each takes seconds).
const STEP: Duration = Duration::from_secs(120);

fn v1() -> Op {
    Op::new("ff", "1.0.0").versioned_deployment()
}

fn v1_1_failing() -> Op {
    Op::new("ff", "1.1.0")
        .replaces("ff.v1.0.0")
        .versioned_deployment()
        .min_ready_seconds(3600)
        .progress_deadline_seconds(1)
}

fn v1_2_fixed() -> Op {
    Op::new("ff", "1.2.0")
        .replaces("ff.v1.1.0")
        .versioned_deployment()
}

async fn group(ctx: &TestContext, strategy: UpgradeStrategyName) -> anyhow::Result<()> {
    let mut og = OperatorGroup::new(
        "og",
        OperatorGroupSpec {
            target_namespaces: Some(vec![ctx.namespace.clone()]),
            upgrade_strategy: Some(strategy),
            ..Default::default()
        },
    );
    og.metadata.namespace = Some(ctx.namespace.clone());
    Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&PostParams::default(), &og)
        .await?;
    Ok(())
}

/// Replace the ConfigMap catalog's content (its CatalogSource re-reads it on the ConfigMap's change).
async fn publish(ctx: &TestContext, ops: Vec<Op>) -> anyhow::Result<()> {
    let data: BTreeMap<String, String> = Catalog::with(ops).configmap_data();
    Api::<ConfigMap>::namespaced(ctx.client.clone(), &ctx.namespace)
        .patch(
            "cat",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": data })),
        )
        .await?;
    Ok(())
}

async fn csv_phase(
    ctx: &TestContext,
    name: &str,
    phase: CsvPhase,
) -> anyhow::Result<ClusterServiceVersion> {
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_object(&csvs, name, STEP, &format!("{name} {phase}"), |c| {
        c.is_some_and(|c| c.phase() == phase)
    })
    .await
}

/// Up to the failed upgrade: v1.0.0 installed, v1.1.0 published and Failed, v1.0.0 Replacing.
async fn install_then_fail(ctx: &TestContext) -> anyhow::Result<()> {
    configmap_catalog(ctx, "cat", &Catalog::with(vec![v1()]), 0).await?;
    subscription(ctx, sub_to(ctx, "ff", "ff", "cat")).await?;
    csv_phase(ctx, "ff.v1.0.0", CsvPhase::Succeeded).await?;
    publish(ctx, vec![v1(), v1_1_failing()]).await?;
    // (A transient failure, e.g. a 409 on one of its RoleBindings, may come first and is retried.)
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_object(
        &csvs,
        "ff.v1.1.0",
        STEP,
        "ff.v1.1.0 Failed for good (its Deployment is invalid)",
        |c| {
            c.is_some_and(|c| {
                c.phase() == CsvPhase::Failed
                    && c.reason() == CsvReason::InstallComponentFailedNoRetry
            })
        },
    )
    .await?;
    csv_phase(ctx, "ff.v1.0.0", CsvPhase::Replacing).await?;
    await_sub(ctx, "ff", "the Subscription on the failed v1.1.0", |s| {
        s.current_csv == "ff.v1.1.0"
    })
    .await?;
    publish(ctx, vec![v1(), v1_1_failing(), v1_2_fixed()]).await?;
    Ok(())
}

async fn operators(ctx: &TestContext) -> anyhow::Result<(OperatorProcess, OperatorProcess)> {
    let catalog = catalog_operator(ctx, &[]).await?;
    let olm = olm_operator(ctx).await?;
    Ok((catalog, olm))
}

#[tokio::test]
async fn with_fail_forward_the_subscription_moves_past_a_failed_upgrade() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "failfwd", |ctx| async move {
        let _ops = operators(&ctx).await?;
        group(&ctx, UpgradeStrategyName::TechPreviewUnsafeFailForward).await?;
        install_then_fail(&ctx).await?;

        let sub = await_sub(&ctx, "ff", "the Subscription at the fix v1.2.0", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "ff.v1.2.0"
        })
        .await?;
        assert!(
            sub_condition(sub.status.as_ref().expect("status"), "ResolutionFailed").is_none(),
            "{:?}",
            sub.status
        );
        csv_phase(&ctx, "ff.v1.2.0", CsvPhase::Succeeded).await?;
        // The failed chain hands over to the fix and goes: only v1.2.0 is left, Succeeded.
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let csvs = &csvs;
        eventually(STEP, "only the fix left", || async move {
            let left = csv_phases(csvs).await?;
            if left == [("ff.v1.2.0".to_string(), CsvPhase::Succeeded)] {
                Ok(Some(()))
            } else {
                Err(anyhow::anyhow!("CSVs {left:?}"))
            }
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn with_the_default_strategy_a_failed_upgrade_blocks_the_subscription() -> anyhow::Result<()>
{
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "failblock", |ctx| async move {
        let _ops = operators(&ctx).await?;
        group(&ctx, UpgradeStrategyName::Default).await?;
        install_then_fail(&ctx).await?;

        // Resolution sees the fix and rejects it: the old v1.0.0 still holds the package.
        let sub = await_sub(
            &ctx,
            "ff",
            "a resolution failure naming the fix and the CSV holding the package",
            |s| {
                sub_condition(s, "ResolutionFailed").is_some_and(|(status, _, message)| {
                    status == "True"
                        && message.contains("ff.v1.2.0")
                        && message.contains("ff.v1.0.0")
                })
            },
        )
        .await?;
        let status = sub.status.unwrap_or_default();
        eprintln!(
            "ResolutionFailed: {:?}",
            sub_condition(&status, "ResolutionFailed")
        );
        assert_eq!(
            (status.current_csv.as_str(), status.installed_csv.as_str()),
            ("ff.v1.1.0", "ff.v1.1.0")
        );
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(csvs.get_opt("ff.v1.2.0").await?.is_none());
        let planned: Vec<String> = plans(&ctx)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .flat_map(|p| p.spec.cluster_service_version_names)
            .collect();
        assert!(
            !planned.iter().any(|n| n == "ff.v1.2.0"),
            "plans: {planned:?}"
        );
        assert_eq!(
            csvs.get("ff.v1.1.0").await?.phase(),
            CsvPhase::Failed,
            "the failed CSV stays Failed"
        );
        Ok(())
    })
    .await
}

/// The failed-InstallPlan path (OLM's active e2e "an InstallPlan is reporting a failed state"): the upgrade's
/// plan fails before it creates anything (its CRD drops a stored version: "risk of data loss"), so its CSV never
/// exists. With fail-forward the Subscription is `UpgradeFailed` (not `UpgradePending` behind the failed plan)
/// and the fix published next, which skips the failed bundle, installs.
#[tokio::test]
async fn with_fail_forward_a_failed_install_plan_does_not_hold_the_subscription()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "failfwdip", |ctx| async move {
        let _cat = catalog_operator(&ctx, &["--install-plan-retry-timeout", "2s"]).await?;
        let _olm = olm_operator(&ctx).await?;
        group(&ctx, UpgradeStrategyName::TechPreviewUnsafeFailForward).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let mut kept = Crd::new("gizmos", &format!("{suffix}.crd.olm-rs.io"), "Gizmo");
        kept.versions = vec!["v1alpha1".into()];
        let mut dropped = kept.clone();
        dropped.versions = vec!["v1".into()];
        let v1 = || Op::new("fp", "1.0.0").owns(&kept);
        let bad = || Op::new("fp", "2.0.0").replaces("fp.v1.0.0").owns(&dropped);
        configmap_catalog(&ctx, "cat", &Catalog::with(vec![v1()]), 0).await?;
        subscription(&ctx, sub_to(&ctx, "fp", "fp", "cat")).await?;
        await_sub(&ctx, "fp", "1.0.0 installed", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "fp.v1.0.0"
        })
        .await?;

        publish(&ctx, vec![v1(), bad()]).await?;
        await_sub(
            &ctx,
            "fp",
            "UpgradeFailed on the failed plan for 2.0.0",
            |s| {
                s.current_csv == "fp.v2.0.0"
                    && s.state == SubscriptionState::UpgradeFailed
                    && sub_condition(s, "InstallPlanFailed").is_some()
            },
        )
        .await?;

        let mut fix = Op::new("fp", "2.1.0").replaces("fp.v1.0.0").owns(&kept);
        fix.skips = vec!["fp.v2.0.0".into()];
        publish(&ctx, vec![v1(), bad(), fix]).await?;
        await_sub(&ctx, "fp", "the Subscription at the fix 2.1.0", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "fp.v2.1.0"
        })
        .await?;
        csv_phase(&ctx, "fp.v2.1.0", CsvPhase::Succeeded).await?;
        Ok(())
    })
    .await
}
