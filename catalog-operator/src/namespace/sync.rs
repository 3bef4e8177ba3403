//! One sync of one namespace (spec §4.1): garbage-collect old InstallPlans, bring every Subscription's status
//! up to date, resolve with the resolver library (off the actor thread), create the InstallPlans (one per
//! approval mode, see below) and point the Subscriptions at them.
//!
//! Approval is per Subscription: bundles of Manual Subscriptions go into a Manual plan, the others into an
//! Automatic plan. OLM v0 makes the whole namespace's plan Manual when any Subscription is Manual; we do
//! not. Bundles pulled in as new dependencies go into the Automatic plan unless only Manual Subscriptions
//! changed.

use super::ensure::Found;
use super::input;
use super::status::{self, CatalogHealth, Decided, Facts, PlanFacts, PlanRef};
use crate::error::error_text;
use crate::shared::Shared;
use crate::steps;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::DeleteParams;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::{
    InstallPlan, InstallPlanPhase, InstallPlanSpec, InstallPlanStatus, Step, order_steps,
};
use messages::crd::subscription::{
    Approval, Subscription, SubscriptionConditionType, SubscriptionReason, SubscriptionStatus,
};
use resolver::{CatalogKey, Outcome};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

pub use crate::steps::GENERATED_BY;
/// Plans kept per namespace by garbage collection.
pub const MAX_PLANS: usize = 5;

pub use crate::error::SyncError;

pub fn in_ns<K: kube::Resource>(all: Vec<Arc<K>>, ns: &str) -> Vec<Arc<K>> {
    all.into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(ns))
        .collect()
}

fn now() -> Time {
    Time(Timestamp::now())
}

/// What one sync decided: the Subscriptions' new statuses (each written by its own actor), the InstallPlans
/// it created, and when to run again.
#[derive(Default)]
pub struct Synced {
    pub statuses: Vec<(String, SubscriptionStatus)>,
    pub created: Vec<InstallPlan>,
    pub requeue: Option<Duration>,
}

/// One sync over the namespace's Subscriptions and InstallPlans as resolution knows them (`super::known`).
pub async fn run(
    shared: Shared,
    ns: String,
    subs: Vec<Arc<Subscription>>,
    plans: Vec<Arc<InstallPlan>>,
) -> Result<Synced, SyncError> {
    let span = tracing::info_span!("catalog.resolve", namespace = %ns);
    let r = sync(&shared, &ns, subs, plans).instrument(span).await;
    tracing::debug!(namespace = %ns, result = ?r.as_ref().map(|s| s.statuses.len()).map_err(ToString::to_string), "namespace synced");
    r
}

async fn gc_plans(shared: &Shared, ns: &str, plans: &[Arc<InstallPlan>]) {
    if plans.len() <= MAX_PLANS {
        return;
    }
    let mut sorted: Vec<&Arc<InstallPlan>> = plans.iter().collect();
    sorted.sort_by(|a, b| {
        (
            a.spec.generation.unwrap_or(0),
            a.metadata.creation_timestamp.as_ref().map(|t| t.0),
            &a.metadata.name,
        )
            .cmp(&(
                b.spec.generation.unwrap_or(0),
                b.metadata.creation_timestamp.as_ref().map(|t| t.0),
                &b.metadata.name,
            ))
    });
    let api: Api<InstallPlan> = Api::namespaced(shared.client.clone(), ns);
    for ip in sorted.iter().take(plans.len() - MAX_PLANS) {
        let name = ip.metadata.name.clone().unwrap_or_default();
        if let Err(e) = api.delete(&name, &DeleteParams::background()).await {
            tracing::warn!(plan = %name, error = &e as &dyn std::error::Error, "cannot garbage-collect InstallPlan");
        }
    }
}

fn catalog_health(shared: &Shared, namespaces: &[&str]) -> Vec<CatalogHealth> {
    let mut out: Vec<CatalogHealth> = shared
        .catalog_sources()
        .iter()
        .filter(|c| namespaces.contains(&c.metadata.namespace.as_deref().unwrap_or_default()))
        .map(|c| {
            let key = CatalogKey::new(
                c.metadata.name.clone().unwrap_or_default(),
                c.metadata.namespace.clone().unwrap_or_default(),
            );
            let healthy = shared.catalogs.get(&key).is_some_and(|v| v.healthy);
            CatalogHealth {
                key,
                uid: c.metadata.uid.clone().unwrap_or_default(),
                healthy,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.key.namespace, &a.key.name).cmp(&(&b.key.namespace, &b.key.name)));
    out
}

fn plan_ref(ip: &InstallPlan) -> PlanRef {
    PlanRef {
        name: ip.metadata.name.clone().unwrap_or_default(),
        namespace: ip.metadata.namespace.clone().unwrap_or_default(),
        uid: ip.metadata.uid.clone().unwrap_or_default(),
        generation: ip.spec.generation.unwrap_or(0),
    }
}

fn facts(
    sub: &Subscription,
    plans: &[Arc<InstallPlan>],
    csv_names: &BTreeSet<String>,
    replaced_by: &BTreeMap<String, String>,
    packages: &BTreeMap<String, String>,
    catalogs: &[CatalogHealth],
    fail_forward: bool,
) -> Facts {
    let st = sub.status.clone().unwrap_or_default();
    let find = |name: &str| {
        plans
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
    };
    let generated_by = sub
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(GENERATED_BY))
        .and_then(|n| find(n))
        .map(|p| plan_ref(p));
    // A lost decision (`super::adopt`): the newest Complete plan it owns is adopted as a generating one is.
    let package_of = |csv: &str| {
        packages
            .get(csv)
            .cloned()
            .or_else(|| status::successor(csv, replaced_by).and_then(|s| packages.get(&s).cloned()))
    };
    let (generated_by, starting_csv) = match generated_by {
        None if st.install_plan_ref.is_none() && st.current_csv.is_empty() => {
            match super::adopt::lost_plan(sub, plans, package_of) {
                Some((p, csv)) => (Some(plan_ref(p)), Some(csv)),
                None => (None, sub.spec.starting_csv.clone()),
            }
        }
        g => (g, sub.spec.starting_csv.clone()),
    };
    let referenced = st
        .install_plan_ref
        .as_ref()
        .and_then(|r| r.name.clone())
        .or_else(|| {
            generated_by
                .as_ref()
                .filter(|_| st.install_plan_ref.is_none())
                .map(|g| g.name.clone())
        });
    let plan = match referenced {
        None => PlanFacts::NoRef,
        Some(name) => match find(&name) {
            None => PlanFacts::Missing,
            Some(ip) => {
                let (installed_reason, message) = status::installed_condition(ip.status.as_ref());
                PlanFacts::Found {
                    phase: ip.phase(),
                    installed_reason,
                    message,
                    csvs: ip.spec.cluster_service_version_names.clone(),
                }
            }
        },
    };
    let current = if st.current_csv.is_empty() {
        starting_csv
            .clone()
            .filter(|_| generated_by.is_some())
            .unwrap_or_default()
    } else {
        st.current_csv.clone()
    };
    Facts {
        target: CatalogKey::new(&sub.spec.catalog_source, &sub.spec.catalog_source_namespace),
        catalogs: catalogs.to_vec(),
        generated_by,
        starting_csv,
        plan,
        current_csv_exists: !current.is_empty() && csv_names.contains(&current),
        installed_csv_exists: !st.installed_csv.is_empty() && csv_names.contains(&st.installed_csv),
        successor: (!current.is_empty() && !csv_names.contains(&current))
            .then(|| status::successor(&current, replaced_by))
            .flatten()
            .or_else(|| {
                super::adopt::surviving_csv(sub, plans, package_of, |c| csv_names.contains(c))
            }),
        fail_forward,
    }
}

async fn sync(
    shared: &Shared,
    ns: &str,
    subs: Vec<Arc<Subscription>>,
    plans: Vec<Arc<InstallPlan>>,
) -> Result<Synced, SyncError> {
    gc_plans(shared, ns, &plans).await;
    let mut synced = Synced::default();
    if subs.is_empty() {
        return Ok(synced);
    }
    // A referenced plan the store does not show yet is not taken for deleted (`super::confirm`).
    let mut plans = plans;
    let api: Api<InstallPlan> = Api::namespaced(shared.client.clone(), ns);
    plans.extend(
        super::confirm::read_unseen(&api, &subs, &plans)
            .await
            .map_err(SyncError::ReadPlan)?,
    );
    let now = now();
    let csvs = in_ns(shared.csvs(), ns);
    let csv_names: BTreeSet<String> = csvs
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    // replaces → the CSV replacing it, among the namespace's CSVs.
    let replaced_by: BTreeMap<String, String> = csvs
        .iter()
        .filter_map(|c| Some((c.spec.replaces.clone()?, c.metadata.name.clone()?)))
        .collect();
    // CSV → its package (`olm.package` property), for adopting a lost decision's plan.
    let packages: BTreeMap<String, String> = input::installed(&csvs, &subs)
        .into_iter()
        .filter_map(|i| Some((i.name, i.package?)))
        .collect();
    let groups = in_ns(shared.operator_groups(), ns);
    let (fail_forward, exclude_global) = input::group_options(&groups);
    let global = shared.config.global_namespace.as_str();
    let visible: Vec<&str> = if exclude_global || global == ns {
        vec![ns]
    } else {
        vec![ns, global]
    };
    let health = catalog_health(shared, &visible);

    // Status before resolution, per Subscription.
    let mut next: Vec<(Arc<Subscription>, SubscriptionStatus)> = subs
        .iter()
        .map(|s| {
            let old = s.status.clone().unwrap_or_default();
            let f = facts(
                s,
                &plans,
                &csv_names,
                &replaced_by,
                &packages,
                &health,
                fail_forward,
            );
            let new = status::before_resolution(&old, &f, &now);
            (s.clone(), new)
        })
        .collect();

    // A visible catalog still loading its content: resolving now would pick from a partial view. Its
    // CatalogSource asks for resolution once it serves (or fails).
    let loading: Vec<String> = health
        .iter()
        .filter(|c| {
            shared
                .catalogs
                .get(&c.key)
                .is_none_or(|v| !v.healthy && v.problem.is_empty())
        })
        .map(|c| c.key.to_string())
        .collect();
    let all_pending = next.iter().all(|(_, st)| {
        st.install_plan_ref.is_some()
            && st.state == messages::crd::subscription::SubscriptionState::UpgradePending
    });
    if groups.len() != 1 {
        let message = format!(
            "expected 1 OperatorGroup in the namespace, found {}",
            groups.len()
        );
        for (_, st) in &mut next {
            status::set(
                st,
                status::condition(
                    SubscriptionConditionType::ResolutionFailed,
                    true,
                    SubscriptionReason::ErrorPreventedResolution,
                    message.clone(),
                    &now,
                ),
            );
        }
    } else if !loading.is_empty() {
        tracing::debug!(namespace = %ns, loading = ?loading, "resolution waits for catalogs to load");
    } else if !all_pending {
        resolve_and_plan(
            shared,
            ns,
            &visible,
            &csvs,
            fail_forward,
            &plans,
            &mut next,
            &mut synced,
            &now,
        )
        .await?;
    }

    // The catalog's deprecation notices on each installed CSV (OLM `updateDeprecatedStatus`).
    for (sub, st) in &mut next {
        report_deprecations(shared, sub, st, &now);
    }

    // Each Subscription actor writes its own status (one failing write never holds the others back).
    for (sub, st) in next {
        let old = sub.status.clone().unwrap_or_default();
        if !status::same(&old, &st) {
            if let Some(message) = crate::events::new_resolution_failure(&old, &st) {
                let name = sub.metadata.name.as_deref().unwrap_or_default();
                let (client, uid) = (&shared.client, sub.metadata.uid.clone());
                crate::events::publish(
                    client,
                    crate::events::resolution_failed(message),
                    crate::events::namespace_ref(ns),
                );
                crate::events::publish(
                    client,
                    crate::events::resolution_failed(message),
                    crate::events::olm_ref("Subscription", ns, name, uid),
                );
            }
            if let Some(message) = crate::events::new_bundle_unpack_failure(&old, &st) {
                let name = sub.metadata.name.as_deref().unwrap_or_default();
                crate::events::publish(
                    &shared.client,
                    crate::events::bundle_unpack_failed(message),
                    crate::events::olm_ref("Subscription", ns, name, sub.metadata.uid.clone()),
                );
            }
            synced
                .statuses
                .push((sub.metadata.name.clone().unwrap_or_default(), st));
        }
    }
    Ok(synced)
}

/// Sets or clears the Subscription's deprecation conditions from its catalog's notices (`crate::deprecation`).
fn report_deprecations(
    shared: &Shared,
    sub: &Subscription,
    st: &mut SubscriptionStatus,
    now: &Time,
) {
    let key = CatalogKey::new(&sub.spec.catalog_source, &sub.spec.catalog_source_namespace);
    let Some(view) = shared.catalogs.get(&key) else {
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
    crate::deprecation::apply(st, &channel, notices.as_ref(), now);
}

#[allow(clippy::too_many_arguments)]
async fn resolve_and_plan(
    shared: &Shared,
    ns: &str,
    visible: &[&str],
    csvs: &[Arc<messages::crd::csv::ClusterServiceVersion>],
    fail_forward: bool,
    plans: &[Arc<InstallPlan>],
    next: &mut [(Arc<Subscription>, SubscriptionStatus)],
    synced: &mut Synced,
    now: &Time,
) -> Result<(), SyncError> {
    let with_status: Vec<Arc<Subscription>> = next
        .iter()
        .map(|(s, st)| {
            let mut s = (**s).clone();
            s.status = Some(st.clone());
            Arc::new(s)
        })
        .collect();
    let snapshots = shared.catalogs.snapshots_in(visible);
    let problem = input::namespace(ns, &with_status, csvs, snapshots, fail_forward);
    let started = Instant::now();
    let resolution = tokio::task::spawn_blocking(move || {
        resolver::resolve(&problem, &resolver::Options::default())
    })
    .await
    .map_err(SyncError::Task)?;
    let outcome_label = if resolution.failed().next().is_some() {
        "failed"
    } else {
        "succeeded"
    };
    shared
        .catalog_metrics
        .resolution_duration
        .with_label_values(&[outcome_label])
        .observe(started.elapsed().as_secs_f64());
    for w in &resolution.warnings {
        tracing::info!(namespace = %ns, warning = %w, "resolution warning");
    }

    let existing_csvs: BTreeSet<String> = csvs
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    // Which Subscriptions need a new plan, and with which approval.
    let mut decided: HashMap<String, Decided> = HashMap::new();
    let mut changed: BTreeMap<String, (String, bool)> = BTreeMap::new();
    for (sub, st) in next.iter() {
        let name = sub.metadata.name.clone().unwrap_or_default();
        let d = match resolution.outcome(&name) {
            Some(Outcome::Failed { explanation }) => Decided::Failed {
                reason: SubscriptionReason::ConstraintsNotSatisfiable,
                message: explanation.message.clone(),
            },
            Some(Outcome::Install { csv }) | Some(Outcome::Upgrade { to: csv, .. })
                if st.current_csv != *csv =>
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
    let mut requeue = None;
    let mut created: Vec<InstallPlan> = Vec::new();
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
            let bundles: Vec<&resolver::BundleStep> = resolution
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
            let owners: Vec<&Subscription> = next
                .iter()
                .filter(|(s, _)| {
                    members
                        .iter()
                        .any(|m| s.metadata.name.as_deref() == Some(m.as_str()))
                })
                .map(|(s, _)| s.as_ref())
                .collect();
            match create_plan(
                shared,
                ns,
                &bundles,
                &deps,
                &owners,
                manual,
                next,
                plans,
                &created,
                &existing_csvs,
            )
            .await
            {
                Ok(ip) => {
                    let r = plan_ref(&ip);
                    created.push(ip);
                    for m in &members {
                        if let Some((csv, _)) = changed.get(*m) {
                            decided.insert(
                                (*m).clone(),
                                Decided::Planned {
                                    csv: csv.clone(),
                                    plan: r.clone(),
                                },
                            );
                        }
                    }
                    break;
                }
                Err(PlanError::Bundle(message)) => {
                    for m in &members {
                        decided.insert(
                            (*m).clone(),
                            Decided::Failed {
                                reason: SubscriptionReason::ErrorPreventedResolution,
                                message: message.clone(),
                            },
                        );
                    }
                    requeue = Some(Duration::from_secs(10));
                    break;
                }
                Err(PlanError::Unpack(waiting)) => {
                    for (sub, not_yet) in &waiting {
                        let (d, retry) = crate::bundle_image::decided(not_yet);
                        requeue = Some(requeue.map_or(retry, |r: Duration| r.min(retry)));
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
                Err(PlanError::Api(e)) => return Err(SyncError::CreatePlan(e)),
            }
        }
    }
    for (sub, st) in next.iter_mut() {
        let name = sub.metadata.name.clone().unwrap_or_default();
        if let Some(d) = decided.get(&name) {
            status::after_resolution(st, d, now);
        }
    }
    synced.created = created;
    synced.requeue = requeue;
    Ok(())
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

enum PlanError {
    Bundle(String),
    /// Bundle images not unpacked yet, by the Subscription their bundle resolves for.
    Unpack(Vec<(String, crate::bundle_image::NotYet)>),
    Api(kube::Error),
}

#[allow(clippy::too_many_arguments)]
async fn create_plan(
    shared: &Shared,
    ns: &str,
    bundles: &[&resolver::BundleStep],
    deps: &[&resolver::NewSubscription],
    owners: &[&Subscription],
    manual: bool,
    next: &[(Arc<Subscription>, SubscriptionStatus)],
    plans: &[Arc<InstallPlan>],
    created: &[InstallPlan],
    existing_csvs: &BTreeSet<String>,
) -> Result<InstallPlan, PlanError> {
    let wanted: Vec<String> = bundles.iter().map(|b| b.name.clone()).collect();
    let owner_names: Vec<&str> = owners
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
        .collect();
    // A Complete plan for this step whose CSV the store does not show: read the CSV before planning again.
    let unseen = super::reuse::unconfirmed_csvs(
        plans.iter().map(|p| p.as_ref()).chain(created.iter()),
        &wanted,
        &owner_names,
        manual,
        existing_csvs,
    );
    let mut confirmed = std::borrow::Cow::Borrowed(existing_csvs);
    if !unseen.is_empty() {
        let api: Api<ClusterServiceVersion> = Api::namespaced(shared.client.clone(), ns);
        for name in unseen {
            if api
                .get_metadata_opt(&name)
                .await
                .map_err(PlanError::Api)?
                .is_some()
            {
                confirmed.to_mut().insert(name);
            }
        }
    }
    let existing_csvs: &BTreeSet<String> = &confirmed;
    if let Some(existing) =
        super::reuse::reusable_in(plans, created, &wanted, &owner_names, manual, existing_csvs)
    {
        tracing::info!(namespace = %ns, plan = ?existing.metadata.name, csvs = ?wanted, "InstallPlan for these CSVs exists: reused");
        return Ok(existing.clone());
    }
    let mut trace = BTreeMap::new();
    olm_runtime::trace_context::inject_current(&mut trace);
    let mut plan: Vec<Step> = Vec::new();
    let mut catalogs: BTreeSet<String> = BTreeSet::new();
    let mut csv_names = Vec::new();
    let mut lookups = Vec::new();
    let mut waiting = Vec::new();
    for b in bundles {
        let view = shared
            .catalogs
            .get(&b.catalog)
            .and_then(|v| v.source)
            .ok_or_else(|| PlanError::Bundle(format!("catalog {} is not serving", b.catalog)))?;
        let full = view
            .bundle(&b.package, &b.channel, &b.name)
            .await
            .map_err(|e| {
                PlanError::Bundle(format!(
                    "cannot fetch bundle {} from catalog {}: {}",
                    b.name,
                    b.catalog,
                    error_text(&e)
                ))
            })?;
        let filled = match crate::bundle_image::fill(shared, ns, b, full).await {
            Ok(filled) => filled,
            Err(not_yet) => {
                waiting.push((b.subscription.clone(), not_yet));
                continue;
            }
        };
        lookups.extend(filled.lookup);
        let s = steps::bundle_steps(&filled.bundle, b, &filled.source, ns, &trace)
            .map_err(|e| PlanError::Bundle(e.to_string()))?;
        plan.extend(s);
        catalogs.insert(b.catalog.name.clone());
        csv_names.push(b.name.clone());
    }
    if !waiting.is_empty() {
        return Err(PlanError::Unpack(waiting));
    }
    for d in deps {
        plan.push(steps::subscription_step(d, ns));
    }
    let plan = order_steps(plan);
    let generation = 1 + next
        .iter()
        .filter_map(|(_, st)| st.install_plan_generation)
        .chain(plans.iter().filter_map(|p| p.spec.generation))
        .chain(created.iter().filter_map(|p| p.spec.generation))
        .max()
        .unwrap_or(0);
    let approval = if manual {
        Approval::Manual
    } else {
        Approval::Automatic
    };
    let first = bundles.first().map(|b| b.catalog.clone());
    let ip = InstallPlan {
        metadata: ObjectMeta {
            generate_name: Some("install-".to_string()),
            namespace: Some(ns.to_string()),
            owner_references: Some(owners.iter().map(|s| subscription_owner(s)).collect()),
            labels: Some(crate::install_plan::operator_label::of_plan(owners, ns)),
            annotations: Some(trace),
            ..Default::default()
        },
        spec: InstallPlanSpec {
            cluster_service_version_names: csv_names,
            approval: approval.clone(),
            approved: !manual,
            generation: Some(generation),
            source: first.as_ref().map(|c| c.name.clone()),
            source_namespace: first.as_ref().map(|c| c.namespace.clone()),
        },
        status: None,
    };
    let api: Api<InstallPlan> = Api::namespaced(shared.client.clone(), ns);
    // A plan for this step whose status was never written is finished, not duplicated (`super::reuse`); one
    // the store does not show yet is found by its name (`super::ensure`).
    let found = match super::reuse::unfinished(
        plans.iter().map(|p| p.as_ref()),
        &wanted,
        &owner_names,
        manual,
    ) {
        Some(p) => Found::Unfinished(p.clone()),
        None => super::ensure::create(&api, ip, &owner_names, existing_csvs)
            .await
            .map_err(PlanError::Api)?,
    };
    let created = match found {
        Found::Created(p) | Found::Unfinished(p) => p,
        Found::Reused(p) => {
            tracing::info!(namespace = %ns, plan = ?p.metadata.name, csvs = ?wanted, "InstallPlan for this step was created before: reused");
            return Ok(p);
        }
    };
    let status = InstallPlanStatus {
        phase: if manual {
            InstallPlanPhase::RequiresApproval
        } else {
            InstallPlanPhase::Installing
        },
        catalog_sources: catalogs.into_iter().collect(),
        plan,
        bundle_lookups: lookups,
        ..Default::default()
    };
    let name = created.metadata.name.clone().unwrap_or_default();
    // A failed write leaves the plan for the next run to finish (`super::plan_status`: deleting it lost a
    // user's approval, chaos defect 14).
    let written = super::plan_status::write(&api, &name, &status)
        .await
        .map_err(PlanError::Api)?;
    tracing::info!(namespace = %ns, plan = %name, approval = approval.as_str(), generation, csvs = ?written.spec.cluster_service_version_names, "InstallPlan created");
    Ok(written)
}
