//! The end of a resolution run, pure: once the run's InstallPlans exist (their names and uids known), each
//! member Subscription is pointed at its plan; the Subscriptions whose status changed get a decision, and a new
//! resolution or unpack failure its Warning Events (OLM's `ResolutionFailed` on the Namespace and the
//! Subscription, `BundleUnpackFailed` on the Subscription).

use super::plan::NamespacePlan;
use super::status::{self, Decided, PlanRef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::subscription::SubscriptionStatus;

/// A Warning Event about a Subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubEvent {
    /// On the namespace and on the Subscription.
    ResolutionFailed {
        name: String,
        uid: Option<String>,
        message: String,
    },
    BundleUnpackFailed {
        name: String,
        uid: Option<String>,
        message: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settled {
    /// The Subscriptions whose status changed, with it (each written by its own actor).
    pub statuses: Vec<(String, SubscriptionStatus)>,
    pub events: Vec<SubEvent>,
}

/// `made[i]`: the plan `plan.plans[i]` became (none when it could not be made).
pub fn settle(plan: &NamespacePlan, made: &[Option<PlanRef>], now: &Time) -> Settled {
    let mut out = Settled::default();
    for s in &plan.statuses {
        let mut new = s.new.clone();
        let pointed = plan.plans.iter().zip(made).find_map(|(p, r)| {
            let csv = p.members.iter().find(|(m, _)| *m == s.name)?.1.clone();
            Some((csv, r.clone()?))
        });
        if let Some((csv, plan)) = pointed {
            status::after_resolution(&mut new, &Decided::Planned { csv, plan }, now);
        }
        if status::same(&s.old, &new) {
            continue;
        }
        if let Some(message) = crate::events::new_resolution_failure(&s.old, &new) {
            out.events.push(SubEvent::ResolutionFailed {
                name: s.name.clone(),
                uid: s.uid.clone(),
                message: message.to_string(),
            });
        }
        if let Some(message) = crate::events::new_bundle_unpack_failure(&s.old, &new) {
            out.events.push(SubEvent::BundleUnpackFailed {
                name: s.name.clone(),
                uid: s.uid.clone(),
                message: message.to_string(),
            });
        }
        out.statuses.push((s.name.clone(), new));
    }
    out
}
