//! A Subscription's referenced InstallPlan that the store does not show is read from the API before it is taken
//! for deleted. The store lags (a watch cut or expired, an apiserver restart, a process just started), and a
//! pending Subscription whose plan looks deleted is reset and planned again (`status::before_resolution`): with
//! the plan really there, that made a second plan for the same CSVs under a higher generation (the chaos runs'
//! duplicate after the deterministic names of `super::plan_name`, seed 2 of the short run). Only a `404` makes a
//! plan missing; any other error fails the sync, which is retried.
//!
//! Only a pending (`UpgradePending`) Subscription's plan is read: no other state is reset by a missing plan. An
//! installed Subscription keeps naming its plan after the plan is garbage-collected (at most five per namespace,
//! as OLM v0 keeps), and reading those on every run cost a namespace of 20 installed Subscriptions 40 GETs per
//! install. For them the store decides `InstallPlanMissing`, as OLM v0's lister does.

use kube::Api;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::{Subscription, SubscriptionState};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The names of plans pending Subscriptions reference that `plans` does not hold. Pure.
pub fn unseen(subs: &[Arc<Subscription>], plans: &[Arc<InstallPlan>]) -> BTreeSet<String> {
    let known: BTreeSet<&str> = plans
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    subs.iter()
        .filter_map(|s| s.status.as_ref())
        .filter(|s| s.state == SubscriptionState::UpgradePending)
        .filter_map(|s| s.install_plan_ref.as_ref()?.name.clone())
        .filter(|n| !known.contains(n.as_str()))
        .collect()
}

/// Read each unseen referenced plan; those that exist are returned (to be used as if the store showed them).
pub async fn read_unseen(
    api: &Api<InstallPlan>,
    subs: &[Arc<Subscription>],
    plans: &[Arc<InstallPlan>],
) -> Result<Vec<Arc<InstallPlan>>, kube::Error> {
    let mut found = Vec::new();
    for name in unseen(subs, plans) {
        if let Some(p) = api.get_opt(&name).await? {
            found.push(Arc::new(p));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::fake_api::FakeApi;

    fn sub(plan: Option<&str>) -> Arc<Subscription> {
        sub_in(plan, "UpgradePending")
    }

    fn sub_in(plan: Option<&str>, state: &str) -> Arc<Subscription> {
        let mut v = serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "sub", "namespace": "ns"},
            "spec": {"name": "pkg", "source": "cat", "sourceNamespace": "ns"}
        });
        if let Some(plan) = plan {
            v["status"] = serde_json::json!({"state": state, "currentCSV": "a.v2",
                "lastUpdated": "2026-01-01T00:00:00Z",
                "installPlanRef": {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
                    "name": plan, "namespace": "ns"}});
        }
        Arc::new(serde_json::from_value(v).expect("subscription"))
    }

    fn plan(name: &str) -> Arc<InstallPlan> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"clusterServiceVersionNames": ["a.v2"], "approval": "Automatic", "approved": true}
            }))
            .expect("plan"),
        )
    }

    #[test]
    fn only_referenced_plans_the_store_lacks_are_unseen() {
        let subs = [sub(Some("install-a")), sub(Some("install-b")), sub(None)];
        let got = unseen(&subs, &[plan("install-a")]);
        assert_eq!(got, BTreeSet::from(["install-b".to_string()]));
    }

    /// Installed Subscriptions keep naming their garbage-collected plans; those are not read on every run.
    #[rstest::rstest]
    #[case::pending("UpgradePending", true)]
    #[case::at_latest("AtLatestKnown", false)]
    #[case::upgrade_available("UpgradeAvailable", false)]
    #[case::failed("UpgradeFailed", false)]
    fn only_a_pending_subscriptions_plan_is_read(#[case] state: &str, #[case] read: bool) {
        let got = unseen(&[sub_in(Some("install-gone"), state)], &[]);
        assert_eq!(!got.is_empty(), read, "{state}");
    }

    /// The plan exists but the store lags: it is read, so the Subscription is not reset and planned again.
    #[tokio::test(start_paused = true)]
    async fn a_plan_the_store_lags_behind_is_read_and_a_deleted_one_is_not_found() {
        let fake = FakeApi::new([]).keeping();
        let api: Api<InstallPlan> = Api::namespaced(fake.client(), "ns");
        api.create(&Default::default(), &plan("install-a"))
            .await
            .expect("create");
        let subs = [sub(Some("install-a")), sub(Some("install-gone"))];
        let found = read_unseen(&api, &subs, &[]).await.expect("read");
        let names: Vec<_> = found
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, ["install-a"]);
    }
}
