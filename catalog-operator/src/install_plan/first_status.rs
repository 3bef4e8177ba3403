//! The first status of a plan, written by its InstallPlan actor from what resolution handed over
//! (`crate::handover`): a merge patch of `status` alone, with no `resourceVersion`, so a user's edit of the plan's
//! spec between the create and this write (a Manual plan approved the moment it appears) neither conflicts with
//! it nor is undone by it.
//!
//! A failed write leaves the plan as it is, never deleted: the write may have landed (an answer lost on a
//! dropped connection), or its `409 Conflict` may come from a user's approval, and a plan planned again one
//! generation higher would lose that approval (chaos defect 14, seed 33). The status is handed over again by
//! the next resolution run, which finishes a plan without status (`namespace::reuse::unfinished`, or
//! `namespace::ensure` when the store does not show it yet).

use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::install_plan::{InstallPlan, InstallPlanStatus};
use serde::Serialize;

/// `{"status": {...}}`.
#[derive(Serialize, Debug)]
struct StatusPatch<'a> {
    status: &'a InstallPlanStatus,
}

/// Write `status` as the status of plan `name`; the answer is the plan as stored (its spec as the user left it).
pub async fn write(
    api: &Api<InstallPlan>,
    name: &str,
    status: &InstallPlanStatus,
) -> Result<InstallPlan, kube::Error> {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&StatusPatch { status }),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::PostParams;
    use messages::crd::install_plan::InstallPlanPhase;
    use testkit::fake_api::FakeApi;

    const PLANS: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/ns/installplans";

    fn manual_plan() -> InstallPlan {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"name": "install-abcde", "namespace": "ns"},
            "spec": {"clusterServiceVersionNames": ["side.v1.1.0"], "approval": "Manual", "approved": false,
                "generation": 2}
        }))
        .expect("plan")
    }

    fn requires_approval() -> InstallPlanStatus {
        InstallPlanStatus {
            phase: InstallPlanPhase::RequiresApproval,
            ..Default::default()
        }
    }

    /// Defect 14: the user approves the plan between its create and its status write. The status lands and
    /// the approval stays; writing the whole object as created (the old `replace_status`) is refused with a
    /// conflict, which made resolution delete the approved plan.
    #[tokio::test]
    async fn a_plan_approved_before_its_status_keeps_the_approval_and_gets_its_status() {
        let fake = FakeApi::new([]).keeping();
        let api: Api<InstallPlan> = Api::namespaced(fake.client(), "ns");
        let created = api
            .create(&PostParams::default(), &manual_plan())
            .await
            .expect("created");
        api.patch(
            "install-abcde",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"approved": true}})),
        )
        .await
        .expect("approved by the user");

        let mut stale = created.clone();
        stale.status = Some(requires_approval());
        let old_way = api
            .replace_status("install-abcde", &PostParams::default(), &stale)
            .await;
        assert!(
            matches!(&old_way, Err(kube::Error::Api(s)) if s.code == 409),
            "the fake refuses a stale resourceVersion as the apiserver does: {old_way:?}"
        );

        let written = write(&api, "install-abcde", &requires_approval())
            .await
            .expect("status written");
        assert!(written.spec.approved, "the user's approval is kept");
        assert_eq!(
            written.status.map(|s| s.phase),
            Some(InstallPlanPhase::RequiresApproval)
        );
        let sent = fake.seen();
        let last = sent.last().expect("a request");
        assert_eq!(
            (last.method.as_str(), last.path.as_str()),
            ("PATCH", format!("{PLANS}/install-abcde/status").as_str())
        );
        assert!(
            last.body.get("metadata").is_none() && last.body.get("spec").is_none(),
            "only the status is sent: {}",
            last.body
        );
    }
}
