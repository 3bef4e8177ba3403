//! What the view remembers between runs so that a run repeats no request whose answer cannot have changed: the
//! InstallPlan each Subscription was last adopted with (or that it was seen with none), the phase each CSV's
//! owned objects were last adopted at, and the RBAC bindings last listed per Operator (olm-operator does not
//! watch bindings). A failed run clears it all, so the next run redoes everything; a restart starts empty.

use super::components::Component;
use messages::key::ObjectKey;
use std::collections::HashMap;

/// The plan a Subscription was last seen with by this process.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// Seen with no plan.
    NoPlan,
    Plan(String),
}

/// How a Subscription's current plan relates to what the view saw of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanChange {
    /// The plan it was last adopted with: nothing to do.
    Same,
    /// Its first plan, the Subscription seen before with none: catalog-operator labelled the plan when it made
    /// it (`install_plan::operator_label::of_plan`), and no older plan carries the label: nothing to list.
    First,
    /// Another plan than last time, or a Subscription this process has not seen before: its plans are listed.
    Changed,
}

#[derive(Default, Debug)]
pub struct Memo {
    plans: HashMap<ObjectKey, Seen>,
    phases: HashMap<String, String>,
    bindings: HashMap<String, Vec<Component>>,
}

impl Memo {
    /// How the Subscription's current plan relates to the one last seen (and remember it).
    pub fn plan_change(&mut self, sub: &ObjectKey, plan: &str) -> PlanChange {
        match self.plans.insert(sub.clone(), Seen::Plan(plan.to_owned())) {
            Some(Seen::Plan(p)) if p == plan => PlanChange::Same,
            Some(Seen::NoPlan) => PlanChange::First,
            Some(Seen::Plan(_)) | None => PlanChange::Changed,
        }
    }

    /// The Subscription was seen with no plan.
    pub fn no_plan(&mut self, sub: &ObjectKey) {
        self.plans.insert(sub.clone(), Seen::NoPlan);
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
        assert_eq!(m.plan_change(&sub, "install-1"), PlanChange::Changed);
        assert_eq!(m.plan_change(&sub, "install-1"), PlanChange::Same);
        assert_eq!(m.plan_change(&sub, "install-2"), PlanChange::Changed);
        assert_eq!(
            m.plan_change(&ObjectKey::new("other", "s"), "install-2"),
            PlanChange::Changed
        );
    }

    #[test]
    fn the_first_plan_of_a_subscription_seen_without_one_is_first() {
        let mut m = Memo::default();
        let sub = ObjectKey::new("ns", "s");
        m.no_plan(&sub);
        assert_eq!(m.plan_change(&sub, "install-1"), PlanChange::First);
        assert_eq!(m.plan_change(&sub, "install-1"), PlanChange::Same);
        assert_eq!(m.plan_change(&sub, "install-2"), PlanChange::Changed);
        // A plan lost (the Subscription reset to none) and a new one: first again.
        m.no_plan(&sub);
        assert_eq!(m.plan_change(&sub, "install-3"), PlanChange::First);
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
