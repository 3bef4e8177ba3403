//! What the view remembers between runs so that a run repeats no request whose answer cannot have changed: the
//! InstallPlan each Subscription was last adopted with, the phase each CSV's owned objects were last adopted
//! at, and the RBAC bindings last listed per Operator (olm-operator does not watch bindings). A failed run clears
//! it all, so the next run redoes everything; a restart starts empty.

use super::components::Component;
use messages::key::ObjectKey;
use std::collections::HashMap;

#[derive(Default, Debug)]
pub struct Memo {
    plans: HashMap<ObjectKey, String>,
    phases: HashMap<String, String>,
    bindings: HashMap<String, Vec<Component>>,
}

impl Memo {
    /// Whether the Subscription's current plan differs from the one it was last adopted with (and remember it).
    pub fn plan_changed(&mut self, sub: &ObjectKey, plan: &str) -> bool {
        if self.plans.get(sub).is_some_and(|p| p == plan) {
            return false;
        }
        self.plans.insert(sub.clone(), plan.to_owned());
        true
    }

    /// Whether the CSV (by uid) is at another phase than when its owned objects were last adopted (and remember
    /// it). Components appear as a CSV moves through its phases, so one adoption per phase finds them all.
    pub fn phase_changed(&mut self, csv_uid: &str, phase: &str) -> bool {
        if self.phases.get(csv_uid).is_some_and(|p| p == phase) {
            return false;
        }
        self.phases.insert(csv_uid.to_owned(), phase.to_owned());
        true
    }

    /// The bindings listed for the Operator last time, if any.
    pub fn bindings(&self, operator: &str) -> Option<&Vec<Component>> {
        self.bindings.get(operator)
    }

    pub fn set_bindings(&mut self, operator: &str, found: Vec<Component>) {
        self.bindings.insert(operator.to_owned(), found);
    }

    /// Forget the Operator's bindings (its CSVs changed: they are listed again).
    pub fn forget_bindings(&mut self, operator: &str) {
        self.bindings.remove(operator);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_new_once() {
        let mut m = Memo::default();
        let sub = ObjectKey::new("ns", "s");
        assert!(m.plan_changed(&sub, "install-1"));
        assert!(!m.plan_changed(&sub, "install-1"));
        assert!(m.plan_changed(&sub, "install-2"));
        assert!(m.plan_changed(&ObjectKey::new("other", "s"), "install-2"));
    }

    #[test]
    fn a_phase_is_new_once_per_csv() {
        let mut m = Memo::default();
        assert!(m.phase_changed("uid-1", "Pending"));
        assert!(!m.phase_changed("uid-1", "Pending"));
        assert!(m.phase_changed("uid-1", "Succeeded"));
        assert!(m.phase_changed("uid-2", "Succeeded"));
    }

    #[test]
    fn bindings_are_kept_until_forgotten() {
        let mut m = Memo::default();
        assert!(m.bindings("a.ns").is_none());
        m.set_bindings("a.ns", Vec::new());
        assert!(m.bindings("a.ns").is_some());
        m.forget_bindings("a.ns");
        assert!(m.bindings("a.ns").is_none());
    }
}
