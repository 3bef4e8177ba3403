//! One InstallPlan of a run, pure: the plan that already does the step (`super::super::reuse`), or the steps of
//! its fetched bundles and new dependencies as a new plan with its first status; or why it cannot be made yet
//! (bundles to fetch, an image still unpacking, a bundle its catalog refused).

use super::NewPlan;
use crate::bundle_image::NotYet;
use crate::namespace::observe::Observed;
use crate::namespace::prefetch::{BundleId, Fetch};
use crate::namespace::reuse;
use crate::steps;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use messages::crd::install_plan::{
    InstallPlan, InstallPlanPhase, InstallPlanSpec, InstallPlanStatus, Step, order_steps,
};
use messages::crd::subscription::{Approval, Subscription, SubscriptionStatus};
use resolver::{BundleStep, NewSubscription};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What every plan of a run reads.
pub struct Cx<'a> {
    pub o: &'a Observed,
    pub fetched: &'a BTreeMap<BundleId, Fetch>,
    /// The Subscriptions with their status before resolution.
    pub next: &'a [(Arc<Subscription>, SubscriptionStatus)],
    /// The CSVs known to exist (the store's and the confirmed).
    pub existing: BTreeSet<String>,
}

/// Where a step's Subscriptions go.
#[derive(Debug)]
pub enum Target {
    /// A plan that does this step exists (being or done carried out): point at it.
    Reuse(Arc<InstallPlan>),
    /// A plan to create (or to finish: found without status).
    New(Box<NewPlan>),
    /// Bundles to fetch first.
    Fetch(Vec<BundleStep>),
    /// A bundle its catalog could not serve, or whose steps cannot be built.
    Bundle(String),
    /// Bundle images not unpacked yet, by the Subscription their bundle resolves for.
    Unpack(Vec<(String, NotYet)>),
}

/// A target and the fetched results that were read and are not to be read again (not ready ones).
pub struct Planned {
    pub target: Target,
    pub consumed: Vec<BundleId>,
}

/// A non-controller owner reference to a Subscription (OLM's plans are owned by every Subscription they serve).
fn subscription_owner(sub: &Subscription) -> OwnerReference {
    OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".to_string(),
        kind: "Subscription".to_string(),
        name: sub.metadata.name.clone().unwrap_or_default(),
        uid: sub.metadata.uid.clone().unwrap_or_default(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    }
}

/// The steps of the fetched `bundles`, with the catalogs, CSV names and bundle lookups they bring.
#[derive(Default)]
struct Built {
    steps: Vec<Step>,
    catalogs: BTreeSet<String>,
    csvs: Vec<String>,
    lookups: Vec<messages::crd::install_plan::BundleLookup>,
    ids: Vec<BundleId>,
}

/// `consumed`: the results read that are not to be read again (empty when bundles are still to be fetched).
fn build(cx: &Cx, bundles: &[&BundleStep], consumed: &mut Vec<BundleId>) -> Result<Built, Target> {
    let ns = cx.o.namespace.as_str();
    let mut built = Built::default();
    let (mut fetch, mut waiting) = (Vec::new(), Vec::new());
    for b in bundles {
        let id = BundleId::of(b);
        match cx.fetched.get(&id) {
            None => fetch.push((*b).clone()),
            Some(Fetch::Failed(message)) => {
                consumed.push(id);
                return Err(Target::Bundle(message.clone()));
            }
            Some(Fetch::NotYet(not_yet)) => {
                consumed.push(id);
                waiting.push((b.subscription.clone(), not_yet.clone()));
            }
            Some(Fetch::Ready(filled)) => {
                let s = steps::bundle_steps(&filled.bundle, b, &filled.source, ns, &cx.o.trace)
                    .map_err(|e| {
                        consumed.push(id.clone());
                        Target::Bundle(e.to_string())
                    })?;
                built.steps.extend(s);
                built.lookups.extend(filled.lookup.clone());
                built.catalogs.insert(b.catalog.name.clone());
                built.csvs.push(b.name.clone());
                built.ids.push(id);
            }
        }
    }
    if !fetch.is_empty() {
        // The results read stay for the run that has them all: consuming them now would fetch them again while
        // the others arrive, and a step of many bundles would never hold them all at once.
        consumed.clear();
        return Err(Target::Fetch(fetch));
    }
    if !waiting.is_empty() {
        return Err(Target::Unpack(waiting));
    }
    Ok(built)
}

/// The plan for `bundles` and the new dependencies `deps`, serving `owners` with `manual` approval; `made`: the
/// plans this run makes before it (for the next generation).
pub fn plan_for(
    cx: &Cx,
    bundles: &[&BundleStep],
    deps: &[&NewSubscription],
    owners: &[&Subscription],
    manual: bool,
    made: &[NewPlan],
) -> Planned {
    let o = cx.o;
    let wanted: Vec<String> = bundles.iter().map(|b| b.name.clone()).collect();
    let owner_names: Vec<&str> = owners
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
        .collect();
    let stored = o.plans.iter().map(|p| p.as_ref());
    if let Some(existing) = reuse::reusable(stored, &wanted, &owner_names, manual, &cx.existing) {
        let found = o
            .plans
            .iter()
            .find(|p| p.metadata.name == existing.metadata.name)
            .cloned()
            .unwrap_or_else(|| Arc::new(existing.clone()));
        return Planned {
            target: Target::Reuse(found),
            consumed: Vec::new(),
        };
    }
    let mut consumed = Vec::new();
    let built = match build(cx, bundles, &mut consumed) {
        Ok(b) => b,
        Err(target) => return Planned { target, consumed },
    };
    let mut plan = built.steps;
    for d in deps {
        plan.push(steps::subscription_step(d, &o.namespace));
    }
    let generation = 1 + cx
        .next
        .iter()
        .filter_map(|(_, st)| st.install_plan_generation)
        .chain(o.plans.iter().filter_map(|p| p.spec.generation))
        .chain(made.iter().filter_map(|p| p.plan.spec.generation))
        .max()
        .unwrap_or(0);
    let first = bundles.first().map(|b| b.catalog.clone());
    let ip = InstallPlan {
        metadata: ObjectMeta {
            generate_name: Some("install-".to_string()),
            namespace: Some(o.namespace.clone()),
            owner_references: Some(owners.iter().map(|s| subscription_owner(s)).collect()),
            labels: Some(crate::install_plan::operator_label::of_plan(
                owners
                    .iter()
                    .map(|s| s.spec.package.as_str())
                    .chain(deps.iter().map(|d| d.package.as_str())),
                &o.namespace,
            )),
            annotations: Some(o.trace.clone()),
            ..Default::default()
        },
        spec: InstallPlanSpec {
            cluster_service_version_names: built.csvs,
            approval: if manual {
                Approval::Manual
            } else {
                Approval::Automatic
            },
            approved: !manual,
            generation: Some(generation),
            source: first.as_ref().map(|c| c.name.clone()),
            source_namespace: first.as_ref().map(|c| c.namespace.clone()),
        },
        status: None,
    };
    let status = InstallPlanStatus {
        phase: if manual {
            InstallPlanPhase::RequiresApproval
        } else {
            InstallPlanPhase::Installing
        },
        catalog_sources: built.catalogs.into_iter().collect(),
        plan: order_steps(plan),
        bundle_lookups: built.lookups,
        ..Default::default()
    };
    // A plan for this step whose status was never written is finished, not duplicated (`reuse::unfinished`).
    let unfinished = reuse::unfinished(
        o.plans.iter().map(|p| p.as_ref()),
        &wanted,
        &owner_names,
        manual,
    );
    let (plan, create) = match unfinished {
        Some(p) => (p.clone(), false),
        None => (ip, true),
    };
    Planned {
        target: Target::New(Box::new(NewPlan {
            plan,
            create,
            status,
            members: Vec::new(),
            bundles: built.ids,
        })),
        consumed,
    }
}
