//! What one resolution run of a namespace does, decided from what it observed (pure; spec §4.1):
//! `plan_namespace(&Observed, &fetched) -> NamespacePlan`. The InstallPlans to create and the first status each
//! is handed over with, the Subscriptions' statuses, the bundles to fetch, the plans to garbage-collect and when
//! to run again. No client, actor, clock or task here: [`super::observe`] gathers the input (the resolver's
//! answer included), [`super::prefetch`] the bundles and [`super::effects`] performs the plan;
//! [`super::settle`] points the Subscriptions at the plans once they exist.
//!
//! Approval is per Subscription: bundles of Manual Subscriptions go into a Manual plan, the others into an
//! Automatic plan. OLM v0 makes the whole namespace's plan Manual when any Subscription is Manual; we do
//! not. Bundles pulled in as new dependencies go into the Automatic plan unless only Manual Subscriptions
//! changed.

mod build;

use super::facts::{facts, plan_ref};
use super::observe::Observed;
use super::prefetch::{BundleId, Fetch};
use crate::status::{self, Decided};
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase, InstallPlanStatus};
use messages::crd::subscription::{
    Approval, Subscription, SubscriptionConditionType, SubscriptionReason, SubscriptionState,
    SubscriptionStatus,
};
use resolver::{BundleStep, Outcome, Resolution};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

pub use build::Target;

/// Plans kept per namespace by garbage collection.
pub const MAX_PLANS: usize = 5;
/// When a bundle its catalog could not serve is tried again.
pub const BUNDLE_RETRY: Duration = Duration::from_secs(10);

/// One Subscription's status as the run decided it (before [`super::settle`] points it at a new plan).
#[derive(Debug, Clone, PartialEq)]
pub struct SubStatus {
    pub name: String,
    pub uid: Option<String>,
    pub old: SubscriptionStatus,
    pub new: SubscriptionStatus,
}

/// An InstallPlan the run makes: created (or found unfinished), then handed to its actor with `status`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPlan {
    /// The object to create (`create`), or the plan found without a status that gets `status` now.
    pub plan: InstallPlan,
    pub create: bool,
    /// Its first status, written by its InstallPlan actor.
    pub status: InstallPlanStatus,
    /// The Subscriptions it serves and the CSV each gets.
    pub members: Vec<(String, String)>,
    /// The bundles it was made of.
    pub bundles: Vec<BundleId>,
}

/// What one run does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamespacePlan {
    /// InstallPlans to delete (the oldest beyond [`MAX_PLANS`]).
    pub gc: Vec<String>,
    pub statuses: Vec<SubStatus>,
    pub plans: Vec<NewPlan>,
    /// Bundles to fetch before the steps can be planned (their fetch's end runs again).
    pub fetch: Vec<BundleStep>,
    /// Subscriptions whose step waits for those fetches: no decision for them this run (the next one plans).
    pub waiting: BTreeSet<String>,
    /// Bundles the resolution wants (the prefetch stage forgets the others) and the ones this run used up.
    pub wanted: BTreeSet<BundleId>,
    pub consumed: BTreeSet<BundleId>,
    pub requeue: Option<Duration>,
}

/// Every Subscription with its status before resolution (the plan it references, its CSVs, catalog health).
pub fn before(o: &Observed) -> Vec<(Arc<Subscription>, SubscriptionStatus)> {
    o.subs
        .iter()
        .map(|s| {
            let old = s.status.clone().unwrap_or_default();
            (
                s.clone(),
                status::before_resolution(&old, &facts(s, o), &o.now),
            )
        })
        .collect()
}

/// Whether the namespace is to be resolved: one OperatorGroup, every visible catalog loaded, and a
/// Subscription not already waiting on its plan (or waiting on a plan that will never get a status: an orphan).
pub fn wants_resolution(o: &Observed, before: &[(Arc<Subscription>, SubscriptionStatus)]) -> bool {
    let all_pending = before.iter().all(|(_, st)| {
        st.install_plan_ref.is_some()
            && st.state == SubscriptionState::UpgradePending
            && !o.waits_on_orphan(st)
    });
    !before.is_empty() && o.groups == 1 && o.loading.is_empty() && !all_pending
}

/// The Subscriptions as the resolver reads them: with their status before resolution. A Subscription waiting on
/// its plan (`UpgradePending`) whose current CSV exists is read as having that CSV installed: its status waits
/// for the plan to complete, but the CSV is in the namespace, and without it the resolver would offer the same
/// bundle again beside it and report a package conflict (`ResolutionFailed`) for a Subscription on its way to
/// `AtLatestKnown` (OLM's `ensureSubscriptionCSVState` records the CSV as installed as soon as it exists).
pub fn resolver_input(
    o: &Observed,
    before: &[(Arc<Subscription>, SubscriptionStatus)],
) -> Vec<Arc<Subscription>> {
    before
        .iter()
        .map(|(s, st)| {
            let mut s = (**s).clone();
            let mut st = st.clone();
            if st.state == SubscriptionState::UpgradePending
                && st.install_plan_ref.is_some()
                && !st.current_csv.is_empty()
                && o.csv_names.contains(&st.current_csv)
            {
                st.installed_csv = st.current_csv.clone();
            }
            s.status = Some(st);
            Arc::new(s)
        })
        .collect()
}

/// The oldest plans beyond [`MAX_PLANS`] (by generation, then creation, then name).
pub fn garbage(plans: &[Arc<InstallPlan>]) -> Vec<String> {
    if plans.len() <= MAX_PLANS {
        return Vec::new();
    }
    let mut sorted: Vec<&Arc<InstallPlan>> = plans.iter().collect();
    sorted.sort_by_key(|p| {
        (
            p.spec.generation.unwrap_or(0),
            p.metadata.creation_timestamp.as_ref().map(|t| t.0),
            p.metadata.name.clone(),
        )
    });
    sorted
        .iter()
        .take(plans.len() - MAX_PLANS)
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

pub fn plan_namespace(o: &Observed, fetched: &BTreeMap<BundleId, Fetch>) -> NamespacePlan {
    let mut out = NamespacePlan {
        gc: garbage(&o.plans),
        ..Default::default()
    };
    if o.subs.is_empty() {
        return out;
    }
    let mut next = before(o);
    if o.groups != 1 {
        let message = format!(
            "expected 1 OperatorGroup in the namespace, found {}",
            o.groups
        );
        for (_, st) in &mut next {
            status::set(
                st,
                status::condition(
                    SubscriptionConditionType::ResolutionFailed,
                    true,
                    SubscriptionReason::ErrorPreventedResolution,
                    message.clone(),
                    &o.now,
                ),
            );
        }
    } else if let (true, Some(resolution)) = (wants_resolution(o, &next), &o.resolution) {
        plan_steps(o, resolution, fetched, &mut next, &mut out);
    }
    for (sub, st) in &mut next {
        report_deprecations(o, sub, st);
    }
    out.statuses = next
        .into_iter()
        .map(|(s, new)| SubStatus {
            name: s.metadata.name.clone().unwrap_or_default(),
            uid: s.metadata.uid.clone(),
            old: s.status.clone().unwrap_or_default(),
            new,
        })
        .collect();
    out
}

/// Sets or clears the Subscription's deprecation conditions from its catalog's notices (`crate::deprecation`).
fn report_deprecations(o: &Observed, sub: &Subscription, st: &mut SubscriptionStatus) {
    let key =
        resolver::CatalogKey::new(&sub.spec.catalog_source, &sub.spec.catalog_source_namespace);
    let Some(view) = o.notices.get(&key) else {
        return;
    };
    let channel = sub.spec.channel.clone().unwrap_or_default();
    let notices = crate::deprecation::lookup(
        view.snapshot.as_deref(),
        &view.deprecations,
        &sub.spec.package,
        &channel,
        &st.installed_csv,
    );
    crate::deprecation::apply(st, &channel, notices.as_ref(), &o.now);
}

/// The resolution's steps as plans, one per approval mode; each Subscription's outcome.
fn plan_steps(
    o: &Observed,
    resolution: &Resolution,
    fetched: &BTreeMap<BundleId, Fetch>,
    next: &mut [(Arc<Subscription>, SubscriptionStatus)],
    out: &mut NamespacePlan,
) {
    out.wanted = resolution.steps.iter().map(BundleId::of).collect();
    // Which Subscriptions need a new plan, and with which approval.
    let mut decided: HashMap<String, Decided> = HashMap::new();
    let mut changed: BTreeMap<String, (String, bool)> = BTreeMap::new();
    // Members of a step whose plan exists: (csv, plan, its phase).
    let mut reused: HashMap<String, (String, status::PlanRef, InstallPlanPhase)> = HashMap::new();
    for (sub, st) in next.iter() {
        let name = sub.metadata.name.clone().unwrap_or_default();
        let d = match resolution.outcome(&name) {
            Some(Outcome::Failed { explanation }) => Decided::Failed {
                reason: SubscriptionReason::ConstraintsNotSatisfiable,
                message: explanation.message.clone(),
            },
            // A step not planned yet, or planned in a plan whose creator died before its first status (an
            // orphan): planned (again), which finishes the orphan (`reuse::unfinished`) rather than duplicating it.
            Some(Outcome::Install { csv }) | Some(Outcome::Upgrade { to: csv, .. })
                if st.current_csv != *csv || o.waits_on_orphan(st) =>
            {
                let manual = sub
                    .spec
                    .install_plan_approval
                    .as_ref()
                    .is_some_and(Approval::is_manual);
                changed.insert(name.clone(), (csv.clone(), manual));
                continue;
            }
            Some(_) | None => Decided::Unchanged,
        };
        decided.insert(name, d);
    }
    let new_subs: BTreeSet<&str> = resolution
        .new_subscriptions
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let only_manual = !changed.is_empty() && changed.values().all(|(_, m)| *m);
    let cx = build::Cx {
        o,
        fetched,
        next,
        existing: o.existing_csvs(),
    };
    for manual in [false, true] {
        let mut members: Vec<&String> = changed
            .iter()
            .filter(|(_, (_, m))| *m == manual)
            .map(|(n, _)| n)
            .collect();
        let with_deps = manual == only_manual;
        // A Subscription whose bundle image is not unpacked yet leaves the plan; the others go on without it.
        // (No member at all is fine: a plan may hold only new dependencies.)
        loop {
            let bundles: Vec<&BundleStep> = resolution
                .steps
                .iter()
                .filter(|b| {
                    members.contains(&&b.subscription)
                        || (with_deps && new_subs.contains(b.subscription.as_str()))
                })
                .collect();
            if bundles.is_empty() {
                break;
            }
            let deps: Vec<&resolver::NewSubscription> = if with_deps {
                resolution.new_subscriptions.iter().collect()
            } else {
                Vec::new()
            };
            let owners: Vec<&Subscription> = cx
                .next
                .iter()
                .filter(|(s, _)| {
                    members
                        .iter()
                        .any(|m| s.metadata.name.as_deref() == Some(m.as_str()))
                })
                .map(|(s, _)| s.as_ref())
                .collect();
            let target = build::plan_for(&cx, &bundles, &deps, &owners, manual, &out.plans);
            out.consumed.extend(target.consumed);
            match target.target {
                Target::Reuse(p) => {
                    for m in &members {
                        if let Some((csv, _)) = changed.get(*m) {
                            reused.insert((*m).clone(), (csv.clone(), plan_ref(&p), p.phase()));
                        }
                    }
                    break;
                }
                Target::New(mut plan) => {
                    plan.members = members
                        .iter()
                        .filter_map(|m| Some(((*m).clone(), changed.get(*m)?.0.clone())))
                        .collect();
                    out.consumed.extend(plan.bundles.iter().cloned());
                    out.plans.push(*plan);
                    break;
                }
                Target::Fetch(wanted) => {
                    // Its Subscriptions are decided once the bundles are here.
                    out.fetch.extend(wanted);
                    out.waiting.extend(members.iter().map(|m| (*m).clone()));
                    break;
                }
                Target::Bundle(message) => {
                    for m in &members {
                        decided.insert(
                            (*m).clone(),
                            Decided::Failed {
                                reason: SubscriptionReason::ErrorPreventedResolution,
                                message: message.clone(),
                            },
                        );
                    }
                    out.requeue = Some(BUNDLE_RETRY);
                    break;
                }
                Target::Unpack(waiting) => {
                    for (sub, not_yet) in &waiting {
                        let (d, retry) = crate::bundle_image::decided(not_yet);
                        out.requeue = Some(out.requeue.map_or(retry, |r| r.min(retry)));
                        if members.contains(&sub) {
                            decided.insert(sub.clone(), d);
                        } else {
                            // A new dependency's bundle: every member of this plan waits for it.
                            for m in &members {
                                decided.insert((*m).clone(), d.clone());
                            }
                            members.clear();
                        }
                    }
                    members.retain(|m| !waiting.iter().any(|(s, _)| s == *m));
                    if members.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    for (sub, st) in next.iter_mut() {
        let name = sub.metadata.name.clone().unwrap_or_default();
        if let Some(d) = decided.get(&name) {
            status::after_resolution(st, d, &o.now);
        } else if let Some((csv, plan, phase)) = reused.get(&name) {
            status::planned(st, csv, plan, phase, &o.now);
        }
    }
}

#[cfg(test)]
mod tests;
