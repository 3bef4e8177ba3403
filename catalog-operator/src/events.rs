//! Kubernetes Events of catalog-operator, as OLM v0 emits them (spec §4.1, §4.4, §4.6): a Warning
//! `ResolutionFailed` on the Namespace (and on the Subscription) when a resolution fails, a Warning
//! `AppliedWithWarnings` on an InstallPlan whose objects drew API warnings, a Warning `BundleUnpackFailed` on a
//! Subscription whose bundle image failed to unpack, a Warning `CRDValidation` on an
//! InstallPlan proceeding past existing CRs that fail a new CRD's schema because the CRD converts through a
//! webhook. Builders are pure; [`publish`] writes through kube's `Recorder` (events.k8s.io/v1) in the
//! background and only logs a failure (an Event is never worth failing a sync).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use messages::crd::subscription::{SubscriptionConditionType, SubscriptionStatus};

/// The controller name on our Events.
pub const REPORTER: &str = "catalog-operator";

/// Event notes are limited to 1 kB.
fn note(message: &str) -> Option<String> {
    Some(message.chars().take(1000).collect())
}

fn warning(reason: &str, action: &str, message: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        note: note(message),
        action: action.into(),
        secondary: None,
    }
}

pub fn resolution_failed(message: &str) -> Event {
    warning("ResolutionFailed", "Resolve", message)
}

pub fn applied_with_warnings(kind: &str, name: &str, warnings: u64) -> Event {
    warning(
        "AppliedWithWarnings",
        "Apply",
        &format!("{warnings} warning(s) generated during installation of {kind} {name}"),
    )
}

pub fn crd_validation(message: &str) -> Event {
    warning("CRDValidation", "Validate", message)
}

pub fn bundle_unpack_failed(message: &str) -> Event {
    warning("BundleUnpackFailed", "Unpack", message)
}

/// The message of a condition of type `kind` that `next` sets True and `old` did not have (with that message), if
/// any: one Event per new failure, not one per sync.
fn new_condition<'a>(
    old: &SubscriptionStatus,
    next: &'a SubscriptionStatus,
    kind: SubscriptionConditionType,
) -> Option<&'a str> {
    let message = |st: &'a SubscriptionStatus| {
        st.conditions
            .iter()
            .find(|c| c.type_ == kind && c.status == "True")
            .map(|c| c.message.as_str())
    };
    let now = message(next)?;
    let before = old
        .conditions
        .iter()
        .find(|c| c.type_ == kind && c.status == "True")
        .map(|c| c.message.as_str());
    (before != Some(now)).then_some(now)
}

/// A `ResolutionFailed` condition new in `next` (OLM: an Event on the Namespace).
pub fn new_resolution_failure<'a>(
    old: &SubscriptionStatus,
    next: &'a SubscriptionStatus,
) -> Option<&'a str> {
    new_condition(old, next, SubscriptionConditionType::ResolutionFailed)
}

/// A `BundleUnpackFailed` condition new in `next` (OLM: an Event on the Subscription).
pub fn new_bundle_unpack_failure<'a>(
    old: &SubscriptionStatus,
    next: &'a SubscriptionStatus,
) -> Option<&'a str> {
    new_condition(old, next, SubscriptionConditionType::BundleUnpackFailed)
}

/// A reference to a Namespace (the namespace-wide `ResolutionFailed` Event, as OLM writes it).
/// The reference carries the namespace in `namespace` too, so the Event is written into that namespace: the
/// recorder (events.k8s.io/v1) otherwise writes it into `default`, which this apiserver refuses for a reference
/// with no namespace ("involvedObject.namespace: does not match event.namespace", 422), and the namespace's
/// `ResolutionFailed` Event was lost (seen in the chaos runs' logs).
pub fn namespace_ref(namespace: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Namespace".into()),
        name: Some(namespace.into()),
        namespace: Some(namespace.into()),
        ..ObjectReference::default()
    }
}

/// A reference to an `operators.coreos.com/v1alpha1` object (Subscription, InstallPlan).
pub fn olm_ref(kind: &str, namespace: &str, name: &str, uid: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some("operators.coreos.com/v1alpha1".into()),
        kind: Some(kind.into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        uid,
        ..ObjectReference::default()
    }
}

/// Write `event` about `reference` in the background.
pub fn publish(client: &kube::Client, event: Event, reference: ObjectReference) {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
    tokio::spawn(async move {
        if let Err(error) = recorder.publish(&event, &reference).await {
            tracing::warn!(reason = %event.reason, object = ?reference.name, %error, "cannot write Event");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::subscription::SubscriptionCondition;
    use rstest::rstest;

    #[test]
    fn a_namespace_event_is_written_into_that_namespace() {
        let r = namespace_ref("ns1");
        assert_eq!(
            (r.kind.as_deref(), r.name.as_deref(), r.namespace.as_deref()),
            (Some("Namespace"), Some("ns1"), Some("ns1"))
        );
    }

    fn status(failed: Option<&str>) -> SubscriptionStatus {
        let mut st = SubscriptionStatus::default();
        if let Some(m) = failed {
            st.conditions.push(SubscriptionCondition {
                type_: SubscriptionConditionType::ResolutionFailed,
                status: "True".into(),
                reason: messages::crd::subscription::SubscriptionReason::ErrorPreventedResolution,
                message: m.into(),
                last_heartbeat_time: None,
                last_transition_time: None,
            });
        }
        st
    }

    #[rstest]
    #[case::a_new_failure(None, Some("no operators found"), Some("no operators found"))]
    #[case::the_same_failure_again(Some("no operators found"), Some("no operators found"), None)]
    #[case::a_different_failure(Some("a"), Some("b"), Some("b"))]
    #[case::resolved(Some("a"), None, None)]
    #[case::never_failed(None, None, None)]
    fn one_event_per_new_resolution_failure(
        #[case] old: Option<&str>,
        #[case] next: Option<&str>,
        #[case] want: Option<&str>,
    ) {
        assert_eq!(new_resolution_failure(&status(old), &status(next)), want);
    }

    fn unpack(failed: Option<&str>) -> SubscriptionStatus {
        let mut st = status(None);
        if let Some(m) = failed {
            st.conditions.push(SubscriptionCondition {
                type_: SubscriptionConditionType::BundleUnpackFailed,
                status: "True".into(),
                reason: messages::crd::subscription::SubscriptionReason::BundleUnpackFailed,
                message: m.into(),
                last_heartbeat_time: None,
                last_transition_time: None,
            });
        }
        st
    }

    #[rstest]
    #[case::a_new_unpack_failure(None, Some("image not found"), Some("image not found"))]
    #[case::the_same_unpack_failure_again(Some("image not found"), Some("image not found"), None)]
    #[case::unpacked(Some("image not found"), None, None)]
    fn one_event_per_new_bundle_unpack_failure(
        #[case] old: Option<&str>,
        #[case] next: Option<&str>,
        #[case] want: Option<&str>,
    ) {
        assert_eq!(new_bundle_unpack_failure(&unpack(old), &unpack(next)), want);
        assert_eq!(
            new_resolution_failure(&unpack(old), &unpack(next)),
            None,
            "not a resolution failure"
        );
    }

    #[test]
    fn events_are_warnings_with_olms_reasons() {
        for (e, reason) in [
            (resolution_failed("x"), "ResolutionFailed"),
            (applied_with_warnings("Role", "r", 2), "AppliedWithWarnings"),
            (crd_validation("x"), "CRDValidation"),
            (bundle_unpack_failed("x"), "BundleUnpackFailed"),
        ] {
            assert_eq!(e.type_, EventType::Warning);
            assert_eq!(e.reason, reason);
        }
        let long = "x".repeat(5000);
        assert_eq!(resolution_failed(&long).note.map(|n| n.len()), Some(1000));
    }
}
