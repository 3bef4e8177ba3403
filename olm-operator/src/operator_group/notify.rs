//! The async side of a group sync ([`apply`] a plan, clean up after deletion) and the typed messages between
//! the group actors and the rest: CSV actors telling their group a member changed, the Namespace and
//! OLMConfig stores nudging every group, groups requeueing CSVs.

use super::effects;
use super::plan::Plan;
use crate::rbac::render::api_cluster_roles;
use crate::shared::Shared;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use kube::runtime::reflector::store::Writer;
use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{OperatorGroupMsg, Requeue, RequeueReason};
use olm_runtime::registry::{Ask, Broadcast, Filter, Forward};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What a sync achieved, folded back into the actor.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ok: bool,
    pub fingerprint: String,
    pub group_roles_hash: String,
    pub api_roles_done: Vec<String>,
    /// Copies created by this sync.
    pub created: Vec<ObjectKey>,
    pub groups_in_namespace: usize,
}

/// Perform a plan: status first (OLM returns after a target change; we go on with the new status), then
/// labels, member annotations, pruning, ClusterRoles, copies; finally requeue CSVs if the group's targets or
/// APIs changed, and the sibling groups if their number changed.
pub async fn apply(
    shared: &Shared,
    key: &ObjectKey,
    group: &Arc<OperatorGroup>,
    plan: Plan,
    roles_changed: bool,
    fingerprint_changed: bool,
    siblings_changed: bool,
) -> Outcome {
    let client = &shared.client;
    let mut ok = true;
    let mut fail = |what: &str, error: &(dyn std::error::Error + 'static)| {
        tracing::warn!(og = %key, error = %olm_runtime::error::chain(error), "{what} failed; retrying");
        ok = false;
    };
    let count = |kind: &str, n: usize| super::metrics::count(&shared.metrics, kind, n);
    count("status", usize::from(plan.status.is_some()));
    count("namespace_label", plan.labels.len());
    count("annotate_csv", plan.annotate.len());
    count("prune", usize::from(plan.prune.is_some()));
    if roles_changed {
        count("cluster_role", plan.group_roles.len());
    }
    if let Some(status) = &plan.status
        && let Err(e) = effects::write_status(client, key, status).await
    {
        fail("status", &e);
    }
    if let Some(account) = &plan.label_account
        && let Err(e) = effects::label_account(client, account).await
    {
        fail("service account label", &e);
    }
    if !plan.labels.is_empty()
        && let Err(e) = effects::label_namespaces(client, plan.labels).await
    {
        fail("namespace labels", &e);
    }
    for (csv, wanted) in &plan.annotate {
        if let Err(e) = effects::annotate_csv(client, csv, wanted).await {
            fail("member annotations", &e);
        }
    }
    if let Some(kept) = plan.prune {
        tracing::info!(og = %key, kept = %super::provided_apis::format(&kept), "pruning provided apis");
        if let Err(e) = effects::change_provided_apis(client, key, move |current| {
            current.intersection(&kept).cloned().collect()
        })
        .await
        {
            fail("pruning provided apis", &e);
        }
    }
    if roles_changed && let Err(e) = effects::apply_cluster_roles(client, plan.group_roles).await {
        fail("group cluster roles", &e);
    }
    let mut api_roles_done = Vec::new();
    for (done, api) in plan.api_roles {
        let owner = if api.is_crd {
            crd_owner(client, &api.name).await
        } else {
            None
        };
        if api.is_crd && owner.is_none() {
            continue;
        }
        match effects::apply_cluster_roles(client, api_cluster_roles(&api, owner)).await {
            Ok(()) => api_roles_done.push(done),
            Err(e) => fail("per-api cluster roles", &e),
        }
    }
    for rbac in &plan.tenant_rbac {
        count(
            "tenant_rbac",
            rbac.roles.len()
                + rbac.bindings.len()
                + rbac.cluster_roles.len()
                + rbac.cluster_bindings.len()
                + 2 * usize::from(rbac.unlift.is_some()),
        );
        match effects::apply_tenant_rbac(client, rbac).await {
            Ok(()) => api_roles_done.push(rbac.done.clone()),
            Err(e) => fail("operator rbac for targets", &e),
        }
    }
    if !plan.copy_warnings.is_empty() {
        let recorder = crate::events::recorder(client.clone());
        for warning in &plan.copy_warnings {
            match super::copy_warning::apply(client, &recorder, warning).await {
                Ok(()) => api_roles_done.push(warning.done().to_string()),
                Err(e) => fail("DisabledCopiedCSVs event", &e),
            }
        }
    }
    let mut created = Vec::new();
    if !plan.copies.is_empty() {
        let count = plan.copies.len();
        created = plan
            .copies
            .iter()
            .filter_map(|w| {
                if let super::writes::CopyWrite::Create(c) = w {
                    ObjectKey::of(c.as_ref())
                } else {
                    None
                }
            })
            .collect();
        let (requests, result) = effects::write_copies(client, plan.copies).await;
        super::metrics::count(&shared.metrics, "copied_csv", requests);
        tracing::debug!(og = %key, writes = count, requests, "copied csvs synced");
        super::olm_config::changed(shared);
        if let Err(e) = result {
            created.clear();
            fail("copied csvs", &e);
        }
    }
    if fingerprint_changed {
        requeue_csvs(shared, plan.requeue.into_iter().collect()).await;
    }
    if siblings_changed {
        for sibling in super::groups_in(shared, key.namespace_or_empty()) {
            if let Some(sibling_key) = ObjectKey::of(sibling.as_ref())
                && &sibling_key != key
            {
                send_to_group(
                    shared,
                    &sibling_key,
                    OperatorGroupMsg::NamespaceChanged(key.namespace_or_empty().to_string()),
                );
            }
        }
    }
    let _ = group;
    Outcome {
        ok,
        fingerprint: plan.fingerprint,
        group_roles_hash: plan.group_roles_hash,
        api_roles_done,
        created,
        groups_in_namespace: plan.groups_in_namespace,
    }
}

async fn crd_owner(client: &kube::Client, name: &str) -> Option<OwnerReference> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = api.get_opt(name).await.ok().flatten()?;
    Some(OwnerReference {
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        name: name.to_string(),
        uid: crd.metadata.uid?,
        block_owner_deletion: Some(false),
        controller: Some(false),
    })
}

/// Clean up after a deleted group: its ClusterRoles, its namespace labels; then nudge the CSVs of its
/// namespace (they lost their group), the CSVs anywhere providing one of its `apis` (a conflict with it is
/// gone) and its sibling groups (the `MultipleOperatorGroup` condition).
pub async fn group_deleted(
    shared: &Shared,
    key: &ObjectKey,
    uid: Option<&str>,
    apis: &super::provided_apis::ApiSet,
) {
    // Its ClusterRoles: the janitor's, which retries (a failed delete here was logged and lost: the roles of a
    // namespace deleted under API faults stayed for good).
    shared
        .registries
        .janitor
        .do_send(crate::routes::JanitorMsg::GroupGone(key.clone()));
    if let Some(uid) = uid {
        let namespaces: Vec<(String, std::collections::BTreeMap<String, String>)> = shared
            .stores
            .namespaces
            .state()
            .iter()
            .filter_map(|n| {
                Some((
                    n.metadata.name.clone()?,
                    n.metadata.labels.clone().unwrap_or_default(),
                ))
            })
            .collect();
        let changes = super::machine::namespace_labels(
            uid,
            None,
            namespaces.iter().map(|(n, l)| (n.as_str(), l)),
        );
        if let Err(e) = effects::label_namespaces(&shared.client, changes).await {
            tracing::warn!(og = %key, error = &e as &dyn std::error::Error, "removing the group's namespace labels failed");
        }
    }
    let members: BTreeSet<ObjectKey> = shared
        .stores
        .csvs
        .state()
        .iter()
        .filter(|c| {
            c.metadata.namespace.as_deref() == key.namespace.as_deref()
                || (!c.is_copied() && !super::provided_apis::of_csv(c).is_disjoint(apis))
        })
        .filter_map(|c| ObjectKey::of(c.as_ref()))
        .collect();
    requeue_csvs(shared, members).await;
    for sibling in super::groups_in(shared, key.namespace_or_empty()) {
        if let Some(sibling_key) = ObjectKey::of(sibling.as_ref())
            && &sibling_key != key
        {
            send_to_group(
                shared,
                &sibling_key,
                OperatorGroupMsg::NamespaceChanged(key.namespace_or_empty().to_string()),
            );
        }
    }
}

/// Requeue the actors of these CSVs (those that exist: CSVs outside the scope have none).
pub async fn requeue_csvs(shared: &Shared, keys: BTreeSet<ObjectKey>) {
    requeue_csv_keys(shared, keys.into_iter().collect());
}

fn requeue_csv_keys(shared: &Shared, keys: Vec<ObjectKey>) {
    if keys.is_empty() {
        return;
    }
    // Routed by the CSV registry itself: no list of every actor, no look-up round trip.
    shared.registries.csvs.do_send(Broadcast {
        filter: Filter::Keys(keys),
        msg: Requeue {
            reason: RequeueReason::DependencyChanged,
        },
    });
}

/// Send a message to one group's actor, if it runs: routed by the group registry itself (no look-up).
pub fn send_to_group(shared: &Shared, key: &ObjectKey, msg: OperatorGroupMsg) {
    shared
        .registries
        .operator_groups
        .do_send(Forward(key.clone(), msg));
}

/// Nudge every group actor (namespace or OLMConfig changes).
pub fn all_groups(shared: &Shared, msg: OperatorGroupMsg) {
    shared.registries.operator_groups.do_send(Broadcast {
        filter: Filter::All,
        msg,
    });
}

/// A CSV changed or went away: tell the group(s) that care. A member tells the groups of its namespace; a
/// copy tells the group named by its `olm.operatorGroup`/`olm.operatorNamespace` annotations (copy GC).
pub fn member_changed(shared: &Shared, key: &ObjectKey, csv: Option<&ClusterServiceVersion>) {
    let mut targets: Vec<ObjectKey> = Vec::new();
    if let Some(csv) = csv
        && csv.is_copied()
    {
        super::olm_config::changed(shared);
        let a = csv.metadata.annotations.clone().unwrap_or_default();
        if let (Some(group), Some(ns)) = (
            a.get(annotations::OPERATOR_GROUP),
            a.get(annotations::OPERATOR_NAMESPACE),
        ) {
            targets.push(ObjectKey::new(ns.clone(), group.clone()));
        }
    } else {
        targets.extend(
            super::groups_in(shared, key.namespace_or_empty())
                .iter()
                .filter_map(|g| ObjectKey::of(g.as_ref())),
        );
    }
    let parent_gone = csv.is_some_and(|c| !c.is_copied())
        && shared
            .stores
            .csvs
            .get(
                &kube::runtime::reflector::ObjectRef::new(&key.name)
                    .within(key.namespace_or_empty()),
            )
            .is_none();
    if parent_gone && targets.is_empty() {
        // No group left to collect the copies of a deleted parent: each copy's own actor does
        // (`copied_csv::orphan`); requeue them.
        let copies: Vec<ObjectKey> = shared
            .stores
            .csvs
            .state()
            .into_iter()
            .filter(|c| c.is_copied() && c.metadata.name.as_deref() == Some(key.name.as_str()))
            .filter(|c| crate::copied_csv::orphan::parent_namespace(c) == key.namespace.as_deref())
            .filter_map(|c| ObjectKey::of(c.as_ref()))
            .collect();
        requeue_csv_keys(shared, copies);
    }
    // Routed by the group registry itself (no look-up, no spawned task). A copy whose group has no actor any
    // more collects itself in its own actor when its parent is gone (`copied_csv::orphan`).
    for group in targets {
        shared
            .registries
            .operator_groups
            .do_send(Forward(group, OperatorGroupMsg::MemberChanged(key.clone())));
    }
}

/// The Namespace store; every applied or deleted namespace nudges every group (targets by selector, labels,
/// copies into new namespaces).
pub fn namespace_store(
    shared: &Shared,
    writer: Writer<k8s_openapi::api::core::v1::Namespace>,
) -> tokio::task::JoinHandle<()> {
    let shared = shared.clone();
    let api = Api::<k8s_openapi::api::core::v1::Namespace>::all(shared.client.clone());
    olm_runtime::watch::spawn_store(
        writer,
        api,
        kube::runtime::watcher::Config::default(),
        move |ns: &k8s_openapi::api::core::v1::Namespace| {
            let name = ns.metadata.name.clone().unwrap_or_default();
            if ns.metadata.deletion_timestamp.is_some() {
                shared
                    .registries
                    .janitor
                    .do_send(crate::routes::JanitorMsg::NamespaceGone(name.clone()));
            }
            all_groups(&shared, OperatorGroupMsg::NamespaceChanged(name));
        },
    )
}

/// The OLMConfig store; a change nudges every group (`disableCopiedCSVs`).
pub fn olm_config_store(
    shared: &Shared,
    writer: Writer<messages::crd::olm_config::OLMConfig>,
) -> tokio::task::JoinHandle<()> {
    let shared = shared.clone();
    let api = Api::<messages::crd::olm_config::OLMConfig>::all(shared.client.clone());
    olm_runtime::watch::spawn_store(
        writer,
        api,
        kube::runtime::watcher::Config::default(),
        move |_config: &messages::crd::olm_config::OLMConfig| {
            all_groups(&shared, OperatorGroupMsg::OlmConfigChanged);
            super::olm_config::changed(&shared);
        },
    )
}

/// Why a CSV's request to its group failed.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("operator group {0} has no running actor")]
    NoActor(ObjectKey),
    #[error("operator group {0} did not answer")]
    Mailbox(ObjectKey, #[source] actix::MailboxError),
    #[error(transparent)]
    Refused(#[from] messages::msg::ProvidedApisError),
    #[error(transparent)]
    Routed(olm_runtime::registry::AskError),
}

/// For a CSV actor: ask the one actor of the CSV's group to change `olm.providedAPIs` and wait for the answer
/// (the set after the change). The group applies unions and differences itself, so concurrent CSVs lose nothing.
pub async fn change_provided_apis(
    shared: &Shared,
    csv: &ObjectKey,
    change: messages::msg::ApiChange,
    apis: BTreeSet<String>,
) -> Result<BTreeSet<String>, AskError> {
    let groups = super::groups_in(shared, csv.namespace_or_empty());
    let [group] = groups.as_slice() else {
        return Err(AskError::NoActor(ObjectKey::new(
            csv.namespace_or_empty(),
            "",
        )));
    };
    let key = ObjectKey::of(group.as_ref())
        .ok_or_else(|| AskError::NoActor(ObjectKey::new(csv.namespace_or_empty(), "")))?;
    let registry = &shared.registries.group_asks;
    let msg = messages::msg::ChangeProvidedApis {
        csv: csv.clone(),
        change,
        apis,
    };
    // Routed by the group registry (no look-up round trip); the group's actor answers here.
    let answer = registry
        .send(Ask(key.clone(), msg))
        .await
        .map_err(|e| AskError::Mailbox(key.clone(), e))?;
    match answer {
        Ok(result) => Ok(result?),
        Err(olm_runtime::registry::AskError::NoActor(key)) => Err(AskError::NoActor(key)),
        Err(olm_runtime::registry::AskError::Mailbox(key, e)) => Err(AskError::Mailbox(key, e)),
        Err(e @ olm_runtime::registry::AskError::Dropped(_)) => Err(AskError::Routed(e)),
    }
}
