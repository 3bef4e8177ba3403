//! How namespace resolution hands a new InstallPlan to its actor (a leaf module: no actor types). Resolution
//! creates the plan object only; the plan's first status (its steps, bundle lookups and phase) is put here under
//! the plan's key and the plan's actor is nudged ([`HandedOver`], through the InstallPlan registry). The actor
//! takes the status on its next run (the nudge's, or the run of the plan's first watch event when the nudge
//! came before the actor existed) and writes it: from creation on, the InstallPlan actor is the one writer of
//! its plan's status.
//!
//! A status that is lost (the process restarted between the create and the write) is handed over again: the
//! plan stays without status, and resolution finishes such a plan instead of planning the step twice
//! (`namespace::reuse::unfinished`).

use messages::crd::install_plan::InstallPlanStatus;
use messages::key::ObjectKey;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// First statuses handed over and not taken yet, by plan.
#[derive(Default)]
pub struct Handovers(Mutex<HashMap<ObjectKey, InstallPlanStatus>>);

impl Handovers {
    pub fn give(&self, key: ObjectKey, status: InstallPlanStatus) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, status);
    }

    pub fn take(&self, key: &ObjectKey) -> Option<InstallPlanStatus> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
    }
}

/// A first status waits for the actor of this plan.
#[derive(actix::Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct HandedOver;

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::InstallPlanPhase;

    #[test]
    fn a_status_is_taken_once_and_a_newer_one_replaces_it() {
        let h = Handovers::default();
        let key = ObjectKey::new("ns", "install-abcde");
        let with = |phase| InstallPlanStatus {
            phase,
            ..Default::default()
        };
        h.give(key.clone(), with(InstallPlanPhase::Installing));
        h.give(key.clone(), with(InstallPlanPhase::RequiresApproval));
        assert_eq!(
            h.take(&key).map(|s| s.phase),
            Some(InstallPlanPhase::RequiresApproval)
        );
        assert!(h.take(&key).is_none());
    }
}
