//! Messages every per-object actor understands: a new observation of its object, a version of it that does not
//! decode, its deletion, a requeue.

use actix::Message;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What the per-kind registry routes to the one actor of an object.
#[derive(Debug)]
pub enum ObjectEvent<K> {
    /// The object as last seen by the watch (added, modified, or relisted).
    Observed(Arc<K>),
    /// The object is gone from the cluster; the actor stops after handling this.
    Deleted,
    /// The object's current version does not decode as its kind (the decoding error): the version the actor
    /// holds is stale, so it acts on it no more (`olm_runtime::reconcile::hold`) until a version that decodes
    /// arrives as `Observed`, or the object is deleted (`Deleted`, handled with the last version that decoded).
    Undecodable(String),
}

impl<K: 'static> Message for ObjectEvent<K> {
    type Result = ();
}

/// Why an actor is asked to reconcile again (its own waits and retries are its loop's one timer, never a
/// requeue). Feeds the journal and logs only: every requeue runs the same level-triggered reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequeueReason {
    /// Something this object depends on changed (e.g. its OperatorGroup, a CRD, a provided-API set).
    DependencyChanged,
    /// Periodic resync.
    Resync,
}

/// A level-triggered nudge to reconcile again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requeue {
    pub reason: RequeueReason,
}

impl Message for Requeue {
    type Result = ();
}

/// Ask a registry how many object actors it currently runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActorCount;

impl Message for ActorCount {
    type Result = usize;
}
