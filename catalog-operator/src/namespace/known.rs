//! What one namespace's resolution knows of its Subscriptions and InstallPlans beyond the reflector stores:
//! the Subscriptions as their actors last told it (wants, with their own status writes), the statuses it decided
//! that are not acknowledged yet, and the InstallPlans it created that its store does not show yet. Pure: the
//! namespace actor feeds it messages and store snapshots and reads the merged views; a message that changes
//! nothing resolution reads (an acknowledgement) is taken without a run.
//!
//! No resourceVersion is compared for order (it is opaque): a want is at least as new as the store's copy
//! (the store is updated before its event reaches the Subscription actor, and the actor sends its own writes);
//! a created plan is superseded once its store copy carries a status (only creation writes the first status).

use crate::wants::{Decision, DecisionNumbers, News};
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::{Subscription, SubscriptionStatus};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Default)]
pub struct Known {
    wants: BTreeMap<String, Arc<Subscription>>,
    gone: BTreeSet<String>,
    /// Decided and sent, not yet acknowledged: (sequence number, status).
    pending: BTreeMap<String, (u64, SubscriptionStatus)>,
    created: BTreeMap<String, Arc<InstallPlan>>,
    /// The process's decision numbers ([`DecisionNumbers`]).
    numbers: DecisionNumbers,
}

fn name_of(o: &impl kube::Resource) -> String {
    o.meta().name.clone().unwrap_or_default()
}

impl Known {
    /// Nothing known yet; decisions numbered from the process's counter.
    pub fn numbered(numbers: DecisionNumbers) -> Self {
        Self {
            numbers,
            ..Self::default()
        }
    }

    /// Take a Subscription actor's news. True when it changes what resolution reads: an acknowledgement of a
    /// decision, or the Subscription as resolution already reads it (its actor's own status write coming back),
    /// changes nothing and asks for no run.
    pub fn hear(&mut self, news: News) -> bool {
        match news {
            News::Subscription { sub, applied } => {
                let name = name_of(sub.as_ref());
                let before = self.effective(&name);
                if let (Some(applied), Some((seq, _))) = (applied, self.pending.get(&name))
                    && applied >= *seq
                {
                    self.pending.remove(&name);
                }
                self.gone.remove(&name);
                self.wants.insert(name.clone(), sub);
                let after = self.effective(&name);
                !matches!((before, after), (Some(b), Some(a)) if same_for_resolution(&b, &a))
            }
            News::SubscriptionGone { name } => {
                self.wants.remove(&name);
                self.pending.remove(&name);
                self.gone.insert(name);
                true
            }
        }
    }

    /// The Subscription as its actor last told it, with the decided status in place until acknowledged.
    fn effective(&self, name: &str) -> Option<Subscription> {
        let mut s = (**self.wants.get(name)?).clone();
        if let Some((_, status)) = self.pending.get(name) {
            s.status = Some(status.clone());
        }
        Some(s)
    }

    /// The namespace's Subscriptions: the store's names and the wants' (minus the gone), each as its actor told
    /// it when it did, with a decided status not yet acknowledged in place of its own.
    pub fn subscriptions(&mut self, stored: Vec<Arc<Subscription>>) -> Vec<Arc<Subscription>> {
        let mut out: BTreeMap<String, Arc<Subscription>> = BTreeMap::new();
        let mut still_stored = BTreeSet::new();
        for s in stored {
            let name = name_of(s.as_ref());
            if self.gone.contains(&name) {
                still_stored.insert(name);
                continue;
            }
            out.insert(name, s);
        }
        // A gone name the store no longer holds is forgotten (a new object of that name sends a want).
        self.gone.retain(|n| still_stored.contains(n));
        for (name, sub) in &self.wants {
            out.insert(name.clone(), sub.clone());
        }
        for (name, sub) in out.iter_mut() {
            if let Some((_, status)) = self.pending.get(name) {
                let mut s = (**sub).clone();
                s.status = Some(status.clone());
                *sub = Arc::new(s);
            }
        }
        out.into_values().collect()
    }

    /// The namespace's InstallPlans: the store's, and the ones this resolution created until the store shows
    /// them with their status.
    pub fn plans(&mut self, stored: Vec<Arc<InstallPlan>>) -> Vec<Arc<InstallPlan>> {
        let mut out: BTreeMap<String, Arc<InstallPlan>> = BTreeMap::new();
        for p in stored {
            let name = name_of(p.as_ref());
            if p.status.is_some() {
                self.created.remove(&name);
            }
            out.insert(name, p);
        }
        for (name, p) in &self.created {
            out.insert(name.clone(), p.clone());
        }
        out.into_values().collect()
    }

    pub fn created(&mut self, plan: InstallPlan) {
        self.created.insert(name_of(&plan), Arc::new(plan));
    }

    /// The decisions sent and not acknowledged yet (sent again on every run).
    pub fn unacknowledged(&self) -> Vec<(String, Decision)> {
        self.pending
            .iter()
            .map(|(name, (seq, status))| {
                (
                    name.clone(),
                    Decision {
                        seq: *seq,
                        status: status.clone(),
                    },
                )
            })
            .collect()
    }

    /// Record a decided status (read in place of the Subscription's own until acknowledged) and number it.
    pub fn decide(&mut self, name: &str, status: SubscriptionStatus) -> Decision {
        let seq = self.numbers.next();
        self.pending.insert(name.to_string(), (seq, status.clone()));
        Decision { seq, status }
    }
}

/// Whether resolution reads `a` and `b` alike: the same object, spec and annotations (`olm.generated-by`), and
/// the same status (times aside). Labels (the Operator view's) and owners are not read.
fn same_for_resolution(a: &Subscription, b: &Subscription) -> bool {
    let (ma, mb) = (&a.metadata, &b.metadata);
    ma.uid == mb.uid
        && ma.annotations == mb.annotations
        && ma.deletion_timestamp == mb.deletion_timestamp
        && a.spec == b.spec
        && crate::status::same(
            &a.status.clone().unwrap_or_default(),
            &b.status.clone().unwrap_or_default(),
        )
}

#[cfg(test)]
mod tests;
