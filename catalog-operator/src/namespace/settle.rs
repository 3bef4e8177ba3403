//! The end of a resolution run, pure: once the run's InstallPlans exist (their names and uids known), each
//! member Subscription is pointed at its plan; the Subscriptions whose status changed get a decision, and a new
//! resolution or unpack failure its Warning Events (OLM's `ResolutionFailed` on the Namespace and the
//! Subscription, `BundleUnpackFailed` on the Subscription).

use super::plan::NamespacePlan;
use crate::status::{self, PlanRef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::install_plan::InstallPlanPhase;
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

/// `made[i]`: the plan `plan.plans[i]` became and its phase (none when it could not be made). A Subscription waiting for its
/// bundles to be fetched is decided by the run their fetch starts.
pub fn settle(
    plan: &NamespacePlan,
    made: &[Option<(PlanRef, InstallPlanPhase)>],
    now: &Time,
) -> Settled {
    let mut out = Settled::default();
    for s in plan
        .statuses
        .iter()
        .filter(|s| !plan.waiting.contains(&s.name))
    {
        let mut new = s.new.clone();
        let pointed = plan.plans.iter().zip(made).find_map(|(p, r)| {
            let csv = p.members.iter().find(|(m, _)| *m == s.name)?.1.clone();
            Some((csv, r.clone()?))
        });
        if let Some((csv, (plan, phase))) = pointed {
            status::planned(&mut new, &csv, &plan, &phase, now);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::namespace::plan::{NewPlan, SubStatus};
    use k8s_openapi::jiff::Timestamp;
    use messages::crd::subscription::SubscriptionState;
    use messages::crd::subscription::{SubscriptionConditionType as T, SubscriptionReason as R};
    use rstest::rstest;

    fn now() -> Time {
        Time(Timestamp::from_second(1_000).expect("time"))
    }

    fn failed(message: &str) -> SubscriptionStatus {
        let mut st = SubscriptionStatus::default();
        status::set(
            &mut st,
            status::condition(
                T::ResolutionFailed,
                true,
                R::ConstraintsNotSatisfiable,
                message,
                &now(),
            ),
        );
        st
    }

    fn sub(name: &str, old: SubscriptionStatus, new: SubscriptionStatus) -> SubStatus {
        SubStatus {
            name: name.into(),
            uid: Some(format!("uid-{name}")),
            old,
            new,
        }
    }

    fn plan_for(member: &str) -> NewPlan {
        NewPlan {
            plan: messages::crd::install_plan::InstallPlan::new(
                "install-abcde",
                messages::crd::install_plan::InstallPlanSpec {
                    source: None,
                    source_namespace: None,
                    cluster_service_version_names: vec!["a.v1".into()],
                    approval: messages::crd::subscription::Approval::Automatic,
                    approved: true,
                    generation: Some(1),
                },
            ),
            create: true,
            status: Default::default(),
            members: vec![(member.into(), "a.v1".into())],
            bundles: Vec::new(),
        }
    }

    fn made() -> PlanRef {
        PlanRef {
            name: "install-abcde".into(),
            namespace: "ns".into(),
            uid: "uid-plan".into(),
            generation: 1,
        }
    }

    /// (decided Subscriptions with their state, events).
    #[rstest]
    #[case::a_member_is_pointed_at_its_new_plan(vec![sub("a", Default::default(), Default::default())], vec![plan_for("a")], &[], vec![("a", "UpgradePending")], 0)]
    #[case::an_unchanged_status_is_not_decided(vec![sub("a", failed("x"), failed("x"))], vec![], &[], vec![], 0)]
    #[case::a_new_failure_is_decided_with_its_events(vec![sub("a", Default::default(), failed("no candidates"))], vec![], &[], vec![("a", "")], 1)]
    #[case::a_subscription_waiting_for_its_bundles_is_not_decided_yet(vec![sub("a", Default::default(), failed("x"))], vec![], &["a"], vec![], 0)]
    fn settling(
        #[case] statuses: Vec<SubStatus>,
        #[case] plans: Vec<NewPlan>,
        #[case] waiting: &[&str],
        #[case] decided: Vec<(&str, &str)>,
        #[case] events: usize,
    ) {
        let refs: Vec<Option<(PlanRef, InstallPlanPhase)>> = plans
            .iter()
            .map(|_| Some((made(), InstallPlanPhase::Installing)))
            .collect();
        let plan = NamespacePlan {
            statuses,
            plans,
            waiting: waiting.iter().map(|w| w.to_string()).collect(),
            ..Default::default()
        };
        let got = settle(&plan, &refs, &now());
        let states: Vec<(&str, &str)> = got
            .statuses
            .iter()
            .map(|(n, st)| (n.as_str(), st.state.as_str()))
            .collect();
        assert_eq!(states, decided);
        assert_eq!(got.events.len(), events, "{:?}", got.events);
        if let Some((_, st)) = got
            .statuses
            .first()
            .filter(|(_, st)| st.state == SubscriptionState::UpgradePending)
        {
            assert_eq!(
                st.install_plan.as_ref().map(|p| p.name.as_str()),
                Some("install-abcde")
            );
            assert_eq!(st.current_csv, "a.v1");
            let pending = st
                .conditions
                .iter()
                .find(|c| c.type_ == T::InstallPlanPending);
            assert_eq!(
                pending.map(|c| c.reason.as_str()),
                Some("Installing"),
                "the phase handed over"
            );
        }
    }
}
