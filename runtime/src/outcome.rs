//! What a run of the reconcile contract ends in, and the loop's timing policy: the actix-free half of
//! [`crate::reconcile`], so pure decisions (the CSV machine, the plan tables) return these types directly and
//! their tests need no actor system.

use crate::error::Class;
use std::time::Duration;

/// What a run that ended well asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing: only a new cause (event, message, resync) runs it again.
    Idle,
    /// A named wait on something no watch reports (an install timeout, a registry poll).
    After(Duration),
    /// A rate-limited retry of something not there yet (exponential per object, reset by progress).
    Backoff,
}

/// The classes of failure a run may end in; each has one requeue policy ([`Policy::error_delay`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// A transient failure (network, 5xx, throttling): retried with exponential backoff.
    Transient,
    /// A write raced another writer (409): retried soon, the next run observes the newer object.
    Conflict,
    /// A failure retrying cannot fix (bad input, forbidden): retried slowly, a change of input runs it again.
    Permanent,
    /// The run was abandoned after the loop's deadline.
    Deadline,
}

impl ErrorClass {
    /// The retry class of an API error class (`crate::error`'s module header: invalid and forbidden are
    /// permanent). A caller that ends its actor on [`Class::NotFound`] checks for it first.
    pub fn of(class: Class) -> Self {
        match class {
            Class::Conflict | Class::AlreadyExists => ErrorClass::Conflict,
            Class::Invalid | Class::Forbidden => ErrorClass::Permanent,
            Class::NotFound
            | Class::Gone
            | Class::TooManyRequests
            | Class::ServerError
            | Class::Transport
            | Class::Other => ErrorClass::Transient,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Transient => "transient",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Permanent => "permanent",
            ErrorClass::Deadline => "deadline",
        }
    }
}

/// One classified error: the class decides the requeue, the message is logged and journaled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub class: ErrorClass,
    pub message: String,
}

/// How one run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done(Next),
    Failed(Failure),
    /// The object is gone (the actor stops): no timer.
    Finished,
}

impl Outcome {
    pub fn failed(class: ErrorClass, error: &(dyn std::error::Error + 'static)) -> Self {
        Outcome::Failed(Failure {
            class,
            message: crate::error::chain(error),
        })
    }

    /// The outcome of a run that failed with `error`, classified by the binary's error policy (its `class`):
    /// `None` (the object is gone: its deletion event stops the actor) ends the run with no timer.
    pub fn from_error(
        class: Option<ErrorClass>,
        error: &(dyn std::error::Error + 'static),
    ) -> Self {
        match class {
            Some(class) => Outcome::failed(class, error),
            None => Outcome::Done(Next::Idle),
        }
    }
}

/// The loop's timing policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The first retry delay of an error or a `Next::Backoff` wait; doubled each time.
    pub base: Duration,
    /// The largest backoff delay.
    pub cap: Duration,
    /// The delay before retrying a first `Conflict` (the next run reads the newer object); doubled for each
    /// conflict in a row, up to `cap`: a store that lags behind (a write whose answer was lost) kept a loop
    /// retrying every 100 ms, and under chaos each of those runs could kill its actor (seed 41's restart storm).
    pub conflict: Duration,
    /// The delay before retrying a `Permanent` error (a change of input runs earlier).
    pub permanent: Duration,
    /// The longest one run may take.
    pub deadline: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
            conflict: Duration::from_millis(100),
            permanent: Duration::from_secs(300),
            deadline: Duration::from_secs(60),
        }
    }
}

impl Policy {
    /// The exponential delay of the `attempt`-th consecutive retry (0-based), before jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The delay after an error of `class`, the `attempt`-th in a row, before jitter.
    pub fn error_delay(&self, class: ErrorClass, attempt: u32) -> Duration {
        match class {
            ErrorClass::Transient | ErrorClass::Deadline => self.backoff(attempt),
            ErrorClass::Conflict => {
                let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
                self.conflict.saturating_mul(factor).min(self.cap)
            }
            ErrorClass::Permanent => self.permanent,
        }
    }
}

/// A delay drawn uniformly in `[d/2, d]` (`unit` in `[0, 1)`): full-jitter's spread without its zero delays.
pub fn jitter(delay: Duration, unit: f64) -> Duration {
    let unit = unit.clamp(0.0, 1.0);
    delay.mul_f64(0.5 + unit / 2.0)
}
