//! Table tests of the error classification, its requeue class, and the chain formatter.

use super::*;
use crate::outcome::ErrorClass;
use rstest::rstest;

fn api(code: u16, reason: &str) -> kube::Error {
    kube::Error::Api(Box::new(Status {
        code,
        reason: reason.into(),
        message: "m".into(),
        ..Default::default()
    }))
}

fn io(kind: std::io::ErrorKind) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(kind, "reset"))
}

#[rstest]
#[case::a_missing_object(api(404, "NotFound"), Class::NotFound)]
#[case::a_newer_version(api(409, "Conflict"), Class::Conflict)]
#[case::a_taken_name(api(409, "AlreadyExists"), Class::AlreadyExists)]
#[case::a_409_without_reason_is_a_conflict(api(409, ""), Class::Conflict)]
#[case::forbidden(api(403, "Forbidden"), Class::Forbidden)]
#[case::an_invalid_object(api(422, "Invalid"), Class::Invalid)]
#[case::a_bad_request_is_invalid(api(400, "BadRequest"), Class::Invalid)]
#[case::an_expired_version(api(410, "Expired"), Class::Gone)]
#[case::throttled(api(429, "TooManyRequests"), Class::TooManyRequests)]
#[case::an_internal_error(api(500, "InternalError"), Class::ServerError)]
#[case::a_webhook_timeout(api(504, "Timeout"), Class::ServerError)]
#[case::unauthorized_is_other(api(401, "Unauthorized"), Class::Other)]
#[case::the_code_wins_over_the_reason(api(404, "Conflict"), Class::NotFound)]
#[case::a_reason_without_code(api(0, "NotFound"), Class::NotFound)]
#[case::an_existing_name_without_code(api(0, "AlreadyExists"), Class::AlreadyExists)]
#[case::an_unknown_reason_without_code(api(0, "Whatever"), Class::Other)]
#[case::a_broken_stream(io(std::io::ErrorKind::ConnectionReset), Class::Transport)]
#[case::a_timeout(kube::Error::Service("timed out".into()), Class::Transport)]
#[case::an_undecodable_body(
    kube::Error::SerdeError(serde::de::Error::custom("not JSON")),
    Class::Other
)]
#[case::no_tls_stack(kube::Error::TlsRequired, Class::Other)]
fn errors_are_classified(#[case] error: kube::Error, #[case] class: Class) {
    assert_eq!(classify(&error), class);
    assert!(is(&error, class));
}

#[rstest]
#[case::conflicts_retry_soon(Class::Conflict, ErrorClass::Conflict)]
#[case::a_taken_name_retries_soon(Class::AlreadyExists, ErrorClass::Conflict)]
#[case::invalid_is_permanent(Class::Invalid, ErrorClass::Permanent)]
#[case::forbidden_is_permanent(Class::Forbidden, ErrorClass::Permanent)]
#[case::not_found_backs_off(Class::NotFound, ErrorClass::Transient)]
#[case::gone_backs_off(Class::Gone, ErrorClass::Transient)]
#[case::throttling_backs_off(Class::TooManyRequests, ErrorClass::Transient)]
#[case::server_errors_back_off(Class::ServerError, ErrorClass::Transient)]
#[case::transport_backs_off(Class::Transport, ErrorClass::Transient)]
#[case::other_backs_off(Class::Other, ErrorClass::Transient)]
fn each_class_has_one_requeue(#[case] class: Class, #[case] retry: ErrorClass) {
    assert_eq!(ErrorClass::of(class), retry);
}

/// A layer of context over a cause, as the crates' `thiserror` variants are.
#[derive(Debug, thiserror::Error)]
#[error("{text}")]
struct Layer {
    text: &'static str,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

fn layers(texts: &[&'static str], last: Option<Box<dyn std::error::Error + Send + Sync>>) -> Layer {
    let mut source = last;
    let mut texts = texts.iter().rev();
    let mut top = Layer {
        text: texts.next().copied().unwrap_or(""),
        source: source.take(),
    };
    for text in texts {
        top = Layer {
            text,
            source: Some(Box::new(top)),
        };
    }
    top
}

fn status(code: u16, reason: &str, message: &str) -> Box<dyn std::error::Error + Send + Sync> {
    Box::new(kube::Error::Api(Box::new(Status {
        code,
        reason: reason.into(),
        message: message.into(),
        ..Default::default()
    })))
}

#[rstest]
#[case::one_error(layers(&["cannot sync"], None), "cannot sync")]
#[case::every_cause(layers(&["cannot sync", "cannot read", "io"], None), "cannot sync: cannot read: io")]
#[case::an_api_refusal_reads_as_its_message(
    layers(&["cannot create ConfigMap c"], Some(status(422, "Invalid", "ConfigMap \"c\" is invalid: metadata.labels"))),
    "cannot create ConfigMap c: ConfigMap \"c\" is invalid: metadata.labels (Invalid)"
)]
#[case::a_status_without_reason(
    layers(&["cannot list"], Some(status(500, "", "etcd down"))),
    "cannot list: etcd down"
)]
#[case::an_empty_status_names_its_code(
    layers(&["cannot list"], Some(status(503, "", ""))),
    "cannot list: the API server answered 503"
)]
#[case::a_cause_repeated_by_its_wrapper_is_printed_once(
    layers(&["cannot fetch: connection refused", "connection refused"], None),
    "cannot fetch: connection refused"
)]
#[case::a_repeated_layer_is_printed_once(layers(&["cannot sync", "cannot sync", "io"], None), "cannot sync: io")]
#[case::an_empty_layer_adds_nothing(layers(&["cannot sync", "", "io"], None), "cannot sync: io")]
fn chains_read_on_one_line(#[case] error: Layer, #[case] text: &str) {
    assert_eq!(chain(&error), text);
}

#[test]
fn a_bare_api_error_reads_as_its_message() {
    let e = kube::Error::Api(Box::new(Status {
        code: 409,
        reason: "AlreadyExists".into(),
        message: "configmaps \"c\" already exists".into(),
        ..Default::default()
    }));
    assert_eq!(chain(&e), "configmaps \"c\" already exists (AlreadyExists)");
}

#[rstest]
#[case::a_conflict(Class::Conflict, true)]
#[case::a_taken_name(Class::AlreadyExists, true)]
#[case::not_found(Class::NotFound, false)]
#[case::invalid(Class::Invalid, false)]
fn both_409s_are_conflicts(#[case] class: Class, #[case] conflict: bool) {
    assert_eq!(class.is_conflict(), conflict);
}
