//! Competing CRD owners (spec §8 scenario 32, OLM `TestCompetingCRDOwnersExist`): an InstallPlan whose CSV
//! step installs a CSV it does not name in `spec.clusterServiceVersionNames` (a dependency) fails when
//! another CSV in the namespace already owns one of that CSV's CRDs, and the CSV is not created; the CSVs a
//! plan names are not checked. The plans are written by hand, as an older OLM or a user could have.

use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlanPhase;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use serde_json::json;

#[tokio::test]
async fn a_dependency_csv_owning_a_crd_someone_else_owns_fails_its_plan() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "ipowners", |ctx| async move {
        operator_group(&ctx).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let crd = Crd::new("pulleys", &format!("{suffix}.owners.olm-rs.io"), "Pulley");
        let mut owner = Op::new("incumbent", "1.0.0").owns(&crd).csv();
        owner["metadata"]["namespace"] = json!(ctx.namespace);
        create_manifest::<ClusterServiceVersion>(&ctx, owner).await?;
        // Started after the incumbent exists: its first list holds it, and plans execute only once the stores
        // listed (a CSV created a moment before a plan may not be in a running operator's store yet).
        let _op = catalog_operator(&ctx, &["--install-plan-retry-timeout", "1s"]).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);

        let dependency = Op::new("rival", "1.0.0").owns(&crd).csv();
        let failing = hand_written_plan(&ctx, &["something-else.v1"], &dependency).await?;
        let plan = await_object(&plans(&ctx), &failing, DEADLINE, "Failed", |ip| {
            ip.is_some_and(|ip| {
                matches!(
                    ip.phase(),
                    InstallPlanPhase::Failed | InstallPlanPhase::Complete
                )
            })
        })
        .await?;
        assert_eq!(plan.phase(), InstallPlanPhase::Failed);
        let condition = plan
            .status
            .as_ref()
            .and_then(|s| s.conditions.last())
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no condition"))?;
        assert_eq!(
            (condition.reason.as_str(), condition.message.as_str()),
            (
                "InstallComponentFailed",
                "pre-existing CRD owners found for owned CRD(s) of dependent CSV rival.v1.0.0"
            )
        );
        assert!(
            csvs.get_opt("rival.v1.0.0").await?.is_none(),
            "the dependency was not created"
        );

        // The same CSV named by its plan is not a dependency: no check, it is created.
        let named = hand_written_plan(&ctx, &["rival.v1.0.0"], &dependency).await?;
        await_object(&plans(&ctx), &named, DEADLINE, "Complete", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
        })
        .await?;
        assert!(csvs.get_opt("rival.v1.0.0").await?.is_some());
        Ok(())
    })
    .await
}
