//! The chaos convergence checker: a namespace's OLM end state as a normalised [`Snapshot`] (generated names,
//! uids, timestamps and resourceVersions left out), the readable [`diff`] of two snapshots, and the
//! [`invariants`] every end state must hold (no duplicate InstallPlans, no CSV between phases, no Deployment
//! claimed by two CSVs). The comparison is pure and table-tested; [`snapshot`] reads the cluster.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use messages::crd::annotations::{OWNER, OWNER_KIND, OWNER_NAMESPACE};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Subscription;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One normalised fact per object: `kind/name` → a one-line summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub facts: BTreeMap<String, String>,
}

impl Snapshot {
    pub fn insert(&mut self, kind: &str, name: &str, summary: impl Into<String>) {
        self.facts.insert(format!("{kind}/{name}"), summary.into());
    }
}

/// `- key: want` / `+ key: got` lines for every fact that differs (empty: the same end state).
pub fn diff(want: &Snapshot, got: &Snapshot) -> Vec<String> {
    let mut lines = Vec::new();
    let keys: std::collections::BTreeSet<&String> =
        want.facts.keys().chain(got.facts.keys()).collect();
    for key in keys {
        match (want.facts.get(key), got.facts.get(key)) {
            (Some(w), Some(g)) if w == g => {}
            (Some(w), Some(g)) => {
                lines.push(format!("- {key}: {w}"));
                lines.push(format!("+ {key}: {g}"));
            }
            (Some(w), None) => lines.push(format!("- {key}: {w}")),
            (None, Some(g)) => lines.push(format!("+ {key}: {g}")),
            (None, None) => {}
        }
    }
    lines
}

/// The phases a CSV may rest in once the workload is done (Replacing/Deleting ones are gone by then).
const RESTING: [&str; 2] = ["Succeeded", "Failed"];

/// What the end state breaks, from the raw facts the snapshot was built from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Raw {
    /// (CSV name, phase)
    pub csvs: Vec<(String, String)>,
    /// (Subscription name, CSV names of one of its InstallPlans)
    pub plans: Vec<(String, Vec<String>)>,
    /// (Deployment name, CSV names that claim it: owner label and owner references)
    pub deployments: Vec<(String, Vec<String>)>,
}

pub fn invariants(raw: &Raw) -> Vec<String> {
    let mut broken = Vec::new();
    for (csv, phase) in &raw.csvs {
        if !RESTING.contains(&phase.as_str()) {
            broken.push(format!("CSV {csv} left between phases ({phase:?})"));
        }
    }
    let mut seen: BTreeMap<(&String, &Vec<String>), usize> = BTreeMap::new();
    for (sub, csvs) in &raw.plans {
        *seen.entry((sub, csvs)).or_default() += 1;
    }
    for ((sub, csvs), count) in seen {
        if count > 1 {
            broken.push(format!(
                "Subscription {sub} has {count} InstallPlans for {csvs:?}"
            ));
        }
    }
    for (deployment, owners) in &raw.deployments {
        let mut distinct = owners.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() > 1 {
            broken.push(format!("Deployment {deployment} claimed by {distinct:?}"));
        }
    }
    broken
}

fn json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn text(value: &Value, pointer: &str) -> String {
    match value.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn name_of<K: Resource>(obj: &K) -> String {
    obj.meta().name.clone().unwrap_or_default()
}

/// Read the namespace's end state: CSVs and phases, Subscriptions, InstallPlans per Subscription (by their
/// CSV names: plan names are generated), Deployments with their pod spec and owner, Roles and RoleBindings
/// by owner CSV and rules (their names are generated).
pub async fn snapshot(client: &Client, ns: &str) -> anyhow::Result<(Snapshot, Raw)> {
    let lp = ListParams::default();
    let mut snap = Snapshot::default();
    let mut raw = Raw::default();
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    for csv in csvs.list(&lp).await?.items {
        let v = json(&csv);
        let phase = text(&v, "/status/phase");
        // A copy (`olm.copiedFrom`: an all-namespaces or multi-namespace operator's CSV in a target namespace)
        // says whose copy it is, so a missing, extra or stale copy is a difference.
        let copied_from = csv
            .meta()
            .labels
            .as_ref()
            .and_then(|l| l.get("olm.copiedFrom"))
            .map(|from| format!(" copiedFrom={from:?}"))
            .unwrap_or_default();
        snap.insert(
            "CSV",
            &name_of(&csv),
            format!(
                "phase={phase} reason={}{copied_from}",
                text(&v, "/status/reason")
            ),
        );
        raw.csvs.push((name_of(&csv), phase));
    }
    let subs: Api<Subscription> = Api::namespaced(client.clone(), ns);
    for sub in subs.list(&lp).await?.items {
        let v = json(&sub);
        snap.insert(
            "Subscription",
            &name_of(&sub),
            format!(
                "state={} installed={} current={}",
                text(&v, "/status/state"),
                text(&v, "/status/installedCSV"),
                text(&v, "/status/currentCSV")
            ),
        );
    }
    let plans: Api<InstallPlan> = Api::namespaced(client.clone(), ns);
    let mut per_sub: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for plan in plans.list(&lp).await?.items {
        let v = json(&plan);
        let csvs: Vec<String> = v
            .pointer("/spec/clusterServiceVersionNames")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut owners: Vec<String> = plan
            .meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.kind == "Subscription")
            .map(|o| o.name.clone())
            .collect();
        // A plan for a Subscription and the one generated for its dependency has both as owners, in the order
        // they were added.
        owners.sort();
        let sub = owners.join("+");
        per_sub.entry(sub.clone()).or_default().push(format!(
            "{csvs:?} approval={} approved={} phase={}",
            text(&v, "/spec/approval"),
            text(&v, "/spec/approved"),
            text(&v, "/status/phase")
        ));
        raw.plans.push((sub, csvs));
    }
    for (sub, mut lines) in per_sub {
        lines.sort();
        snap.insert("InstallPlans", &sub, lines.join("; "));
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    for d in deployments.list(&lp).await?.items {
        let mut owners: Vec<String> = d
            .metadata
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.kind == "ClusterServiceVersion")
            .map(|o| o.name.clone())
            .collect();
        let label = d
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(messages::crd::annotations::OWNER).cloned());
        owners.extend(label.clone());
        let spec = d
            .spec
            .as_ref()
            .map(|s| json(&s.template.spec))
            .unwrap_or(Value::Null);
        snap.insert(
            "Deployment",
            &name_of(&d),
            format!("owner={} pod={spec}", label.unwrap_or_default()),
        );
        raw.deployments.push((name_of(&d), owners));
    }
    let roles: Api<Role> = Api::namespaced(client.clone(), ns);
    let mut rbac: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // RBAC whose owner CSV is gone is the garbage collector's to delete, on its own time: left out, or the
    // snapshot would depend on how soon after the last replacement it is taken.
    let live: Vec<String> = raw.csvs.iter().map(|(name, _)| name.clone()).collect();
    let collected =
        |owner: &str| !owner.is_empty() && owner.split('+').all(|o| !live.iter().any(|c| c == o));
    for role in roles.list(&lp).await?.items {
        let owner = csv_owner(role.meta());
        if collected(&owner) {
            continue;
        }
        rbac.entry(format!("Roles of {owner}"))
            .or_default()
            .push(json(&role.rules).to_string());
    }
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns);
    for binding in bindings.list(&lp).await?.items {
        let owner = csv_owner(binding.meta());
        if collected(&owner) {
            continue;
        }
        rbac.entry(format!("RoleBindings of {owner}"))
            .or_default()
            .push(json(&binding.subjects).to_string());
    }
    for (what, mut lines) in rbac {
        lines.sort();
        snap.insert("RBAC", &what, lines.join("; "));
    }
    Ok((normalise_namespace(snap, ns), raw))
}

/// The end state of several namespaces of one run, each under a role (`ns`, `ns2`...): every fact's key is
/// prefixed `<role>:` and every namespace name of the run, in keys and values, reads `<role>` (a generated
/// Subscription's name holds its catalog's namespace; a copy names its parent's namespace).
pub async fn snapshot_of(
    client: &Client,
    namespaces: &[(&str, &str)],
) -> anyhow::Result<(Snapshot, Raw)> {
    let mut all = Snapshot::default();
    let mut raw = Raw::default();
    for (role, ns) in namespaces {
        let (snap, r) = snapshot(client, ns).await?;
        for (k, v) in snap.facts {
            all.facts.insert(format!("{role}:{k}"), v);
        }
        let mut cluster: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (kind, owner, what) in cluster_rbac(client, ns).await? {
            cluster
                .entry(format!("{role}:cluster:{kind} of {owner}"))
                .or_default()
                .push(what);
        }
        for (key, mut lines) in cluster {
            lines.sort();
            all.facts.insert(key, lines.join("; "));
        }
        let named = |name: String| format!("{role}:{name}");
        raw.csvs
            .extend(r.csvs.into_iter().map(|(n, p)| (named(n), p)));
        raw.plans
            .extend(r.plans.into_iter().map(|(n, c)| (named(n), c)));
        raw.deployments
            .extend(r.deployments.into_iter().map(|(n, o)| (named(n), o)));
    }
    Ok((normalise_names(all, namespaces), raw))
}

/// Replace each namespace name by `<role>` in keys and values, the longest name first (a run's second
/// namespace is named after its first).
pub fn normalise_names(snap: Snapshot, namespaces: &[(&str, &str)]) -> Snapshot {
    let mut by_length: Vec<&(&str, &str)> = namespaces.iter().collect();
    by_length.sort_by_key(|(_, ns)| std::cmp::Reverse(ns.len()));
    let replace = |text: String| {
        by_length
            .iter()
            .fold(text, |t, (role, ns)| t.replace(ns, &format!("<{role}>")))
    };
    Snapshot {
        facts: snap
            .facts
            .into_iter()
            .map(|(k, v)| (replace(k), replace(v)))
            .collect(),
    }
}

/// The ClusterRoles of namespace `ns`'s OperatorGroups (`olm.owner.kind=OperatorGroup`, the provided-API
/// roles `<group>-admin`/`-edit`/`-view`): `(owner group, role name)`. Once the group or its namespace is gone,
/// olm-operator's janitor deletes them.
pub async fn group_roles(client: &Client, ns: &str) -> anyhow::Result<Vec<(String, String)>> {
    let lp = ListParams::default().labels(&format!(
        "{OWNER_NAMESPACE}={ns},{OWNER_KIND}=OperatorGroup"
    ));
    Ok(Api::<ClusterRole>::all(client.clone())
        .list_metadata(&lp)
        .await?
        .items
        .into_iter()
        .map(|r| {
            let owner = r
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(OWNER).cloned())
                .unwrap_or_default();
            (owner, r.metadata.name.unwrap_or_default())
        })
        .collect())
}

/// The cluster-scoped RBAC (ClusterRoles, ClusterRoleBindings) labelled as owned by CSVs of namespace `ns`
/// (`olm.owner.namespace`, not an OperatorGroup's): `(kind, owner CSV, rules or subjects)`. What a CSV's
/// `clusterPermissions` (or a role lifted for an all-namespaces group) made; once its CSV or namespace is gone
/// the janitor deletes it.
pub async fn cluster_rbac(
    client: &Client,
    ns: &str,
) -> anyhow::Result<Vec<(String, String, String)>> {
    let lp = ListParams::default().labels(&format!(
        "{OWNER_NAMESPACE}={ns},{OWNER_KIND}!=OperatorGroup"
    ));
    let owner = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.labels
            .as_ref()
            .and_then(|l| l.get(OWNER).cloned())
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    for role in Api::<ClusterRole>::all(client.clone())
        .list(&lp)
        .await?
        .items
    {
        found.push((
            "ClusterRoles".to_string(),
            owner(role.meta()),
            json(&role.rules).to_string(),
        ));
    }
    for binding in Api::<ClusterRoleBinding>::all(client.clone())
        .list(&lp)
        .await?
        .items
    {
        found.push((
            "ClusterRoleBindings".to_string(),
            owner(binding.meta()),
            json(&binding.subjects).to_string(),
        ));
    }
    Ok(found)
}

/// Each run has its own namespace: its name inside a fact (a RoleBinding's subject...) reads `<ns>`.
pub fn normalise_namespace(snap: Snapshot, ns: &str) -> Snapshot {
    let quoted = format!("\"{ns}\"");
    Snapshot {
        facts: snap
            .facts
            .into_iter()
            .map(|(k, v)| (k, v.replace(&quoted, "\"<ns>\"")))
            .collect(),
    }
}

fn csv_owner(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.owner_references
        .iter()
        .flatten()
        .filter(|o| o.kind == "ClusterServiceVersion")
        .map(|o| o.name.clone())
        .collect::<Vec<_>>()
        .join("+")
}

/// When a run may set apart what is listed in its namespace deleted mid-run ([`set_apart`]): only when the
/// checker itself saw the deletion confirmed (the namespace read as gone after the test deleted it, at
/// `gone_seen`), and a restart of kube-apiserver or etcd (at `restarts`) came after the deletion was asked for (at
/// `deleted`): the one cause known to leave such objects. Otherwise an object listed there is a difference like
/// any other. Times are offsets from the run's start.
pub fn may_set_apart(
    deleted: Option<std::time::Duration>,
    gone_seen: Option<std::time::Duration>,
    restarts: &[std::time::Duration],
) -> bool {
    match (deleted, gone_seen) {
        (Some(deleted), Some(gone)) => gone >= deleted && restarts.iter().any(|r| *r >= deleted),
        _ => false,
    }
}

/// Set apart what the control plane left of a namespace that no longer exists: namespaced objects still listed
/// under namespace role `role` (keys `<role>:...`, in the snapshot and the raw lists) once the namespace itself is
/// gone. Kubernetes (seen on 1.20) can leave such objects when kube-apiserver is killed and restarted while a namespace is being
/// deleted (reproduced with kubectl alone, README "Chaos testing", session 9); the apiserver refuses creates in a
/// namespace that does not exist, so no operator can have written them after the deletion. Cluster-scoped objects
/// labelled with the namespace (`<role>:cluster:...`) stay: deleting those is the operators' job. Returns the
/// snapshot and lists without them, and the keys set apart.
pub fn set_apart(snap: Snapshot, raw: Raw, role: &str) -> (Snapshot, Raw, Vec<String>) {
    let prefix = format!("{role}:");
    let cluster = format!("{role}:cluster:");
    let gone = |k: &str| k.starts_with(&prefix) && !k.starts_with(&cluster);
    let (apart, facts): (BTreeMap<String, String>, BTreeMap<String, String>) =
        snap.facts.into_iter().partition(|(k, _)| gone(k));
    let raw = Raw {
        csvs: raw.csvs.into_iter().filter(|(k, _)| !gone(k)).collect(),
        plans: raw.plans.into_iter().filter(|(k, _)| !gone(k)).collect(),
        deployments: raw
            .deployments
            .into_iter()
            .filter(|(k, _)| !gone(k))
            .collect(),
    };
    (Snapshot { facts }, raw, apart.into_keys().collect())
}

#[cfg(test)]
mod tests;
