//! What a failed API call means, and how an error reads on one line: the one classification and the one chain
//! formatter of both operators and package-server.
//!
//! - [`classify`] sorts a `kube::Error` into a [`Class`]: by the HTTP status code the API server answered with
//!   (a 409 split by its reason into [`Class::Conflict`] and [`Class::AlreadyExists`]), by the reason alone when a
//!   status carries no code, and by kube's error variant when no answer came back ([`Class::Transport`]).
//! - [`ErrorClass::of`](crate::outcome::ErrorClass::of) maps a class to the reconcile loop's retry class, the
//!   decision both operators' policies share.
//!   **Invalid (422, and 400 Bad Request) is permanent**: the API server rejected the object as built, and sending
//!   the same object again cannot succeed until its input (the CSV, the plan, the catalog) changes, which runs the
//!   loop anyway; so it is retried at the policy's slow `permanent` delay, never in a fast backoff. Forbidden is
//!   permanent for the same reason (the RBAC that would allow it is a change of input). Conflicts (a newer version
//!   or an existing object) are retried at once; everything else (5xx, 429, 410, transport, unclassified) backs
//!   off.
//! - [`chain`] prints an error and its sources joined with ": ", skipping a source whose text repeats the text
//!   before it; an API server's refusal reads as its own message and reason, not kube's dump of the Status.

use kube::core::Status;

/// What a `kube::Error` means to its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// 404: the object (or its kind) does not exist.
    NotFound,
    /// 409 Conflict: someone else wrote a newer version first.
    Conflict,
    /// 409 AlreadyExists: a create found the name taken.
    AlreadyExists,
    /// 403: this identity may not do this.
    Forbidden,
    /// 422, and 400 Bad Request: the object or request as built is rejected.
    Invalid,
    /// 410: the resource version asked for is too old (a watch or list must start over).
    Gone,
    /// 429: the API server asks us to slow down.
    TooManyRequests,
    /// 5xx: the API server (or what it called, such as a webhook) failed.
    ServerError,
    /// No answer: connection, TLS, timeouts, a broken response stream.
    Transport,
    /// Anything else (a body that does not decode, a request that cannot be built, 401, other codes).
    Other,
}

impl Class {
    /// A 409 of either reason: another writer got there first.
    pub fn is_conflict(self) -> bool {
        matches!(self, Class::Conflict | Class::AlreadyExists)
    }
}

/// The class of an API call's error.
pub fn classify(error: &kube::Error) -> Class {
    match error {
        kube::Error::Api(status) => classify_status(status),
        kube::Error::HyperError(_)
        | kube::Error::Service(_)
        | kube::Error::ReadEvents(_)
        | kube::Error::HttpError(_) => Class::Transport,
        _ => Class::Other,
    }
}

/// The class of an API server's Status: its code, or its reason when it has no code.
pub fn classify_status(status: &Status) -> Class {
    match status.code {
        400 | 422 => Class::Invalid,
        403 => Class::Forbidden,
        404 => Class::NotFound,
        409 if status.reason == "AlreadyExists" => Class::AlreadyExists,
        409 => Class::Conflict,
        410 => Class::Gone,
        429 => Class::TooManyRequests,
        500..=599 => Class::ServerError,
        0 => match status.reason.as_str() {
            "BadRequest" | "Invalid" => Class::Invalid,
            "Forbidden" => Class::Forbidden,
            "NotFound" => Class::NotFound,
            "AlreadyExists" => Class::AlreadyExists,
            "Conflict" => Class::Conflict,
            "Gone" | "Expired" => Class::Gone,
            "TooManyRequests" => Class::TooManyRequests,
            "InternalError" | "ServiceUnavailable" | "ServerTimeout" | "Timeout" => {
                Class::ServerError
            }
            _ => Class::Other,
        },
        _ => Class::Other,
    }
}

/// Whether the error is the API server's answer of this class (shorthand for `classify(e) == class`).
pub fn is(error: &kube::Error, class: Class) -> bool {
    classify(error) == class
}

/// The error and its sources on one line, joined with ": ". A source whose text is the text before it (or ends
/// it, as a wrapper interpolating its cause does) is skipped; an API Status ends the chain as its message and
/// reason.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(l) = link {
        // An API server's refusal reads as its own message (which names the object and the field) and reason,
        // not kube's debug dump of the whole Status, which repeats the message three times.
        let part = match l.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(s)) => Some(status_text(s)),
            _ => l.downcast_ref::<Status>().map(status_text),
        };
        let is_status = part.is_some();
        let part = part.unwrap_or_else(|| l.to_string());
        if !part.is_empty() && !text.ends_with(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        if is_status {
            break;
        }
        link = l.source();
    }
    text
}

/// An API Status as a person reads it: "message (Reason)".
fn status_text(s: &Status) -> String {
    match (s.message.is_empty(), s.reason.is_empty()) {
        (false, false) => format!("{} ({})", s.message, s.reason),
        (false, true) => s.message.clone(),
        (true, false) => s.reason.clone(),
        (true, true) => format!("the API server answered {}", s.code),
    }
}

#[cfg(test)]
mod tests;
