//! startingCSV with Manual approval (spec §8 scenario 22, OLM e2e "with starting CSV"): the first InstallPlan
//! holds only the starting CSV (and its CRD) and waits for approval; once approved, the next plan upgrades
//! one step along `replaces`, again waiting for approval, and so on to the head.

use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};

/// Wait for the Subscription's plan to need approval with `csv` as its only CSV; returns the plan.
async fn pending_plan_for(
    ctx: &olm_tests::TestContext,
    sub: &str,
    csv: &str,
) -> anyhow::Result<InstallPlan> {
    let pending = await_sub(
        ctx,
        sub,
        &format!("a plan for {csv} waiting for approval"),
        |s| {
            s.current_csv == csv
                && sub_condition(s, "InstallPlanPending").is_some_and(|c| c.1 == "RequiresApproval")
        },
    )
    .await?;
    let name = pending
        .status
        .and_then(|s| s.install_plan)
        .map(|p| p.name)
        .ok_or_else(|| anyhow::anyhow!("{sub} has no installplan reference"))?;
    let plan = plans(ctx).get(&name).await?;
    assert_eq!(
        (
            plan.spec.approval.as_str(),
            plan.spec.approved,
            plan.phase(),
            plan.spec.cluster_service_version_names.clone()
        ),
        (
            "Manual",
            false,
            InstallPlanPhase::RequiresApproval,
            vec![csv.to_string()]
        ),
        "plan {name}"
    );
    Ok(plan)
}

async fn approve(ctx: &olm_tests::TestContext, plan: &InstallPlan) -> anyhow::Result<()> {
    let name = plan.metadata.name.clone().unwrap_or_default();
    olm_tests::catalog_fixture::approve_plan(&plans(ctx), &name).await?;
    await_object(&plans(ctx), &name, DEADLINE, "Complete", |ip| {
        ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_manual_subscription_with_a_starting_csv_installs_it_then_upgrades_one_approved_step_at_a_time()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "substart", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let crd = Crd::new("levers", &format!("{suffix}.start.olm-rs.io"), "Lever");
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(vec![
                Op::new("kappa", "1.0.0").owns(&crd),
                Op::new("kappa", "1.1.0")
                    .replaces("kappa.v1.0.0")
                    .owns(&crd),
                Op::new("kappa", "1.2.0")
                    .replaces("kappa.v1.1.0")
                    .owns(&crd),
            ]),
            0,
        )
        .await?;
        subscription(
            &ctx,
            sub_to(&ctx, "kappa", "kappa", "cat")
                .starting_csv("kappa.v1.0.0")
                .approval(Approval::Manual),
        )
        .await?;

        // The first plan installs the starting CSV, not the head, and nothing is created before approval.
        let first = pending_plan_for(&ctx, "kappa", "kappa.v1.0.0").await?;
        let kinds: Vec<String> = first
            .status
            .as_ref()
            .map(|s| s.plan.iter().map(|st| st.resource.kind.clone()).collect())
            .unwrap_or_default();
        assert_eq!(
            &kinds[..2],
            ["ClusterServiceVersion", "CustomResourceDefinition"],
            "{kinds:?}"
        );
        let csvs: kube::Api<messages::crd::csv::ClusterServiceVersion> =
            kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(
            csvs.get_opt("kappa.v1.0.0").await?.is_none(),
            "nothing is installed before approval"
        );

        approve(&ctx, &first).await?;
        await_sub(&ctx, "kappa", "kappa.v1.0.0 installed", |s| {
            s.installed_csv == "kappa.v1.0.0"
        })
        .await?;

        // The upgrade comes one step at a time, each plan Manual again.
        let second = pending_plan_for(&ctx, "kappa", "kappa.v1.1.0").await?;
        assert!(second.spec.generation > first.spec.generation);
        approve(&ctx, &second).await?;
        let third = pending_plan_for(&ctx, "kappa", "kappa.v1.2.0").await?;
        approve(&ctx, &third).await?;
        let done = await_sub(&ctx, "kappa", "at the head kappa.v1.2.0", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "kappa.v1.2.0"
        })
        .await?;
        assert!(
            done.status
                .is_some_and(|s| sub_condition(&s, "InstallPlanPending").is_none())
        );
        assert_eq!(
            csvs.get("kappa.v1.2.0").await?.spec.replaces.as_deref(),
            Some("kappa.v1.1.0")
        );
        Ok(())
    })
    .await
}
