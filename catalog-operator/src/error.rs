//! Errors of catalog-operator's actors and their one classification into the reconcile loop's requeue policy
//! (house style, as olm-operator's `error.rs`: `kind()` → `class(kind)` → `policy()`).

use messages::key::ObjectKey;
use olm_runtime::reconcile::{ErrorClass, Policy};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot write the status of Subscription {key}")]
    SubscriptionStatus {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write the status of InstallPlan {key}")]
    InstallPlanStatus {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write the status of CatalogSource {key}")]
    CatalogSourceStatus {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("cannot resolve namespace {namespace}")]
    Resolve {
        namespace: String,
        #[source]
        source: SyncError,
    },
}

/// How an error should be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Network, timeouts, 5xx, anything unclassified: exponential backoff.
    Transient,
    /// 409: someone else wrote first; retry almost immediately (the next run reads the newer object).
    Conflict,
    /// 404: the object is gone; its deletion event ends the actor.
    Gone,
    /// 400/422: what we built is rejected; retrying the same cannot help until the input changes.
    Invalid,
    /// 403: we may not do this; retry slowly.
    Forbidden,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::SubscriptionStatus { source, .. }
            | Error::InstallPlanStatus { source, .. }
            | Error::CatalogSourceStatus { source, .. } => classify(source),
            Error::Resolve { source, .. } => match source.api_error() {
                Some(e) => classify(e),
                None => ErrorKind::Transient,
            },
        }
    }
}

pub fn classify(error: &kube::Error) -> ErrorKind {
    match error {
        kube::Error::Api(status) if status.is_conflict() || status.is_already_exists() => {
            ErrorKind::Conflict
        }
        kube::Error::Api(status) if status.is_not_found() => ErrorKind::Gone,
        kube::Error::Api(status) if status.is_forbidden() => ErrorKind::Forbidden,
        kube::Error::Api(status) if status.is_invalid() || status.code == 400 => ErrorKind::Invalid,
        _ => ErrorKind::Transient,
    }
}

/// The loop's error class of each kind (`None`: not an error to retry, the run is done).
pub fn class(kind: ErrorKind) -> Option<ErrorClass> {
    match kind {
        ErrorKind::Conflict => Some(ErrorClass::Conflict),
        ErrorKind::Transient => Some(ErrorClass::Transient),
        ErrorKind::Invalid | ErrorKind::Forbidden => Some(ErrorClass::Permanent),
        ErrorKind::Gone => None,
    }
}

/// The one requeue policy of catalog-operator's loops: conflicts after 100 ms; transient errors and
/// `Next::Backoff` waits 250 ms doubling up to 30 s (namespace resolution's backoff before the contract);
/// rejected or forbidden writes after 60 s (a change of input runs earlier); a run abandoned after 5 min
/// (resolution of a large catalog and bundle fetches take longer than an API call).
pub fn policy() -> Policy {
    Policy {
        base: Duration::from_millis(250),
        cap: Duration::from_secs(30),
        conflict: Duration::from_millis(100),
        permanent: Duration::from_secs(60),
        deadline: Duration::from_secs(300),
    }
}

/// What a namespace resolution run can fail with (`namespace::sync`).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("cannot create an InstallPlan")]
    CreatePlan(#[source] kube::Error),
    #[error("resolution task failed")]
    Task(#[source] tokio::task::JoinError),
    #[error("cannot read a referenced InstallPlan")]
    ReadPlan(#[source] kube::Error),
}

impl SyncError {
    /// The API error behind this one, if any (for the requeue policy in `crate::error`).
    pub fn api_error(&self) -> Option<&kube::Error> {
        match self {
            SyncError::CreatePlan(source) | SyncError::ReadPlan(source) => Some(source),
            SyncError::Task(_) => None,
        }
    }
}

/// The error and its causes on one line.
pub fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(l) = link {
        if !text.is_empty() {
            text.push_str(": ");
        }
        // An API server's refusal reads as its own message (which names the object and the field) and reason,
        // not kube's debug dump of the whole Status, which repeats the message three times.
        if let Some(kube::Error::Api(s)) = l.downcast_ref::<kube::Error>() {
            text.push_str(&s.message);
            if !s.reason.is_empty() {
                text.push_str(&format!(" ({})", s.reason));
            }
            break;
        }
        text.push_str(&l.to_string());
        link = l.source();
    }
    text
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

    #[test]
    fn an_api_refusal_reads_as_its_message() {
        let e = kube::Error::Api(Box::new(kube::core::Status {
            code: 422,
            reason: "Invalid".into(),
            message: "ConfigMap \"c\" is invalid: metadata.labels: Invalid value".into(),
            ..Default::default()
        }));
        assert_eq!(
            error_text(&e),
            "ConfigMap \"c\" is invalid: metadata.labels: Invalid value (Invalid)"
        );
    }

    #[rstest]
    #[case::a_conflict_is_retried_soon(
        api(409, "Conflict"),
        ErrorKind::Conflict,
        Some(ErrorClass::Conflict)
    )]
    #[case::an_existing_object_is_a_conflict(
        api(409, "AlreadyExists"),
        ErrorKind::Conflict,
        Some(ErrorClass::Conflict)
    )]
    #[case::a_vanished_object_is_not_retried(api(404, "NotFound"), ErrorKind::Gone, None)]
    #[case::forbidden_is_retried_slowly(
        api(403, "Forbidden"),
        ErrorKind::Forbidden,
        Some(ErrorClass::Permanent)
    )]
    #[case::an_invalid_object_is_retried_slowly(
        api(422, "Invalid"),
        ErrorKind::Invalid,
        Some(ErrorClass::Permanent)
    )]
    #[case::a_server_error_is_transient(
        api(500, "InternalError"),
        ErrorKind::Transient,
        Some(ErrorClass::Transient)
    )]
    fn api_errors_are_classified(
        #[case] error: kube::Error,
        #[case] kind: ErrorKind,
        #[case] class_: Option<ErrorClass>,
    ) {
        let e = Error::SubscriptionStatus {
            key: ObjectKey::new("ns", "sub"),
            source: error,
        };
        assert_eq!(e.kind(), kind);
        assert_eq!(class(kind), class_);
    }

    #[rstest]
    #[case::conflicts_retry_soon(ErrorClass::Conflict, 5, Duration::from_millis(100))]
    #[case::the_first_transient_retry(ErrorClass::Transient, 0, Duration::from_millis(250))]
    #[case::transient_retries_double(ErrorClass::Transient, 3, Duration::from_secs(2))]
    #[case::transient_retries_are_capped(ErrorClass::Transient, 30, Duration::from_secs(30))]
    #[case::permanent_retries_slowly(ErrorClass::Permanent, 0, Duration::from_secs(60))]
    fn one_requeue_policy(
        #[case] class_: ErrorClass,
        #[case] attempts: u32,
        #[case] wait: Duration,
    ) {
        assert_eq!(policy().error_delay(class_, attempts), wait);
    }
}
