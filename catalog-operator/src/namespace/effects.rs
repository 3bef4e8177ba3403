//! The effects of a resolution run's [`NamespacePlan`], in order: garbage-collect old InstallPlans, create each
//! new plan (`super::ensure`: a plan an earlier run created for the same step is found, not duplicated) and hand
//! its first status to its InstallPlan actor (`crate::handover`), then point the Subscriptions at the plans
//! (`super::settle`) and publish the Warning Events. The decisions themselves are sent by the actor.

use super::ensure::{self, Found};
use super::facts::plan_ref;
use super::observe::Observed;
use super::plan::{NamespacePlan, NewPlan};
use super::settle::{self, SubEvent};
use crate::error::SyncError;
use crate::events;
use crate::handover;
use crate::shared::Shared;
use crate::status::PlanRef;
use kube::Api;
use kube::api::DeleteParams;
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use messages::key::ObjectKey;
use olm_runtime::registry::Forward;

/// What the effects left: the Subscriptions' new statuses and the plans made (kept by resolution until the
/// store shows them with their status).
pub struct Applied {
    pub statuses: Vec<(String, messages::crd::subscription::SubscriptionStatus)>,
    pub made: Vec<InstallPlan>,
}

pub async fn apply(
    shared: &Shared,
    o: &Observed,
    plan: &NamespacePlan,
) -> Result<Applied, SyncError> {
    let ns = o.namespace.as_str();
    let api: Api<InstallPlan> = Api::namespaced(shared.client.clone(), ns);
    for name in &plan.gc {
        if let Err(e) = api.delete(name, &DeleteParams::background()).await {
            tracing::warn!(plan = %name, error = &e as &dyn std::error::Error, "cannot garbage-collect InstallPlan");
        }
    }
    let existing = o.existing_csvs();
    let mut refs: Vec<Option<(PlanRef, InstallPlanPhase)>> = Vec::new();
    let mut made = Vec::new();
    for new in &plan.plans {
        let ip = make(shared, &api, new, &existing).await?;
        refs.push(Some((plan_ref(&ip), ip.phase())));
        made.push(ip);
    }
    let settled = settle::settle(plan, &refs, &o.now);
    for e in &settled.events {
        publish(shared, ns, e);
    }
    Ok(Applied {
        statuses: settled.statuses,
        made,
    })
}

/// Create `new` (or take the plan found for its step) and hand its first status over; the plan as resolution
/// is to know it (with that status).
async fn make(
    shared: &Shared,
    api: &Api<InstallPlan>,
    new: &NewPlan,
    existing: &std::collections::BTreeSet<String>,
) -> Result<InstallPlan, SyncError> {
    let owners: Vec<&str> = new.members.iter().map(|(s, _)| s.as_str()).collect();
    let found = if new.create {
        ensure::create(api, new.plan.clone(), &owners, existing)
            .await
            .map_err(SyncError::CreatePlan)?
    } else {
        Found::Unfinished(new.plan.clone())
    };
    let (what, mut ip) = match found {
        Found::Reused(p) => {
            tracing::info!(plan = ?p.metadata.name, csvs = ?p.spec.cluster_service_version_names, "InstallPlan for this step was created before: reused");
            return Ok(p);
        }
        Found::Created(p) => ("created", p),
        Found::Unfinished(p) => ("finished", p),
    };
    let name = ip.metadata.name.clone().unwrap_or_default();
    let ns = ip.metadata.namespace.clone().unwrap_or_default();
    let key = ObjectKey::new(ns.clone(), name.clone());
    shared
        .registries
        .handovers
        .give(key.clone(), new.status.clone());
    nudge_until_written(shared.clone(), key.clone());
    if !shared
        .registries
        .handovers
        .written_within(&key, handover::WRITE_WAIT)
        .await
    {
        tracing::info!(plan = %key, "InstallPlan's first status not written yet: its Subscriptions are pointed at it now");
    }
    tracing::info!(namespace = %ns, plan = %name, approval = ip.spec.approval.as_str(), generation = ?ip.spec.generation, csvs = ?ip.spec.cluster_service_version_names, "InstallPlan {what}; its status handed to its actor");
    ip.status = Some(new.status.clone());
    Ok(ip)
}

/// How long resolution keeps nudging a plan's actor whose first status waits (a write failing for longer is
/// left to the actor's own retries).
const NUDGE_FOR: std::time::Duration = std::time::Duration::from_secs(300);

/// Nudge the actor of plan `key` now and, while its first status waits, again every
/// [`handover::NUDGE_AGAIN`] (a nudge is lost when it comes before the actor exists, or to chaos) for at most
/// [`NUDGE_FOR`]; a status for a plan the store has not shown within [`handover::UNSEEN_FOR`] is dropped (the
/// plan was deleted before its actor existed).
fn nudge_until_written(shared: Shared, key: ObjectKey) {
    let nudge = |shared: &Shared, key: &ObjectKey| {
        shared
            .registries
            .install_plans
            .do_send(Forward(key.clone(), handover::HandedOver));
    };
    nudge(&shared, &key);
    actix::spawn(async move {
        let start = tokio::time::Instant::now();
        let mut seen = false;
        while start.elapsed() < NUDGE_FOR {
            tokio::time::sleep(handover::NUDGE_AGAIN).await;
            if !shared.registries.handovers.waits(&key) {
                return;
            }
            seen = seen || shared.install_plan(&key).is_some();
            if !seen && start.elapsed() >= handover::UNSEEN_FOR {
                shared.registries.handovers.forget(&key);
                return;
            }
            tracing::debug!(plan = %key, "first status still waits: nudging the plan's actor again");
            nudge(&shared, &key);
        }
    });
}

fn publish(shared: &Shared, ns: &str, e: &SubEvent) {
    let client = &shared.client;
    match e {
        SubEvent::ResolutionFailed { name, uid, message } => {
            events::publish(
                client,
                events::resolution_failed(message),
                events::namespace_ref(ns),
            );
            events::publish(
                client,
                events::resolution_failed(message),
                events::olm_ref("Subscription", ns, name, uid.clone()),
            );
        }
        SubEvent::BundleUnpackFailed { name, uid, message } => events::publish(
            client,
            events::bundle_unpack_failed(message),
            events::olm_ref("Subscription", ns, name, uid.clone()),
        ),
    }
}
