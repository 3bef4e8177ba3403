//! How namespace resolution hands a new InstallPlan to its actor (a leaf module: no actor types). Resolution
//! creates the plan object only; the plan's first status (its steps, bundle lookups and phase) is put here under
//! the plan's key and the plan's actor is nudged ([`HandedOver`], through the InstallPlan registry). The actor
//! takes the status on its next run (the nudge's, or the run of the plan's first watch event when the nudge
//! came before the actor existed) and writes it: from creation on, the InstallPlan actor is the one writer of
//! its plan's status.
//!
//! A first status stays here until its actor has written it ([`Handovers::written`]) or the plan is gone
//! ([`Handovers::forget`]): an actor stopped or panicking before or during the write (its restart by the registry
//! replays the plan, still without status) finds it again. A nudge can be lost (it may come before the plan's
//! actor exists, and chaos drops messages), so resolution nudges again every [`NUDGE_AGAIN`] while the status
//! waits (`namespace::effects`). Only the end of the process (a restart, a leader that lost its Lease) loses a
//! status: the plan stays without status, and resolution in the next leader finishes such a plan instead of
//! planning the step twice (`namespace::reuse::unfinished`), also when the plan's Subscriptions already point at
//! it (a plan without status that no handover here holds is an orphan: `namespace::observe::Observed::orphans`).

use messages::crd::install_plan::InstallPlanStatus;
use messages::key::ObjectKey;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// First statuses handed over and not written yet, by plan; `done` wakes whoever waits for one to be written
/// ([`Handovers::written_within`]).
#[derive(Default)]
pub struct Handovers {
    waiting: Mutex<HashMap<ObjectKey, InstallPlanStatus>>,
    done: tokio::sync::Notify,
}

impl Handovers {
    pub fn give(&self, key: ObjectKey, status: InstallPlanStatus) {
        self.lock().insert(key, status);
    }

    /// The status waiting for plan `key`, left in place until [`Self::written`].
    pub fn pending(&self, key: &ObjectKey) -> Option<InstallPlanStatus> {
        self.lock().get(key).cloned()
    }

    /// Whether a status waits for plan `key`.
    pub fn waits(&self, key: &ObjectKey) -> bool {
        self.lock().contains_key(key)
    }

    /// `status` was written to plan `key`: it no longer waits (unless a newer one was given since).
    pub fn written(&self, key: &ObjectKey, status: &InstallPlanStatus) {
        let removed = {
            let mut map = self.lock();
            map.get(key) == Some(status) && map.remove(key).is_some()
        };
        if removed {
            self.done.notify_waiters();
        }
    }

    /// Plan `key` has a status already, or is gone: nothing waits for it.
    pub fn forget(&self, key: &ObjectKey) {
        if self.lock().remove(key).is_some() {
            self.done.notify_waiters();
        }
    }

    /// Wait until plan `key`'s status no longer waits (written, or the plan gone), at most `limit`; whether it
    /// was. Resolution points Subscriptions at a new plan after this, so a Subscription never names a phase its
    /// plan does not show yet (OLM's order: the plan's status, then the Subscription's).
    pub async fn written_within(&self, key: &ObjectKey, limit: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.waits(key) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return !self.waits(key);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, InstallPlanStatus>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How often resolution nudges a plan's actor again while the plan's first status waits for it.
pub const NUDGE_AGAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// How long resolution waits for a new plan's first status to be written before it points the plan's
/// Subscriptions at it anyway (a write that takes longer is retried by the plan's actor; the Subscriptions then
/// name a phase the plan shows a moment later).
pub const WRITE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a waiting status may name a plan the store has never shown before it is dropped (the plan was
/// deleted before its actor existed).
pub const UNSEEN_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// A first status waits for the actor of this plan.
#[derive(actix::Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct HandedOver;

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::InstallPlanPhase;

    fn with(phase: InstallPlanPhase) -> InstallPlanStatus {
        InstallPlanStatus {
            phase,
            ..Default::default()
        }
    }

    #[test]
    fn a_status_waits_until_written_and_a_newer_one_replaces_it() {
        let h = Handovers::default();
        let key = ObjectKey::new("ns", "install-abcde");
        h.give(key.clone(), with(InstallPlanPhase::Installing));
        h.give(key.clone(), with(InstallPlanPhase::RequiresApproval));
        let first = h.pending(&key).expect("given");
        assert_eq!(first.phase, InstallPlanPhase::RequiresApproval);
        // Read again by an actor started again before it wrote: still there.
        assert_eq!(h.pending(&key), Some(first.clone()));
        h.written(&key, &first);
        assert!(!h.waits(&key));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_when_the_status_is_written_or_at_its_limit() {
        let h = std::sync::Arc::new(Handovers::default());
        let key = ObjectKey::new("ns", "install-abcde");
        h.give(key.clone(), with(InstallPlanPhase::Installing));
        let status = h.pending(&key).expect("given");
        let writer = {
            let (h, key) = (h.clone(), key.clone());
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                h.written(&key, &status);
            })
        };
        assert!(h.written_within(&key, WRITE_WAIT).await);
        writer.await.expect("writer");
        h.give(key.clone(), with(InstallPlanPhase::Installing));
        let start = tokio::time::Instant::now();
        assert!(!h.written_within(&key, WRITE_WAIT).await);
        assert_eq!(start.elapsed(), WRITE_WAIT);
    }

    #[test]
    fn writing_an_older_status_leaves_the_newer_waiting() {
        let h = Handovers::default();
        let key = ObjectKey::new("ns", "install-abcde");
        h.give(key.clone(), with(InstallPlanPhase::Installing));
        let old = h.pending(&key).expect("given");
        h.give(key.clone(), with(InstallPlanPhase::RequiresApproval));
        h.written(&key, &old);
        assert_eq!(
            h.pending(&key).map(|s| s.phase),
            Some(InstallPlanPhase::RequiresApproval)
        );
        h.forget(&key);
        assert!(!h.waits(&key));
    }
}
