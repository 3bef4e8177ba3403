//! Errors of the CSV effects and their classification into a requeue policy, in one place
//! (house style: `kind()` → `class(kind)` → the reconcile loop's `policy()`).

use messages::key::ObjectKey;
use olm_runtime::error::{self as api, Class};
use olm_runtime::outcome::{ErrorClass, Policy};
use std::time::Duration;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot write the status of CSV {key}")]
    PatchStatus {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("cannot annotate CSV {key} with its OperatorGroup")]
    Annotate {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("cannot {verb} {kind} {name}")]
    Apply {
        verb: &'static str,
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot delete CSV {key}")]
    DeleteCsv {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    /// Webhooks, API services or their certificates could not be set up (no API error behind it).
    #[error("{0}")]
    Served(String),
    /// The OperatorGroup names a service account that cannot be acted as yet (csv/scoped.rs): OLM's message.
    #[error("{0}")]
    Scoped(String),
}

impl Error {
    fn source_error(&self) -> Option<&kube::Error> {
        match self {
            Error::PatchStatus { source, .. }
            | Error::Annotate { source, .. }
            | Error::Apply { source, .. }
            | Error::DeleteCsv { source, .. } => Some(source),
            Error::Served(_) | Error::Scoped(_) => None,
        }
    }

    /// What the API error behind this one means ([`Class::Other`] when there is none).
    pub fn kind(&self) -> Class {
        self.source_error().map_or(Class::Other, api::classify)
    }

    /// A short label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            Error::PatchStatus { .. } => "patch_status",
            Error::Annotate { .. } => "annotate",
            Error::Apply { .. } => "apply",
            Error::DeleteCsv { .. } => "delete_csv",
            Error::Served(_) => "served",
            Error::Scoped(_) => "scoped",
        }
    }

    /// This error and its causes, for a status message a person reads (the API server's own message for
    /// API errors).
    pub fn chain(&self) -> String {
        api::chain(self)
    }
}

/// The loop's error class of each kind, the one mapping of `olm_runtime::error` (invalid and forbidden are
/// permanent): the class picks the requeue in [`policy`].
pub fn class(kind: Class) -> ErrorClass {
    ErrorClass::of(kind)
}

/// The one requeue policy of the CSV loop: conflicts retried after 100 ms, doubling for each in a row; transient errors and
/// `Next::Backoff` waits 1 s doubling up to 60 s; forbidden or rejected (invalid) writes after 60 s; a run abandoned after 60 s
/// (a hung request must not hold the actor's mailbox for good). Each retry is jittered into `[d/2, d]`.
pub fn policy() -> Policy {
    Policy {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(60),
        conflict: Duration::from_millis(100),
        permanent: Duration::from_secs(60),
        deadline: Duration::from_secs(60),
    }
}

/// The delay before jitter after the `attempts`-th consecutive error of `kind`.
pub fn requeue_for(kind: Class, attempts: u32) -> Duration {
    policy().error_delay(class(kind), attempts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.into(),
            message: "m".into(),
            ..Default::default()
        }))
    }

    #[rstest]
    #[case::a_conflict_is_retried_at_once(api(409, "Conflict"), ErrorClass::Conflict)]
    #[case::an_existing_object_is_a_conflict(api(409, "AlreadyExists"), ErrorClass::Conflict)]
    #[case::forbidden_is_permanent(api(403, "Forbidden"), ErrorClass::Permanent)]
    #[case::an_invalid_object_is_permanent(api(422, "Invalid"), ErrorClass::Permanent)]
    #[case::a_server_error_is_transient(api(500, "InternalError"), ErrorClass::Transient)]
    #[case::a_missing_object_is_transient(api(404, "NotFound"), ErrorClass::Transient)]
    fn api_errors_are_classified_by_status(#[case] error: kube::Error, #[case] retry: ErrorClass) {
        let e = Error::PatchStatus {
            key: ObjectKey::new("ns", "csv"),
            source: error,
        };
        assert_eq!(class(e.kind()), retry);
    }

    #[rstest]
    #[case::conflicts_retry_almost_immediately(Class::Conflict, 0, Duration::from_millis(100))]
    #[case::conflicts_in_a_row_back_off(Class::Conflict, 3, Duration::from_millis(800))]
    #[case::the_first_transient_retry_waits_a_second(Class::ServerError, 0, Duration::from_secs(1))]
    #[case::transient_retries_double(Class::ServerError, 3, Duration::from_secs(8))]
    #[case::transient_retries_are_capped_at_a_minute(
        Class::ServerError,
        30,
        Duration::from_secs(60)
    )]
    #[case::forbidden_retries_slowly(Class::Forbidden, 0, Duration::from_secs(60))]
    #[case::invalid_retries_slowly(Class::Invalid, 0, Duration::from_secs(60))]
    fn the_requeue_policy_depends_on_the_kind(
        #[case] kind: Class,
        #[case] attempts: u32,
        #[case] wait: Duration,
    ) {
        assert_eq!(requeue_for(kind, attempts), wait);
    }

    #[test]
    fn the_chain_names_every_cause() {
        let e = Error::Apply {
            verb: "create",
            kind: "Deployment",
            name: "ns/op".into(),
            source: api(403, "Forbidden"),
        };
        assert_eq!(e.chain(), "cannot create Deployment ns/op: m (Forbidden)");
        assert_eq!(e.kind(), Class::Forbidden);
    }
}
