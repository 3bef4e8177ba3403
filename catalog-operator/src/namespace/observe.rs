//! What one resolution run of a namespace reads (spec §4.1), gathered before anything is decided: the reflector
//! stores (CSVs, OperatorGroups, CatalogSources and the catalogs' content), the Subscriptions and InstallPlans as
//! resolution knows them (`super::known`), a referenced InstallPlan the store lags behind (`super::confirm`), the
//! resolver's answer (off the actor thread) and, for that answer's steps, the CSVs of Complete plans the store does
//! not show (`super::reuse::unconfirmed_csvs`). Everything after it is pure ([`super::plan`]) until the effects.

use super::input;
use crate::catalog_health::CatalogHealth;
use crate::deprecation::DeprecationIndex;
use crate::error::SyncError;
use crate::shared::Shared;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use messages::crd::subscription::{Subscription, SubscriptionStatus};
use messages::key::ObjectKey;
use resolver::{CatalogKey, CatalogSnapshot, Resolution};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

pub fn in_ns<K: kube::Resource>(all: Vec<Arc<K>>, ns: &str) -> Vec<Arc<K>> {
    all.into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(ns))
        .collect()
}

/// A catalog's content as far as a Subscription's status reads it (its deprecation notices).
#[derive(Clone, Default)]
pub struct CatalogNotices {
    pub snapshot: Option<Arc<CatalogSnapshot>>,
    pub deprecations: Arc<DeprecationIndex>,
}

/// The namespace as one run saw it.
#[derive(Clone)]
pub struct Observed {
    pub namespace: String,
    pub now: Time,
    pub subs: Vec<Arc<Subscription>>,
    pub plans: Vec<Arc<InstallPlan>>,
    pub csvs: Vec<Arc<ClusterServiceVersion>>,
    /// The names of `csvs`.
    pub csv_names: BTreeSet<String>,
    /// replaces → the CSV replacing it, among the namespace's CSVs.
    pub replaced_by: BTreeMap<String, String>,
    /// CSV → its package (`olm.package` property), for adopting a lost decision's plan.
    pub packages: BTreeMap<String, String>,
    /// OperatorGroups in the namespace (resolution needs exactly one).
    pub groups: usize,
    pub fail_forward: bool,
    /// The namespaces whose catalogs resolution sees (its own, and the global one unless excluded).
    pub visible: Vec<String>,
    pub health: Vec<CatalogHealth>,
    /// Visible catalogs still loading their content (resolving now would pick from a partial view).
    pub loading: Vec<String>,
    /// The Subscriptions' catalogs, for their deprecation notices.
    pub notices: BTreeMap<CatalogKey, CatalogNotices>,
    /// The trace context of this run, carried into the plans it creates.
    pub trace: BTreeMap<String, String>,
    /// The resolver's answer, when the namespace was resolved (see [`super::plan::before`]).
    pub resolution: Option<Resolution>,
    /// CSVs the store does not show that were read from the API and exist.
    pub confirmed_csvs: BTreeSet<String>,
    /// Plans without status whose first status no one in this process holds to write (`crate::handover`): their
    /// creator died between the create and the status write (a leader that lost its Lease, a killed process).
    /// Resolution finishes the step of a Subscription waiting on one (`super::plan::plan_namespace`).
    pub orphans: BTreeSet<String>,
}

impl Observed {
    /// Whether Subscription status `st` waits on a plan no one will give a status ([`Self::orphans`]).
    pub fn waits_on_orphan(&self, st: &SubscriptionStatus) -> bool {
        let by_ref = st.install_plan_ref.as_ref().and_then(|r| r.name.as_ref());
        let by_name = st.install_plan.as_ref().map(|p| &p.name);
        by_ref
            .into_iter()
            .chain(by_name)
            .any(|name| self.orphans.contains(name))
    }

    /// The CSVs known to exist: the store's and the confirmed ones.
    pub fn existing_csvs(&self) -> BTreeSet<String> {
        self.csv_names
            .union(&self.confirmed_csvs)
            .cloned()
            .collect()
    }
}

fn catalog_health(shared: &Shared, namespaces: &[String]) -> Vec<CatalogHealth> {
    let mut out: Vec<CatalogHealth> = shared
        .catalog_sources()
        .iter()
        .filter(|c| {
            namespaces
                .iter()
                .any(|n| c.metadata.namespace.as_deref() == Some(n.as_str()))
        })
        .map(|c| {
            let key = CatalogKey::new(
                c.metadata.name.clone().unwrap_or_default(),
                c.metadata.namespace.clone().unwrap_or_default(),
            );
            let view = shared.catalogs.get(&key);
            let healthy = view.as_ref().is_some_and(|v| v.healthy);
            let loading = view.is_none_or(|v| !v.healthy && v.problem.is_empty());
            CatalogHealth {
                key,
                uid: c.metadata.uid.clone().unwrap_or_default(),
                healthy,
                loading,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.key.namespace, &a.key.name).cmp(&(&b.key.namespace, &b.key.name)));
    out
}

/// Read the namespace: the stores, and a referenced plan the store does not show yet (`super::confirm`).
pub async fn observe(
    shared: &Shared,
    ns: &str,
    subs: Vec<Arc<Subscription>>,
    mut plans: Vec<Arc<InstallPlan>>,
) -> Result<Observed, SyncError> {
    if !subs.is_empty() {
        let api: Api<InstallPlan> = Api::namespaced(shared.client.clone(), ns);
        let unseen = super::confirm::read_unseen(&api, &subs, &plans)
            .await
            .map_err(SyncError::ReadPlan)?;
        plans.extend(unseen);
    }
    let csvs = in_ns(shared.csvs(), ns);
    let csv_names = csvs
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    let replaced_by = csvs
        .iter()
        .filter_map(|c| Some((c.spec.replaces.clone()?, c.metadata.name.clone()?)))
        .collect();
    let packages = input::installed(&csvs, &subs)
        .into_iter()
        .filter_map(|i| Some((i.name, i.package?)))
        .collect();
    let groups = in_ns(shared.operator_groups(), ns);
    let (fail_forward, exclude_global) = input::group_options(&groups);
    let global = shared.config.global_namespace.as_str();
    let mut visible = vec![ns.to_string()];
    if !exclude_global && global != ns {
        visible.push(global.to_string());
    }
    let health = catalog_health(shared, &visible);
    let loading = health
        .iter()
        .filter(|c| c.loading)
        .map(|c| c.key.to_string())
        .collect();
    let notices = subs
        .iter()
        .filter_map(|s| {
            let key = CatalogKey::new(&s.spec.catalog_source, &s.spec.catalog_source_namespace);
            let view = shared.catalogs.get(&key)?;
            Some((
                key,
                CatalogNotices {
                    snapshot: view.snapshot,
                    deprecations: view.deprecations,
                },
            ))
        })
        .collect();
    let orphans = orphans(shared, ns, &plans);
    let mut trace = BTreeMap::new();
    olm_runtime::trace_context::inject_current(&mut trace);
    Ok(Observed {
        namespace: ns.to_string(),
        now: Time(Timestamp::now()),
        subs,
        plans,
        csvs,
        csv_names,
        replaced_by,
        packages,
        groups: groups.len(),
        fail_forward,
        visible,
        health,
        loading,
        notices,
        trace,
        resolution: None,
        confirmed_csvs: BTreeSet::new(),
        orphans,
    })
}

/// The plans of `plans` without status (and not being deleted) whose first status this process does not hold.
fn orphans(shared: &Shared, ns: &str, plans: &[Arc<InstallPlan>]) -> BTreeSet<String> {
    plans
        .iter()
        .filter(|p| p.status.is_none() && p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name.clone())
        .filter(|name| {
            !shared
                .registries
                .handovers
                .waits(&ObjectKey::new(ns.to_string(), name.clone()))
        })
        .collect()
}

/// Resolve the namespace with the Subscriptions as they stand before resolution (`with_status`), off the actor
/// thread; counted in `olm_resolution_duration_seconds`.
pub async fn resolve(
    shared: &Shared,
    o: &Observed,
    with_status: Vec<Arc<Subscription>>,
) -> Result<Resolution, SyncError> {
    let visible: Vec<&str> = o.visible.iter().map(String::as_str).collect();
    let snapshots = shared.catalogs.snapshots_in(&visible);
    let problem = input::namespace(
        &o.namespace,
        &with_status,
        &o.csvs,
        snapshots,
        o.fail_forward,
    );
    let started = Instant::now();
    let resolution = tokio::task::spawn_blocking(move || {
        resolver::resolve(&problem, &resolver::Options::default())
    })
    .await
    .map_err(SyncError::Task)?;
    let outcome = if resolution.failed().next().is_some() {
        "failed"
    } else {
        "succeeded"
    };
    shared
        .catalog_metrics
        .resolution_duration
        .with_label_values(&[outcome])
        .observe(started.elapsed().as_secs_f64());
    for w in &resolution.warnings {
        tracing::info!(namespace = %o.namespace, warning = %w, "resolution warning");
    }
    Ok(resolution)
}

/// The CSVs of the resolution's steps that a Complete plan made but the store does not show, read from the API:
/// those that exist (a store lagging behind cut watches must not make a second Complete plan, chaos defect 11).
pub async fn confirm_csvs(
    shared: &Shared,
    o: &Observed,
    resolution: &Resolution,
) -> Result<BTreeSet<String>, SyncError> {
    let made: BTreeSet<&str> = o
        .plans
        .iter()
        .filter(|p| p.status.as_ref().map(|s| &s.phase) == Some(&InstallPlanPhase::Complete))
        .flat_map(|p| p.spec.cluster_service_version_names.iter())
        .map(String::as_str)
        .collect();
    let unseen: Vec<&str> = resolution
        .steps
        .iter()
        .map(|b| b.name.as_str())
        .filter(|c| made.contains(c) && !o.csv_names.contains(*c))
        .collect();
    let mut found = BTreeSet::new();
    if unseen.is_empty() {
        return Ok(found);
    }
    let api: Api<ClusterServiceVersion> = Api::namespaced(shared.client.clone(), &o.namespace);
    for name in unseen {
        if api
            .get_metadata_opt(name)
            .await
            .map_err(SyncError::CreatePlan)?
            .is_some()
        {
            found.insert(name.to_string());
        }
    }
    Ok(found)
}
