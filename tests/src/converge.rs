//! The chaos convergence checker: a namespace's OLM end state as a normalised [`Snapshot`] (generated names,
//! uids, timestamps and resourceVersions left out), the readable [`diff`] of two snapshots, and the
//! [`invariants`] every end state must hold (no duplicate InstallPlans, no CSV between phases, no Deployment
//! claimed by two CSVs). The comparison is pure and table-tested; [`snapshot`] reads the cluster.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
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
        snap.insert(
            "CSV",
            &name_of(&csv),
            format!("phase={phase} reason={}", text(&v, "/status/reason")),
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
        let owners: Vec<String> = plan
            .meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.kind == "Subscription")
            .map(|o| o.name.clone())
            .collect();
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

#[cfg(test)]
mod tests;
