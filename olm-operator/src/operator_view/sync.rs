//! The I/O of one view run, for every Subscription and Operator of its batch at once: label what belongs to
//! each Operator, then create the Operators that are missing and write the status of those whose computed
//! status differs from the stored one. It reads the stores olm-operator keeps anyway, one pass per store for
//! the whole batch ([`index`](super::index)); what it does not watch it lists at most once per kind and run:
//! InstallPlans ([`plans`](super::plans)), RoleBindings and ClusterRoleBindings. Its writes go out
//! [`IN_FLIGHT`] at a time.

use super::adopt;
use super::components::{self, Component, Write};
use super::index::{Adopting, Pending};
use super::labels::{For, Kind, LabelWrite};
use super::memo::{Memo, PlanChange};
use super::plans::{self, Listing};
use super::queue::Batch;
use crate::shared::Shared;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource};
use messages::crd::annotations::operator_component_label;
use messages::crd::install_plan::InstallPlan;
use messages::crd::operator::{Operator, OperatorSpec, OperatorStatus};
use messages::crd::operator_condition::OperatorCondition;
use messages::crd::subscription::Subscription;
use olm_runtime::error::{self as api_error, Class};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;

/// Writes of one run in flight at once: a batch of a thousand new Operators is thousands of writes, which one
/// at a time would take minutes.
pub const IN_FLIGHT: usize = 8;

/// A merge patch of an Operator's status.
#[derive(Serialize, Debug)]
struct StatusPatch<'a> {
    status: &'a OperatorStatus,
}

/// What a run could not do, to retry, and the last error.
pub struct Failed {
    pub error: kube::Error,
    pub retry: Batch,
}

/// Objects labelled during the run (not in the stores yet), by kind, namespace and name: the Operators they
/// now belong to.
type InRun = HashMap<(Kind, Option<String>, String), Vec<String>>;

/// The Operators' components, as one pass over the stores finds them.
type Found = HashMap<String, Vec<Component>>;

/// One view run over `batch`.
pub async fn run(
    shared: &Shared,
    operators: &Store<Operator>,
    batch: Batch,
    memo: &mut Memo,
) -> Result<(), Failed> {
    let mut failed = Batch::default();
    let mut error = None;
    let mut names = batch.names.clone();
    let mut in_run = InRun::new();
    let mut labels = Vec::new();
    let plan_subs = adopt_subscriptions(shared, &batch, memo, &mut names, &mut labels, &mut in_run);
    match plan_writes(shared, &plan_subs).await {
        Ok(writes) => labels.extend(writes),
        Err(e) => {
            failed
                .subscriptions
                .extend(plan_subs.iter().map(|p| p.key.clone()));
            error = Some(e);
        }
    }
    let pending = Pending::new(&names);
    let mut found = Found::new();
    let adopting = adopting_csvs(shared, &pending, &in_run, memo, &mut found);
    scan_stores(
        shared,
        &pending,
        &adopting,
        &in_run,
        &mut labels,
        &mut found,
    )
    .await;
    match bindings(shared, &names, &pending, &adopting, memo, &mut labels).await {
        Ok(()) => {}
        Err(e) => {
            failed.names.extend(names.iter().cloned());
            error = Some(e);
        }
    }
    for (f, e) in write_labels(shared, labels).await {
        match f {
            For::Subscription(key) => failed.subscriptions.insert(key),
            For::Operator(name) => failed.names.insert(name),
        };
        error = Some(e);
    }
    let mut refresh = Vec::new();
    for name in names.iter().filter(|n| !failed.names.contains(*n)) {
        let mut mine = found.remove(name).unwrap_or_default();
        mine.extend(memo.bindings(name).cloned().unwrap_or_default());
        let status = components::status(name, mine);
        let existing = operators.get(&ObjectRef::new(name));
        match components::write(existing.as_deref(), &status) {
            Write::Nothing => {}
            w => refresh.push((name.clone(), w, status)),
        }
    }
    for (name, e) in write_operators(shared, refresh).await {
        failed.names.insert(name);
        error = Some(e);
    }
    match error {
        None => Ok(()),
        Some(error) => Err(Failed {
            error,
            retry: failed,
        }),
    }
}

/// A Subscription whose current InstallPlan changed since it was last adopted.
struct PlanSub {
    key: messages::key::ObjectKey,
    namespace: String,
    label: String,
    current: String,
}

/// Label the batch's Subscriptions and their installed CSVs (from the stores); name their Operators; return
/// those whose current plan is new.
fn adopt_subscriptions(
    shared: &Shared,
    batch: &Batch,
    memo: &mut Memo,
    names: &mut BTreeSet<String>,
    labels: &mut Vec<LabelWrite>,
    in_run: &mut InRun,
) -> Vec<PlanSub> {
    let subs = &shared.stores.csv.subscriptions;
    let csvs = &shared.stores.csvs;
    let mut plan_subs = Vec::new();
    for key in &batch.subscriptions {
        let Some(sub) = subs.get(&ObjectRef::new(&key.name).within(key.namespace_or_empty()))
        else {
            continue;
        };
        let (Some(operator), Some(namespace)) =
            (adopt::operator_of(&sub), sub.metadata.namespace.clone())
        else {
            continue;
        };
        let label = operator_component_label(&operator);
        let for_ = For::Subscription(key.clone());
        if !adopt::is_labelled(&sub.metadata, &operator) {
            labels.push(LabelWrite::add(
                Kind::Subscription,
                Some(&namespace),
                &key.name,
                &label,
                for_.clone(),
            ));
            in_run
                .entry((
                    Kind::Subscription,
                    Some(namespace.clone()),
                    key.name.clone(),
                ))
                .or_default()
                .push(operator.clone());
        }
        let status = sub.status.as_ref();
        if let Some(installed) = status
            .map(|s| s.installed_csv.as_str())
            .filter(|n| !n.is_empty())
        {
            let csv = csvs.get(&ObjectRef::new(installed).within(&namespace));
            if csv
                .is_some_and(|c| !adopt::is_labelled(&c.metadata, &operator) && !adopt::is_copy(&c))
            {
                labels.push(LabelWrite::add(
                    Kind::Csv,
                    Some(&namespace),
                    installed,
                    &label,
                    for_.clone(),
                ));
                in_run
                    .entry((Kind::Csv, Some(namespace.clone()), installed.to_owned()))
                    .or_default()
                    .push(operator.clone());
            }
        }
        match status
            .and_then(|s| s.install_plan_ref.as_ref())
            .and_then(|r| r.name.clone())
        {
            None => memo.no_plan(key),
            Some(current) => match memo.plan_change(key, &current) {
                PlanChange::Same | PlanChange::First => {}
                PlanChange::Changed => plan_subs.push(PlanSub {
                    key: key.clone(),
                    namespace,
                    label,
                    current,
                }),
            },
        }
        names.insert(operator);
    }
    plan_subs
}

/// The label writes of the new current plans: one list per Subscription for a few, one list of all for more.
async fn plan_writes(shared: &Shared, subs: &[PlanSub]) -> kube::Result<Vec<LabelWrite>> {
    let client = &shared.client;
    let mut out = Vec::new();
    let mut add = |listed: &[ObjectMeta], s: &PlanSub| {
        let w = plans::writes(listed, &s.namespace, &s.label, &s.current);
        let for_ = For::Subscription(s.key.clone());
        if let Some(name) = w.label {
            out.push(LabelWrite::add(
                Kind::InstallPlan,
                Some(&s.namespace),
                &name,
                &s.label,
                for_.clone(),
            ));
        }
        for name in w.unlabel {
            out.push(LabelWrite::remove(
                Kind::InstallPlan,
                Some(&s.namespace),
                &name,
                &s.label,
                for_.clone(),
            ));
        }
    };
    match plans::listing(subs.len()) {
        Listing::Nothing => {}
        Listing::PerSubscription => {
            for s in subs {
                let listed = metadata(
                    Api::<InstallPlan>::namespaced(client.clone(), &s.namespace),
                    &ListParams::default().labels(&s.label),
                )
                .await?;
                add(&listed, s);
            }
        }
        Listing::All => {
            let listed = metadata(
                Api::<InstallPlan>::all(client.clone()),
                &ListParams::default(),
            )
            .await?;
            for s in subs {
                add(&listed, s);
            }
        }
    }
    Ok(out)
}

/// The metadata of the objects `api` lists (one request).
async fn metadata<K>(api: Api<K>, params: &ListParams) -> kube::Result<Vec<ObjectMeta>>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    Ok(api
        .list_metadata(params)
        .await?
        .items
        .into_iter()
        .map(|o| o.metadata)
        .collect())
}

/// The batch's Operators' CSVs (labelled, or labelled in this run; never copies) as components, and those at a
/// phase their owned objects were not adopted at yet.
fn adopting_csvs(
    shared: &Shared,
    pending: &Pending,
    in_run: &InRun,
    memo: &mut Memo,
    found: &mut Found,
) -> Adopting {
    let mut adopting = Adopting::default();
    for csv in shared.stores.csvs.state() {
        if adopt::is_copy(&csv) {
            continue;
        }
        for operator in owners_of(Kind::Csv, &csv.metadata, pending, in_run) {
            found.entry(operator.clone()).or_default().push(component(
                csv.as_ref(),
                components::csv_conditions(csv.status.as_ref()),
            ));
            let phase = csv
                .status
                .as_ref()
                .map(|s| s.phase.as_str().to_owned())
                .unwrap_or_default();
            if memo.phase_changed(csv.metadata.uid.as_deref().unwrap_or_default(), &phase) {
                memo.forget_bindings(&operator);
                adopting.add(&operator, &csv);
            }
        }
    }
    adopting
}

/// The pending Operators an object belongs to: by its labels, or labelled in this run.
fn owners_of(kind: Kind, meta: &ObjectMeta, pending: &Pending, in_run: &InRun) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = pending.named_by(meta).map(str::to_owned).collect();
    if !in_run.is_empty()
        && let Some(names) = in_run.get(&(
            kind,
            meta.namespace.clone(),
            meta.name.clone().unwrap_or_default(),
        ))
    {
        out.extend(names.iter().cloned());
    }
    out
}

/// One pass over each store the view reads: the components of every pending Operator, and label writes for
/// what the adopting CSVs own. Yields between stores, so a large batch does not hold olm-operator's actors.
async fn scan_stores(
    shared: &Shared,
    pending: &Pending,
    adopting: &Adopting,
    in_run: &InRun,
    labels: &mut Vec<LabelWrite>,
    found: &mut Found,
) {
    let s = &shared.stores.csv;
    let mut scan = Scan {
        pending,
        adopting,
        in_run,
        labels,
        found,
    };
    scan.kind::<Deployment>(&s.deployments, Kind::Deployment, true, true);
    tokio::task::yield_now().await;
    scan.kind::<Namespace>(&shared.stores.namespaces, Kind::Namespace, true, false);
    tokio::task::yield_now().await;
    scan.kind::<Service>(&s.served.services, Kind::Service, true, true);
    scan.kind::<APIService>(&s.api_services, Kind::ApiService, true, true);
    scan.kind::<OperatorCondition>(&s.operator_conditions, Kind::OperatorCondition, true, true);
    tokio::task::yield_now().await;
    scan.kind::<ServiceAccount>(&s.service_accounts, Kind::ServiceAccount, false, true);
    tokio::task::yield_now().await;
    scan.kind::<Role>(&s.roles, Kind::Role, false, true);
    scan.kind::<ClusterRole>(&s.cluster_roles, Kind::ClusterRole, false, true);
    tokio::task::yield_now().await;
    scan.crds(&s.crds);
    tokio::task::yield_now().await;
    scan.subscriptions(&s.subscriptions);
    tokio::task::yield_now().await;
}

struct Scan<'a> {
    pending: &'a Pending,
    adopting: &'a Adopting,
    in_run: &'a InRun,
    labels: &'a mut Vec<LabelWrite>,
    found: &'a mut Found,
}

impl Scan<'_> {
    /// Objects of one kind: labelled ones are components; with `adopt`, what an adopting CSV owns is labelled
    /// (and a component).
    fn kind<K>(&mut self, store: &Store<K>, kind: Kind, with_conditions: bool, adopt: bool)
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + 'static,
    {
        for o in store.state() {
            let meta = o.meta();
            let mut mine = owners_of(kind, meta, self.pending, self.in_run);
            if adopt && !self.adopting.is_empty() {
                for operator in self.adopting.owners(meta) {
                    self.label(kind, meta, operator);
                    mine.insert(operator.to_owned());
                }
            }
            self.push(o.as_ref(), mine, with_conditions);
        }
    }

    /// CRDs: owned by name (the CSV's owned CRDs), not by reference.
    fn crds(&mut self, store: &Store<CustomResourceDefinition>) {
        for crd in store.state() {
            let meta = crd.meta();
            let mut mine = owners_of(Kind::Crd, meta, self.pending, self.in_run);
            if !self.adopting.is_empty()
                && let Some(name) = meta.name.as_deref()
            {
                for operator in self.adopting.crd_owners(name, meta) {
                    self.label(Kind::Crd, meta, operator);
                    mine.insert(operator.to_owned());
                }
            }
            self.push(crd.as_ref(), mine, true);
        }
    }

    /// Subscriptions, and with each its current InstallPlan (the labelled plans are the current ones: older
    /// ones lose the label).
    fn subscriptions(&mut self, store: &Store<Subscription>) {
        for sub in store.state() {
            let mine = owners_of(Kind::Subscription, &sub.metadata, self.pending, self.in_run);
            if mine.is_empty() {
                continue;
            }
            if let Some(plan) = sub
                .status
                .as_ref()
                .and_then(|st| st.install_plan_ref.as_ref())
                .and_then(|r| r.name.clone())
            {
                for operator in &mine {
                    self.found
                        .entry(operator.clone())
                        .or_default()
                        .push(Component {
                            api_version: InstallPlan::api_version(&()).into_owned(),
                            kind: InstallPlan::kind(&()).into_owned(),
                            namespace: sub.metadata.namespace.clone(),
                            name: plan.clone(),
                            conditions: Vec::new(),
                        });
                }
            }
            self.push(sub.as_ref(), mine, true);
        }
    }

    fn label(&mut self, kind: Kind, meta: &ObjectMeta, operator: &str) {
        self.labels.push(LabelWrite::add(
            kind,
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
            &operator_component_label(operator),
            For::Operator(operator.to_owned()),
        ));
    }

    fn push<K>(&mut self, obj: &K, operators: BTreeSet<String>, with_conditions: bool)
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        if operators.is_empty() {
            return;
        }
        let conditions = if with_conditions {
            let value = serde_json::to_value(obj).ok();
            components::generic_conditions(value.as_ref().and_then(|v| v.get("status")))
        } else {
            Vec::new()
        };
        for operator in operators {
            self.found
                .entry(operator)
                .or_default()
                .push(component(obj, conditions.clone()));
        }
    }
}

fn component<K>(
    obj: &K,
    conditions: Vec<messages::crd::operator::OperatorComponentCondition>,
) -> Component
where
    K: Resource<DynamicType = ()>,
{
    Component {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        namespace: obj.meta().namespace.clone(),
        name: obj.meta().name.clone().unwrap_or_default(),
        conditions,
    }
}

/// The RBAC bindings (olm-operator does not watch them): listed once per kind when a CSV is adopted or an
/// Operator's bindings are not known yet; the bindings of every Operator of the batch are then taken from the
/// lists and remembered.
async fn bindings(
    shared: &Shared,
    names: &BTreeSet<String>,
    pending: &Pending,
    adopting: &Adopting,
    memo: &mut Memo,
    labels: &mut Vec<LabelWrite>,
) -> kube::Result<()> {
    if adopting.is_empty() && names.iter().all(|n| memo.bindings(n).is_some()) {
        return Ok(());
    }
    let client = &shared.client;
    let role_bindings = metadata(
        Api::<RoleBinding>::all(client.clone()),
        &ListParams::default(),
    )
    .await?;
    let cluster_bindings = metadata(
        Api::<ClusterRoleBinding>::all(client.clone()),
        &ListParams::default(),
    )
    .await?;
    let mut found: Found = names.iter().map(|n| (n.clone(), Vec::new())).collect();
    for (kind, listed) in [
        (Kind::RoleBinding, role_bindings),
        (Kind::ClusterRoleBinding, cluster_bindings),
    ] {
        for meta in listed {
            let mut mine: BTreeSet<String> = pending.named_by(&meta).map(str::to_owned).collect();
            for operator in adopting.owners(&meta) {
                labels.push(LabelWrite::add(
                    kind,
                    meta.namespace.as_deref(),
                    meta.name.as_deref().unwrap_or_default(),
                    &operator_component_label(operator),
                    For::Operator(operator.to_owned()),
                ));
                mine.insert(operator.to_owned());
            }
            for operator in mine {
                found.entry(operator).or_default().push(Component {
                    api_version: RoleBinding::api_version(&()).into_owned(),
                    kind: kind.name().to_owned(),
                    namespace: meta.namespace.clone(),
                    name: meta.name.clone().unwrap_or_default(),
                    conditions: Vec::new(),
                });
            }
        }
    }
    for (operator, bindings) in found {
        memo.set_bindings(&operator, bindings);
    }
    Ok(())
}

/// Apply the label writes, [`IN_FLIGHT`] at a time; the failed ones with their errors.
async fn write_labels(shared: &Shared, labels: Vec<LabelWrite>) -> Vec<(For, kube::Error)> {
    futures::stream::iter(labels)
        .map(|w| {
            let client = shared.client.clone();
            async move {
                let result = w.apply(&client).await;
                (w.for_, result)
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .filter_map(|(f, r)| async move { r.err().map(|e| (f, e)) })
        .collect()
        .await
}

/// Create the missing Operators and write the differing statuses, [`IN_FLIGHT`] at a time; the failed ones.
async fn write_operators(
    shared: &Shared,
    refresh: Vec<(String, Write, OperatorStatus)>,
) -> Vec<(String, kube::Error)> {
    let api = Api::<Operator>::all(shared.client.clone());
    futures::stream::iter(refresh)
        .map(|(name, w, status)| {
            let api = api.clone();
            async move {
                let result = write_operator(&api, &name, w, &status).await;
                (name, result)
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .filter_map(|(n, r)| async move { r.err().map(|e| (n, e)) })
        .collect()
        .await
}

async fn write_operator(
    api: &Api<Operator>,
    name: &str,
    w: Write,
    status: &OperatorStatus,
) -> kube::Result<()> {
    if w == Write::Create {
        let fresh = Operator {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            spec: OperatorSpec {},
            status: None,
        };
        match api.create(&PostParams::default(), &fresh).await {
            Ok(_) => {}
            // Made meanwhile (by an earlier run whose write the store has not shown yet): its watch event
            // brings the Operator back to the view, which compares again.
            Err(e) if api_error::is(&e, Class::AlreadyExists) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&StatusPatch { status }),
    )
    .await?;
    Ok(())
}
