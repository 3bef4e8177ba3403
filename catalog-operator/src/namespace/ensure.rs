//! Creating resolution's InstallPlan so that planning one step twice never leaves two plans (OLM's
//! `ensureInstallPlan`). The plan is named from its content ([`super::plan_name`]); when a run plans a step
//! whose plan an earlier run already created (a run whose decision was lost, in an actor or a process that was
//! restarted before its InstallPlan store showed the plan), the create answers `AlreadyExists` and that plan is
//! used: as it is when it is being or was carried out, or given its status when its creator died between its two
//! writes. Any other plan of that name (one that failed, or a Complete one whose CSV is gone) is not this step's
//! to reuse: the run fails and is retried once the store shows that plan, which raises the next generation and
//! so the name.

use super::plan_name::plan_name;
use super::reuse;
use kube::Api;
use kube::api::PostParams;
use messages::crd::install_plan::InstallPlan;
use olm_runtime::error::{self as api_error, Class};
use std::collections::BTreeSet;

/// The plan a step got.
#[derive(Debug)]
pub enum Found {
    /// Created now: its status is still to be written.
    Created(InstallPlan),
    /// Created before and never given its status: write it.
    Unfinished(InstallPlan),
    /// Created before and being or done carried out: use it as it is.
    Reused(InstallPlan),
}

/// Create `ip` (its name from its content) for the step of `owners` (Subscription names), or find the plan an
/// earlier run created for it. `existing_csvs`: the CSVs in the namespace (a Complete plan is reused only when
/// its CSVs exist).
pub async fn create(
    api: &Api<InstallPlan>,
    mut ip: InstallPlan,
    owners: &[&str],
    existing_csvs: &BTreeSet<String>,
) -> Result<Found, kube::Error> {
    let name = plan_name(&ip);
    ip.metadata.name = Some(name.clone());
    ip.metadata.generate_name = None;
    let csvs = ip.spec.cluster_service_version_names.clone();
    let manual = ip.spec.approval.is_manual();
    let exists = match api.create(&PostParams::default(), &ip).await {
        Ok(created) => return Ok(Found::Created(created)),
        Err(e) if api_error::is(&e, Class::AlreadyExists) => e,
        Err(e) => return Err(e),
    };
    let got = api.get(&name).await?;
    if reuse::reusable([&got], &csvs, owners, manual, existing_csvs).is_some() {
        return Ok(Found::Reused(got));
    }
    if reuse::unfinished([&got], &csvs, owners, manual).is_some() {
        return Ok(Found::Unfinished(got));
    }
    Err(exists)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::PostParams;
    use messages::crd::install_plan::{InstallPlanPhase, InstallPlanStatus};
    use testkit::fake_api::FakeApi;

    const PLANS: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/ns/installplans";

    fn plan(csv: &str, generation: i64) -> InstallPlan {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"generateName": "install-", "namespace": "ns",
                "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                    "name": "sub", "uid": "uid-sub"}]},
            "spec": {"clusterServiceVersionNames": [csv], "approval": "Automatic", "approved": true,
                "generation": generation}
        }))
        .expect("plan")
    }

    fn installing() -> InstallPlanStatus {
        InstallPlanStatus {
            phase: InstallPlanPhase::Installing,
            ..Default::default()
        }
    }

    /// What a run does with what it found: write the status of a plan that has none.
    async fn finish(api: &Api<InstallPlan>, found: Found) -> (&'static str, InstallPlan) {
        let (what, mut p) = match found {
            Found::Reused(p) => return ("reused", p),
            Found::Created(p) => ("created", p),
            Found::Unfinished(p) => ("unfinished", p),
        };
        p.status = Some(installing());
        let name = p.metadata.name.clone().unwrap_or_default();
        let written = api
            .replace_status(&name, &PostParams::default(), &p)
            .await
            .expect("status");
        (what, written)
    }

    /// The chaos runs' duplicate (seed 77): a run creates the plan for a step, then its decision is lost and
    /// the namespace actor (or the whole process) is started again before its InstallPlan store shows the plan.
    /// The new run has no memory of it, so it plans the same step again (same content, same generation). It must
    /// find the first plan, not write a second (with `generateName` it wrote `install-00001` and
    /// `install-00003`).
    #[tokio::test(start_paused = true)]
    async fn a_step_planned_again_by_a_restarted_actor_reuses_the_first_plan() {
        let fake = FakeApi::new([]).keeping();
        let api: Api<InstallPlan> = Api::namespaced(fake.client(), "ns");
        let none = BTreeSet::new();
        let first = create(&api, plan("a.v1", 1), &["sub"], &none)
            .await
            .expect("first create");
        let (what, first) = finish(&api, first).await;
        assert_eq!(what, "created");
        // The restarted actor: same step, nothing remembered, nothing in its store.
        let again = create(&api, plan("a.v1", 1), &["sub"], &none)
            .await
            .expect("second create");
        let (what, again) = finish(&api, again).await;
        assert_eq!(what, "reused");
        assert_eq!(again.metadata.name, first.metadata.name);
        assert_eq!(fake.objects_under(PLANS).len(), 1, "{:?}", fake.seen());
    }

    /// Its creator died between the create and the status write: the next run writes the status of that plan.
    #[tokio::test(start_paused = true)]
    async fn a_plan_left_without_status_by_a_dead_run_is_finished() {
        let fake = FakeApi::new([]).keeping();
        let api: Api<InstallPlan> = Api::namespaced(fake.client(), "ns");
        let none = BTreeSet::new();
        let dead = create(&api, plan("a.v1", 1), &["sub"], &none)
            .await
            .expect("first create");
        assert!(matches!(dead, Found::Created(_)));
        let again = create(&api, plan("a.v1", 1), &["sub"], &none)
            .await
            .expect("second create");
        let (what, finished) = finish(&api, again).await;
        assert_eq!(what, "unfinished");
        assert!(finished.status.is_some());
        assert_eq!(fake.objects_under(PLANS).len(), 1);
    }

    /// A later step (another generation) is another plan; a plan of the same name that is not this step's to
    /// reuse (Failed) is an error, not a reuse.
    #[tokio::test(start_paused = true)]
    async fn another_generation_is_another_plan_and_a_failed_one_is_not_reused() {
        let fake = FakeApi::new([]).keeping();
        let api: Api<InstallPlan> = Api::namespaced(fake.client(), "ns");
        let none = BTreeSet::new();
        let first = create(&api, plan("a.v1", 1), &["sub"], &none)
            .await
            .expect("create");
        let (_, mut first) = finish(&api, first).await;
        let later = create(&api, plan("a.v1", 2), &["sub"], &none)
            .await
            .expect("create gen 2");
        assert!(matches!(later, Found::Created(_)));
        assert_eq!(fake.objects_under(PLANS).len(), 2);

        first.status = Some(InstallPlanStatus {
            phase: InstallPlanPhase::Failed,
            ..Default::default()
        });
        let name = first.metadata.name.clone().unwrap_or_default();
        api.replace_status(&name, &PostParams::default(), &first)
            .await
            .expect("fail it");
        let err = create(&api, plan("a.v1", 1), &["sub"], &none)
            .await
            .expect_err("a Failed plan is not reused");
        assert!(matches!(err, kube::Error::Api(s) if s.is_already_exists()));
    }
}
