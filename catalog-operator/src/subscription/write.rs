//! What a Subscription actor writes for a decision (pure): nothing when its status already says it (times
//! aside), else the object with the decided status stamped `lastUpdated`.

use crate::status;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use messages::crd::subscription::{Subscription, SubscriptionStatus};

pub fn now() -> Time {
    Time(Timestamp::now())
}

pub fn updated(
    sub: &Subscription,
    decided: &SubscriptionStatus,
    now: Time,
) -> Option<Subscription> {
    let old = sub.status.clone().unwrap_or_default();
    if status::same(&old, decided) {
        return None;
    }
    if decided.catalog_health.is_empty() && decided.catalog_health_summary.is_some() {
        // A summary is never written (it is not on the wire): writing would erase the list it stands for.
        tracing::error!(
            subscription = ?sub.metadata.name,
            "a decided status carries catalogHealth as the store's summary; not written"
        );
        return None;
    }
    let mut st = decided.clone();
    st.last_updated = Some(now);
    let mut out = sub.clone();
    out.status = Some(st);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::subscription::SubscriptionState;
    use rstest::rstest;

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).expect("ts"))
    }

    fn sub(status: Option<SubscriptionStatus>) -> Subscription {
        let mut s: Subscription = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"name": "pkg", "source": "cat", "sourceNamespace": "ns"}
        }))
        .expect("subscription");
        s.status = status;
        s
    }

    fn st(current: &str, updated: Option<i64>) -> SubscriptionStatus {
        SubscriptionStatus {
            current_csv: current.into(),
            state: SubscriptionState::AtLatestKnown,
            last_updated: updated.map(at),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::no_status_yet(None, st("v1", None), true)]
    #[case::a_new_current_csv(Some(st("v1", Some(1))), st("v2", None), true)]
    #[case::the_same_but_for_the_time(Some(st("v1", Some(1))), st("v1", Some(5)), false)]
    fn writes_only_a_change(
        #[case] old: Option<SubscriptionStatus>,
        #[case] decided: SubscriptionStatus,
        #[case] writes: bool,
    ) {
        let out = updated(&sub(old), &decided, at(100));
        assert_eq!(out.is_some(), writes);
        if let Some(o) = out {
            let status = o.status.expect("status");
            assert_eq!(status.current_csv, decided.current_csv);
            assert_eq!(status.last_updated, Some(at(100)));
            // Written over the version it was read at (a conflict is the API server's to find).
            assert_eq!(o.metadata.resource_version.as_deref(), Some("7"));
        }
    }
}
