//! Errors of the CSV effects and their classification into a requeue policy, in one place
//! (house style: `kind()` → `class(kind)` → the reconcile loop's `policy()`).

use messages::key::ObjectKey;
use olm_runtime::reconcile::{ErrorClass, Policy};
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

/// How an error should be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Network, timeouts, 5xx, anything unclassified: exponential backoff.
    Transient,
    /// 409: someone else wrote first; retry almost immediately.
    Conflict,
    /// 400/422: the object we built is rejected; retrying the same object cannot help.
    InvalidSpec,
    /// 403: we may not do this; retry slowly.
    Forbidden,
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

    pub fn kind(&self) -> ErrorKind {
        self.source_error().map_or(ErrorKind::Transient, classify)
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

    /// This error and its cause, for a status message a person reads (the API server's own message for
    /// API errors).
    pub fn chain(&self) -> String {
        match self.source_error() {
            Some(kube::Error::Api(status)) => {
                format!("{self}: {} ({})", status.message, status.reason)
            }
            Some(other) => format!("{self}: {other}"),
            None => self.to_string(),
        }
    }
}

pub fn classify(error: &kube::Error) -> ErrorKind {
    match error {
        kube::Error::Api(status) if status.is_conflict() || status.is_already_exists() => {
            ErrorKind::Conflict
        }
        kube::Error::Api(status) if status.is_forbidden() => ErrorKind::Forbidden,
        kube::Error::Api(status) if status.is_invalid() || status.code == 400 => {
            ErrorKind::InvalidSpec
        }
        _ => ErrorKind::Transient,
    }
}

/// The loop's error class of each kind: the class picks the requeue in [`policy`].
pub fn class(kind: ErrorKind) -> ErrorClass {
    match kind {
        ErrorKind::Conflict => ErrorClass::Conflict,
        ErrorKind::Transient | ErrorKind::InvalidSpec => ErrorClass::Transient,
        ErrorKind::Forbidden => ErrorClass::Permanent,
    }
}

/// The one requeue policy of the CSV loop: conflicts retried after 100 ms; transient errors and
/// `Next::Backoff` waits 1 s doubling up to 60 s; forbidden writes after 60 s; a run abandoned after 60 s
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
pub fn requeue_for(kind: ErrorKind, attempts: u32) -> Duration {
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
    #[case::a_conflict_is_retried_at_once(api(409, "Conflict"), ErrorKind::Conflict)]
    #[case::an_existing_object_is_a_conflict(api(409, "AlreadyExists"), ErrorKind::Conflict)]
    #[case::forbidden_is_forbidden(api(403, "Forbidden"), ErrorKind::Forbidden)]
    #[case::an_invalid_object_is_an_invalid_spec(api(422, "Invalid"), ErrorKind::InvalidSpec)]
    #[case::a_server_error_is_transient(api(500, "InternalError"), ErrorKind::Transient)]
    fn api_errors_are_classified_by_status(#[case] error: kube::Error, #[case] kind: ErrorKind) {
        assert_eq!(classify(&error), kind);
    }

    #[rstest]
    #[case::conflicts_retry_almost_immediately(ErrorKind::Conflict, 5, Duration::from_millis(100))]
    #[case::the_first_transient_retry_waits_a_second(
        ErrorKind::Transient,
        0,
        Duration::from_secs(1)
    )]
    #[case::transient_retries_double(ErrorKind::Transient, 3, Duration::from_secs(8))]
    #[case::transient_retries_are_capped_at_a_minute(
        ErrorKind::Transient,
        30,
        Duration::from_secs(60)
    )]
    #[case::forbidden_retries_slowly(ErrorKind::Forbidden, 0, Duration::from_secs(60))]
    fn the_requeue_policy_depends_on_the_kind(
        #[case] kind: ErrorKind,
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
        assert_eq!(e.kind(), ErrorKind::Forbidden);
    }
}
