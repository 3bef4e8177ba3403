//! Start the caches of `stores.rs` and requeue the CSV actors that care when a cached object changes: the
//! owner (by OLM's owner labels) of a Deployment, ServiceAccount, Role or ClusterRole; every CSV naming a
//! CRD that changed. Also reads the server version and discovery once, and registers the CSV metrics.

use crate::shared::Shared;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::runtime::watcher;
use kube::{Api, Resource};
use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use messages::key::ObjectKey;
use messages::msg::{Requeue, RequeueReason};
use olm_runtime::registry::{Broadcast, Filter, Forward};
use olm_runtime::watch::{listed as wait, spawn_store};
use std::collections::BTreeSet;

use crate::stores::{ClusterInfo, CsvWriters};

use crate::stores::OWNED_BY_CSV;

/// Start the watches filling the CSV stores (`writers`, made with [`crate::stores::CsvStores::new`]), then open
/// the stores' gate once each listed.
pub fn start(shared: &Shared, writers: CsvWriters) {
    let CsvWriters {
        deployments,
        service_accounts,
        roles,
        cluster_roles,
        crds,
        api_services,
        subscriptions,
        served,
    } = writers;
    let client = shared.client.clone();
    let owned = || watcher::Config::default().labels(OWNED_BY_CSV);

    let s = shared.clone();
    spawn_store(
        deployments,
        Api::<Deployment>::all(client.clone()),
        owned(),
        move |d: &Deployment| {
            requeue_owner(&s, d);
            requeue_deployment_users(&s, d);
            crate::operator_view::touch_labelled(&s, d.metadata.labels.as_ref());
        },
    );
    let s = shared.clone();
    spawn_store(
        roles,
        Api::<Role>::all(client.clone()),
        owned(),
        move |r: &Role| requeue_owner(&s, r),
    );
    let s = shared.clone();
    spawn_store(
        cluster_roles,
        Api::<ClusterRole>::all(client.clone()),
        owned(),
        move |r: &ClusterRole| requeue_owner(&s, r),
    );
    let s = shared.clone();
    olm_runtime::watch::spawn_store_projected(
        service_accounts,
        Api::<ServiceAccount>::all(client.clone()),
        watcher::Config::default(),
        super::account_view::project,
        move |a: &ServiceAccount| {
            requeue_owner(&s, a);
            nudge_groups_naming(&s, a);
        },
    );
    let s = shared.clone();
    olm_runtime::watch::spawn_store_projected(
        crds,
        Api::<CustomResourceDefinition>::all(client.clone()),
        watcher::Config::default().page_size(CRD_PAGE),
        without_schemas,
        move |c: &CustomResourceDefinition| requeue_crd_users(&s, c),
    );
    // A Subscription's config changed: its installed CSV re-renders its deployments (§2.6). Nothing here reads
    // `catalogHealth` (one entry per visible catalog): the store does not keep it.
    let s = shared.clone();
    olm_runtime::watch::spawn_store_projected(
        subscriptions,
        Api::<messages::crd::subscription::Subscription>::all(client.clone()),
        watcher::Config::default(),
        |sub: &mut messages::crd::subscription::Subscription| {
            if let Some(status) = sub.status.as_mut() {
                status.catalog_health = Vec::new();
            }
        },
        move |sub: &messages::crd::subscription::Subscription| {
            if let Some(key) = ObjectKey::of(sub) {
                crate::operator_view::subscription_changed(&s, key);
            }
            if let (Some(namespace), Some(status)) =
                (sub.metadata.namespace.as_deref(), sub.status.as_ref())
                && !status.installed_csv.is_empty()
            {
                requeue(&s, ObjectKey::new(namespace, status.installed_csv.clone()));
            }
        },
    );
    // OperatorConditions: their own actors (`operator_condition::actor`, started in `run.rs`) write their status
    // and requeue the CSVs that read them.
    let s = shared.clone();
    spawn_store(
        api_services,
        Api::<APIService>::all(client),
        watcher::Config::default(),
        move |a: &APIService| super::served::watches::api_service_changed(&s, a),
    );
    super::served::watches::start(shared, served);
    let s = shared.clone();
    tokio::spawn(async move { mark_ready(&s).await });
}

/// Wait for the first full list of every store CSV decisions read, then open the gate. This task writes
/// nothing to the API server: it waits, sets the `ready` flag and sends messages (a requeue of every CSV actor,
/// `StoresSynced` to the janitor, which sweeps).
async fn mark_ready(shared: &Shared) {
    let stores = &shared.stores;
    let synced = wait(&stores.csvs).await
        && wait(&stores.operator_groups).await
        && wait(&stores.csv.deployments).await
        && wait(&stores.csv.service_accounts).await
        && wait(&stores.csv.roles).await
        && wait(&stores.csv.cluster_roles).await
        && wait(&stores.csv.crds).await
        && wait(&stores.csv.api_services).await
        && wait(&stores.csv.subscriptions).await
        && wait(&stores.csv.operator_conditions).await
        && super::served::watches::synced(shared).await;
    if !synced {
        tracing::warn!(
            "a store is missing or its watch ended before its first list; CSV decisions stay paused"
        );
        return;
    }
    stores.csv.ready.open();
    tracing::info!("CSV stores synced");
    // CSV actors take no decision before this point: every one started so far runs now.
    shared.registries.csvs.do_send(Broadcast {
        filter: Filter::All,
        msg: dependency_changed(),
    });
    // The janitor sweeps the cluster RBAC of CSVs deleted while no operator ran (it reads the Namespace store).
    if wait(&stores.namespaces).await {
        shared
            .registries
            .janitor
            .do_send(crate::routes::JanitorMsg::StoresSynced);
    }
}

/// The server version and discovery, read once at start.
pub async fn cluster_info(client: &kube::Client) -> ClusterInfo {
    let server_version = match client.apiserver_version().await {
        Ok(info) => Some(info.git_version),
        Err(error) => {
            tracing::warn!(
                error = &error as &dyn std::error::Error,
                "cannot read the server version; minKubeVersion requirements stay unmet"
            );
            None
        }
    };
    let kinds = native_kinds(client).await;
    ClusterInfo {
        server_version,
        kinds,
    }
}

/// How long one discovery request may take. An aggregated API whose APIService is unavailable answers 503
/// (sometimes only after a while); its group is then left out rather than holding start-up.
const DISCOVERY_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Every (group, version, kind) the API server serves, for `nativeAPIs` requirements. Group by group, so one
/// unavailable aggregated API (an APIService whose Service is gone answers 503) leaves out only its own kinds
/// instead of failing, or stalling, the whole discovery, as `kube::Discovery::run` does. `None` when even the
/// group list cannot be read.
async fn native_kinds(client: &kube::Client) -> Option<BTreeSet<(String, String, String)>> {
    let within = |what: &str| format!("{what} did not answer within {DISCOVERY_REQUEST_TIMEOUT:?}");
    let mut kinds = BTreeSet::new();
    let mut versions: Vec<(String, String, String)> = Vec::new();
    match tokio::time::timeout(DISCOVERY_REQUEST_TIMEOUT, client.list_core_api_versions()).await {
        Ok(Ok(core)) => versions.extend(
            core.versions
                .into_iter()
                .map(|v| (String::new(), v.clone(), v)),
        ),
        Ok(Err(error)) => {
            tracing::warn!(
                error = &error as &dyn std::error::Error,
                "discovery of the core API failed; native API requirements stay unmet"
            );
            return None;
        }
        Err(_) => {
            tracing::warn!(
                reason = within("/api"),
                "discovery of the core API failed; native API requirements stay unmet"
            );
            return None;
        }
    }
    match tokio::time::timeout(DISCOVERY_REQUEST_TIMEOUT, client.list_api_groups()).await {
        Ok(Ok(groups)) => {
            for group in groups.groups {
                for v in group.versions {
                    versions.push((group.name.clone(), v.version, v.group_version));
                }
            }
        }
        Ok(Err(error)) => {
            tracing::warn!(
                error = &error as &dyn std::error::Error,
                "discovery of the API groups failed; native API requirements stay unmet"
            );
            return None;
        }
        Err(_) => {
            tracing::warn!(
                reason = within("/apis"),
                "discovery of the API groups failed; native API requirements stay unmet"
            );
            return None;
        }
    }
    for (group, version, group_version) in versions {
        let request = async {
            if group.is_empty() {
                client.list_core_api_resources(&version).await
            } else {
                client.list_api_group_resources(&group_version).await
            }
        };
        match tokio::time::timeout(DISCOVERY_REQUEST_TIMEOUT, request).await {
            Ok(Ok(list)) => {
                for resource in list.resources {
                    // Subresources (`pods/status`) are not kinds of their own.
                    if !resource.name.contains('/') {
                        kinds.insert((group.clone(), version.clone(), resource.kind));
                    }
                }
            }
            Ok(Err(error)) => tracing::warn!(
                error = &error as &dyn std::error::Error,
                group_version,
                "API group unavailable; its kinds count as not served"
            ),
            Err(_) => tracing::warn!(
                reason = within(&group_version),
                "API group unavailable; its kinds count as not served"
            ),
        }
    }
    Some(kinds)
}

/// Requeue the CSVs named by an object's owner labels and owner references.
fn requeue_owner<K: Resource>(shared: &Shared, obj: &K) {
    if let Some(namespace) = obj.meta().namespace.as_deref() {
        for owner in obj
            .meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.kind == "ClusterServiceVersion")
        {
            requeue(shared, ObjectKey::new(namespace, owner.name.clone()));
        }
    }
    let labels = obj.meta().labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).cloned();
    if get(annotations::OWNER_KIND).as_deref() != Some("ClusterServiceVersion") {
        return;
    }
    if let (Some(name), Some(namespace)) =
        (get(annotations::OWNER), get(annotations::OWNER_NAMESPACE))
    {
        requeue(shared, ObjectKey::new(namespace, name));
    }
}

/// A service account named by an OperatorGroup's `spec.serviceAccountName` changed: that group syncs its
/// `status.serviceAccountRef` and condition.
fn nudge_groups_naming(shared: &Shared, account: &ServiceAccount) {
    let (Some(name), Some(namespace)) = (
        account.metadata.name.as_deref(),
        account.metadata.namespace.as_deref(),
    ) else {
        return;
    };
    for group in crate::operator_group::groups_in(shared, namespace) {
        if group.spec.service_account_name.as_deref() == Some(name)
            && let Some(key) = ObjectKey::of(group.as_ref())
        {
            let msg = messages::msg::OperatorGroupMsg::NamespaceChanged(
                key.namespace_or_empty().to_string(),
            );
            shared.registries.operator_groups.do_send(Forward(key, msg));
        }
    }
}

/// Requeue every other CSV of the namespace whose strategy lists a deployment of that name (a newer or older
/// CSV of the same operator installs the same deployment; each must see the other's writes).
fn requeue_deployment_users(shared: &Shared, deployment: &Deployment) {
    let (Some(name), Some(namespace)) = (
        deployment.metadata.name.as_deref(),
        deployment.metadata.namespace.as_deref(),
    ) else {
        return;
    };
    for csv in shared.stores.csvs.state() {
        let lists = csv.metadata.namespace.as_deref() == Some(namespace)
            && csv
                .spec
                .install
                .spec
                .as_ref()
                .is_some_and(|s| s.deployments.iter().any(|d| d.name == name));
        if lists && let Some(key) = ObjectKey::of(csv.as_ref()) {
            requeue(shared, key);
        }
    }
}

/// CRDs are listed a few at a time: a page is decoded whole (schemas and all) before the projection drops the
/// schemas, and glibc keeps the heap that peak grew (an empty cluster's eight OLM CRDs left ~5 MiB of it; a
/// cluster with hundreds of CRDs, tens of MiB).
const CRD_PAGE: u32 = 2;

/// What olm-operator reads of a CRD is its names, served versions, conditions, labels and conversion: the
/// versions' OpenAPI schemas (most of a CRD's size, megabytes for some operators) are not kept in the store.
pub fn without_schemas(crd: &mut CustomResourceDefinition) {
    for version in &mut crd.spec.versions {
        version.schema = None;
    }
}

/// Requeue every CSV owning or requiring the CRD.
fn requeue_crd_users(shared: &Shared, crd: &CustomResourceDefinition) {
    let Some(name) = crd.metadata.name.as_deref() else {
        return;
    };
    for csv in shared.stores.csvs.state() {
        let defs = csv.spec.custom_resource_definitions.as_ref();
        let uses = defs.is_some_and(|d| {
            d.owned
                .iter()
                .flatten()
                .chain(d.required.iter().flatten())
                .any(|c| c.name == name)
        });
        if uses && let Some(key) = ObjectKey::of(csv.as_ref()) {
            requeue(shared, key);
        }
    }
}

/// Requeue every cached CSV matching `pred`.
pub fn requeue_where(shared: &Shared, pred: impl Fn(&ClusterServiceVersion) -> bool) {
    shared.requeue_csvs_where(pred);
}

/// Ask the actor of `key` (if it runs) to reconcile now: routed by the CSV registry itself.
pub fn requeue(shared: &Shared, key: ObjectKey) {
    shared.requeue_csv(key);
}

fn dependency_changed() -> Requeue {
    Requeue {
        reason: RequeueReason::DependencyChanged,
    }
}
