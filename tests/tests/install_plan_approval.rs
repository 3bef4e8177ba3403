//! Manual approval (spec §8 scenario 27) and per-Subscription approval: a Manual Subscription's plan waits
//! in RequiresApproval until `kubectl patch` approves it, while an Automatic Subscription in the same
//! namespace gets its own Automatic plan (OLM v0 would make both Manual; we do not). Deleting a pending
//! plan yields a fresh one.

use kube::api::DeleteParams;
use messages::crd::install_plan::InstallPlanPhase;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};

#[tokio::test]
async fn a_manual_plan_waits_for_approval_without_making_other_subscriptions_manual()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "ipmanual", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(vec![Op::new("epsilon", "1.0.0"), Op::new("zeta", "1.0.0")]),
            0,
        )
        .await?;
        subscription(
            &ctx,
            sub_to(&ctx, "epsilon", "epsilon", "cat").approval(Approval::Manual),
        )
        .await?;
        subscription(&ctx, sub_to(&ctx, "zeta", "zeta", "cat")).await?;

        let pending = await_sub(&ctx, "epsilon", "waiting for approval", |s| {
            sub_condition(s, "InstallPlanPending").is_some_and(|c| c.1 == "RequiresApproval")
        })
        .await?;
        let first = pending
            .status
            .as_ref()
            .and_then(|s| s.install_plan.as_ref())
            .map(|p| p.name.clone())
            .expect("plan ref");
        let plan = plans(&ctx).get(&first).await?;
        assert_eq!(
            (
                plan.spec.approval.as_str(),
                plan.spec.approved,
                plan.phase()
            ),
            ("Manual", false, InstallPlanPhase::RequiresApproval)
        );
        assert_eq!(
            pending.status.as_ref().map(|s| s.state.clone()),
            Some(SubscriptionState::UpgradePending)
        );

        let auto = await_sub(&ctx, "zeta", "installed automatically", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let auto_plan = plans(&ctx)
            .get(
                &auto
                    .status
                    .and_then(|s| s.install_plan)
                    .map(|p| p.name)
                    .expect("plan ref"),
            )
            .await?;
        assert_eq!(
            auto_plan.spec.approval.as_str(),
            "Automatic",
            "a Manual Subscription does not make the others Manual"
        );
        assert_eq!(
            auto_plan.spec.cluster_service_version_names,
            vec!["zeta.v1.0.0".to_string()]
        );

        // Deleting the pending plan resets the Subscription, and resolution makes a new plan.
        plans(&ctx).delete(&first, &DeleteParams::default()).await?;
        let again = await_sub(&ctx, "epsilon", "a new plan after deletion", |s| {
            s.install_plan.as_ref().is_some_and(|p| p.name != first)
        })
        .await?;
        let second = again
            .status
            .and_then(|s| s.install_plan)
            .map(|p| p.name)
            .expect("plan ref");

        let out = ctx.cluster.kubectl(&[
            "-n",
            &ctx.namespace,
            "patch",
            "installplan",
            &second,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"approved":true}}"#,
        ])?;
        assert!(out.contains("patched"), "{out}");
        await_object(&plans(&ctx), &second, DEADLINE, "Complete", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
        })
        .await?;
        await_sub(&ctx, "epsilon", "installed after approval", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "epsilon.v1.0.0"
        })
        .await?;
        Ok(())
    })
    .await
}
