//! Errors of catalog-operator's actors and their one classification into the reconcile loop's requeue policy
//! (house style, as olm-operator's `error.rs`: `kind()` → `class(kind)` → `policy()`).

use messages::key::ObjectKey;
use olm_runtime::error::{self as api, Class};
use olm_runtime::outcome::{ErrorClass, Policy};
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

impl Error {
    /// What the API error behind this one means ([`Class::Other`] when there is none).
    pub fn kind(&self) -> Class {
        match self {
            Error::SubscriptionStatus { source, .. }
            | Error::InstallPlanStatus { source, .. }
            | Error::CatalogSourceStatus { source, .. } => api::classify(source),
            Error::Resolve { source, .. } => source.api_error().map_or(Class::Other, api::classify),
        }
    }
}

/// The loop's error class of each kind (`None`: the object is gone, its deletion event ends the actor; the
/// rest is `olm_runtime::error`'s one mapping, invalid and forbidden permanent).
pub fn class(kind: Class) -> Option<ErrorClass> {
    match kind {
        Class::NotFound => None,
        other => Some(ErrorClass::of(other)),
    }
}

/// The one requeue policy of catalog-operator's loops: conflicts after 100 ms, doubling for each in a row; transient errors and
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

/// What a namespace resolution run can fail with (`namespace::actor`).
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

/// The error and its causes on one line (`olm_runtime::error::chain`).
pub use olm_runtime::error::chain as error_text;

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
        Class::Conflict,
        Some(ErrorClass::Conflict)
    )]
    #[case::an_existing_object_is_a_conflict(
        api(409, "AlreadyExists"),
        Class::AlreadyExists,
        Some(ErrorClass::Conflict)
    )]
    #[case::a_vanished_object_is_not_retried(api(404, "NotFound"), Class::NotFound, None)]
    #[case::forbidden_is_retried_slowly(
        api(403, "Forbidden"),
        Class::Forbidden,
        Some(ErrorClass::Permanent)
    )]
    #[case::an_invalid_object_is_retried_slowly(
        api(422, "Invalid"),
        Class::Invalid,
        Some(ErrorClass::Permanent)
    )]
    #[case::a_server_error_is_transient(
        api(500, "InternalError"),
        Class::ServerError,
        Some(ErrorClass::Transient)
    )]
    fn api_errors_are_classified(
        #[case] error: kube::Error,
        #[case] kind: Class,
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
    #[case::conflicts_retry_soon(ErrorClass::Conflict, 0, Duration::from_millis(100))]
    #[case::conflicts_in_a_row_back_off(ErrorClass::Conflict, 3, Duration::from_millis(800))]
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
