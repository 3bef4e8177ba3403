//! An InstallPlan that is already Installing when the catalog-operator starts (a restart mid-install) is
//! executed. Regression: the plan's first pass and the namespace sync both waited on kube-runtime's
//! `Store::wait_until_ready`, whose oneshot wakes only the last task that polled it, so the plan hung in
//! Installing forever; the stores' readiness is now one gate any number of tasks can wait on.

use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlanPhase;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};

#[tokio::test]
async fn a_plan_installing_before_the_operator_starts_completes() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "ipstart", |ctx| async move {
        operator_group(&ctx).await?;
        subscription(&ctx, sub_to(&ctx, "omicron", "omicron", "cat")).await?;
        let csv = Op::new("omicron", "1.0.0").csv();
        let plan = hand_written_plan(&ctx, &["omicron.v1.0.0"], &csv).await?;

        let _op = catalog_operator(&ctx, &[]).await?;
        await_object(&plans(&ctx), &plan, DEADLINE, "Complete", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
        })
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(csvs.get_opt("omicron.v1.0.0").await?.is_some());
        Ok(())
    })
    .await
}
