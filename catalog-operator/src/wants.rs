//! The messages between Subscription actors and namespace resolution (a leaf module: no actor types, so
//! `subscription` and `namespace` both import it and not each other).
//!
//! ```text
//! SubscriptionActor ──Want { Subscription(latest, applied seq) | SubscriptionGone }──▶ NamespaceActor (its ns)
//! NamespaceActor ──Forward(key, Decision { seq, status })──▶ SubscriptionActor ──status write──▶ API server
//! ```
//!
//! A Subscription sends the object as it knows it (its own status writes included), so resolution never waits
//! for its store to show a write it was told about. Each decision carries a sequence number; the Subscription
//! acknowledges it in its next want, and until then resolution reads the decided status in place of the one
//! the want carries (so a want that crossed a decision never makes resolution plan the same change twice).

use actix::Message;
use messages::crd::subscription::{Subscription, SubscriptionStatus};
use std::sync::Arc;

/// What a Subscription actor tells its namespace's resolution.
#[derive(Debug, Clone)]
pub enum News {
    /// The Subscription as its actor knows it, and the last decision it applied (written or already true).
    Subscription {
        sub: Arc<Subscription>,
        applied: Option<u64>,
    },
    /// The Subscription is gone (its actor stopped).
    SubscriptionGone { name: String },
}

/// News for the resolution of one namespace; it also asks for a resolution run.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Want {
    pub namespace: String,
    pub news: News,
}

/// Resolution's answer to one Subscription: the status it should have. The Subscription actor writes it.
#[derive(Message, Debug, Clone, PartialEq)]
#[rtype(result = "()")]
pub struct Decision {
    /// Increases with every decision of a namespace's resolution (acknowledged in [`News::Subscription`]).
    pub seq: u64,
    pub status: SubscriptionStatus,
}

/// Decision numbers, process-wide (one counter in `Shared`'s process state, shared by every namespace actor): a
/// namespace actor that is started again (after a panic, or stopped and restarted by its router) must not number
/// its decisions from 1 again, or every Subscription actor that applied a higher number from the previous one
/// drops them as already applied, keeps a stale status, and the next resolution plans its change a second time
/// (chaos defect 2: a Subscription stalled at `UpgradePending` beside a duplicate InstallPlan).
#[derive(Clone, Debug)]
pub struct DecisionNumbers(Arc<std::sync::atomic::AtomicU64>);

impl Default for DecisionNumbers {
    fn default() -> Self {
        Self(Arc::new(std::sync::atomic::AtomicU64::new(1)))
    }
}

impl DecisionNumbers {
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}
