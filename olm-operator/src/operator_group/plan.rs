//! Gather one OperatorGroup sync from the shared stores into a [`Plan`] (synchronous, no I/O): the pure
//! decisions of `machine`, `targets` and `copied_csv` applied to what the stores hold now.

use super::machine::{self, LabelChange};
use super::provided_apis::{self, ApiSet};
use super::service_account;
use super::targets::{self, Targets};
use super::writes::{CopyWrite, TenantRbac};
use crate::copied_csv;
use crate::rbac::render::{self, OwnedApi};
use crate::shared::Shared;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::olm_config::OLM_CONFIG_NAME;
use messages::crd::operator_group::{OperatorGroup, OperatorGroupStatus};
use messages::key::ObjectKey;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// Everything one sync writes.
#[derive(Debug, Default)]
pub struct Plan {
    pub status: Option<OperatorGroupStatus>,
    pub labels: Vec<LabelChange>,
    pub annotate: Vec<(ObjectKey, BTreeMap<String, String>)>,
    pub prune: Option<ApiSet>,
    pub group_roles: Vec<ClusterRole>,
    pub group_roles_hash: String,
    /// Per-API roles still to ensure, keyed by `<csv uid>/<api>`.
    pub api_roles: Vec<(String, OwnedApi)>,
    pub copies: Vec<CopyWrite>,
    /// Changes when the targets or the APIs change: CSVs are requeued then.
    pub fingerprint: String,
    /// CSVs to requeue when the fingerprint changed: members and every CSV providing one of the APIs (now or
    /// at the previous sync: a CSV failed on an API this group just dropped must look again).
    pub requeue: Vec<ObjectKey>,
    /// The APIs the group stands for at this sync (the next sync's `previous_apis`).
    pub apis: ApiSet,
    pub groups_in_namespace: usize,
    /// The operators' RBAC copied into target namespaces or lifted cluster-wide, not yet applied.
    pub tenant_rbac: Vec<TenantRbac>,
    /// The group's service account, to label `olm.managed=true`.
    pub label_account: Option<ObjectKey>,
    /// `DisabledCopiedCSVs` Warning Events to ensure or clear on members.
    pub copy_warnings: Vec<super::copy_warning::CopyWarning>,
}

/// `done` keys of lifted RBAC (`lift/<csv uid>/<hash>`) and of its removal (`unlift/<csv uid>`).
pub fn lift_key(uid: &str, hash: &str) -> String {
    format!("lift/{uid}/{hash}")
}

pub fn unlift_key(uid: &str) -> String {
    format!("unlift/{uid}")
}

/// Forget the opposite `done` keys of a CSV once RBAC was lifted or unlifted, so a group flipping between all
/// namespaces and a namespace list lifts and removes again each time.
pub fn forget_opposite(done: &mut BTreeSet<String>, applied: &str) {
    if let Some(uid) = applied.strip_prefix("unwarn/") {
        done.remove(&super::copy_warning::warn_key(uid));
    } else if let Some(uid) = applied.strip_prefix("warn/") {
        done.remove(&super::copy_warning::unwarn_key(uid));
    } else if let Some(uid) = applied.strip_prefix("unlift/") {
        let prefix = format!("lift/{uid}/");
        done.retain(|k| !k.starts_with(&prefix));
    } else if let Some(rest) = applied.strip_prefix("lift/")
        && let Some((uid, _)) = rest.split_once('/')
    {
        done.remove(&unlift_key(uid));
    }
}

/// Why a sync cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("computing the targets of {key}")]
    Targets {
        key: ObjectKey,
        #[source]
        source: targets::TargetError,
    },
}

/// `created` holds copies this actor created that the CSV store may not show yet (never created twice).
pub fn plan(
    shared: &Shared,
    group: &Arc<OperatorGroup>,
    done_api_roles: &BTreeSet<String>,
    created: &BTreeSet<ObjectKey>,
    previous_apis: &ApiSet,
    previous_fingerprint: Option<&str>,
) -> Result<Plan, Error> {
    let stores = &shared.stores;
    let (ns_store, csv_store, og_store) =
        (&stores.namespaces, &stores.csvs, &stores.operator_groups);
    let key = ObjectKey::of(group.as_ref()).unwrap_or_else(|| ObjectKey::new("", ""));
    let group_ns = key.namespace_or_empty().to_string();
    let in_scope = |ns: &str| stores.scope.contains(Some(ns));
    // Borrowed from the store's objects: a sync runs for every group on every change, over every namespace.
    let all_namespaces = ns_store.state();
    let namespaces: Vec<(&str, &BTreeMap<String, String>)> = all_namespaces
        .iter()
        .filter_map(|n| {
            let name = n.metadata.name.as_deref()?;
            Some((name, n.metadata.labels.as_ref().unwrap_or(&NO_LABELS)))
        })
        .filter(|(name, _)| in_scope(name))
        .collect();
    let targets =
        targets::select(group, namespaces.iter().copied()).map_err(|source| Error::Targets {
            key: key.clone(),
            source,
        })?;
    let groups_in_namespace = og_store
        .state()
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(group_ns.as_str()))
        .count();
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let mut status = machine::status(group, &targets, groups_in_namespace, &now);
    let found_account = group.spec.service_account_name.as_deref().and_then(|name| {
        stores
            .csv
            .service_accounts
            .get(&kube::runtime::reflector::ObjectRef::new(name).within(&group_ns))
    });
    let account = service_account::Account::of(
        group.spec.service_account_name.as_deref(),
        found_account.as_deref(),
    );
    let base = status
        .clone()
        .unwrap_or_else(|| group.status.clone().unwrap_or_default());
    if let Some(updated) = service_account::reconcile(&base, &account, &now) {
        status = Some(updated);
    }
    let label_account = found_account
        .filter(|sa| service_account::needs_label(sa))
        .and_then(|sa| ObjectKey::of(sa.as_ref()));
    let mut current = group.as_ref().clone();
    if let Some(s) = &status {
        current.status = Some(s.clone());
    }
    let uid = group.metadata.uid.clone().unwrap_or_default();
    let labels = if uid.is_empty() {
        Vec::new()
    } else {
        machine::namespace_labels(&uid, Some(&targets), namespaces.iter().copied())
    };

    let all_csvs = csv_store.state();
    let members: Vec<&Arc<ClusterServiceVersion>> = all_csvs
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(group_ns.as_str()) && !c.is_copied())
        .collect();
    let annotate: Vec<(ObjectKey, BTreeMap<String, String>)> = members
        .iter()
        .filter(|c| super::new_members::group_annotates(c))
        .filter_map(|c| {
            Some((
                ObjectKey::of(c.as_ref())?,
                machine::member_annotations(&current, c)?,
            ))
        })
        .collect();
    let prune = machine::prune(&current, members.iter().map(|c| c.as_ref()));
    let mut apis = machine::all_apis(&current, members.iter().map(|c| c.as_ref()));
    if let Some(kept) = &prune {
        apis = kept
            .union(
                &members
                    .iter()
                    .flat_map(|c| provided_apis::of_csv(c))
                    .collect(),
            )
            .cloned()
            .collect();
    }
    let group_roles = render::group_cluster_roles(&group_ns, &key.name, &apis);
    let group_roles_hash =
        crate::rbac::naming::gvk_hash(&serde_json::to_string(&group_roles).unwrap_or_default());
    let api_roles = members
        .iter()
        .filter(|c| c.phase() == CsvPhase::Succeeded)
        .flat_map(|c| {
            let uid = c.metadata.uid.clone().unwrap_or_default();
            render::owned_apis(c)
                .into_iter()
                .map(move |api| (format!("{uid}/{}", api.key), api))
        })
        .filter(|(done, _)| !done_api_roles.contains(done))
        .collect();

    let copies_enabled = stores
        .olm_config
        .state()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(OLM_CONFIG_NAME))
        .is_none_or(|c| c.spec.features.as_ref().and_then(|f| f.disable_copied_csvs) != Some(true));
    let copy_to = machine::copy_namespaces(
        &group_ns,
        &targets,
        copies_enabled,
        &shared.protected_copy_namespaces,
        namespaces.iter().map(|(n, _)| *n),
    );
    let copies = copy_writes(&current, &key, &members, &all_csvs, &copy_to, created);
    let copy_warnings = super::copy_warning::wanted(
        targets.is_all() && !copies_enabled,
        targets.is_all(),
        &members,
        done_api_roles,
    );
    let lifted = stores.csv.cluster_roles.state();
    let lifted = super::lifted::owners(lifted.iter().map(|r| &r.metadata));
    let tenant_rbac = tenant_rbac(
        &current,
        &group_ns,
        &targets,
        &members,
        &all_csvs,
        &copy_to,
        done_api_roles,
        &lifted,
    );

    // The service account reference too: members failed for good may install now (DetectedClusterChange).
    let account_ref = current
        .status
        .as_ref()
        .and_then(|s| s.service_account_ref.as_ref())
        .and_then(|r| r.uid.clone());
    let fingerprint = format!(
        "{:?}|{}|{}|{account_ref:?}",
        targets,
        provided_apis::format(&apis),
        provided_apis::format(&provided_apis::of_group(&current))
    );
    let requeue = if previous_fingerprint == Some(fingerprint.as_str()) {
        Vec::new()
    } else {
        requeued(&all_csvs, &group_ns, &apis, previous_apis)
    };
    Ok(Plan {
        apis,
        copy_warnings,
        label_account,
        status,
        labels,
        annotate,
        prune,
        group_roles,
        group_roles_hash,
        api_roles,
        copies,
        fingerprint,
        requeue,
        groups_in_namespace,
        tenant_rbac,
    })
}

/// The CSVs to requeue when a group's targets or APIs changed: its members, and every CSV providing one of the
/// APIs it stands for now or stood for at its previous sync.
fn requeued(
    all: &[Arc<ClusterServiceVersion>],
    group_ns: &str,
    apis: &ApiSet,
    previous_apis: &ApiSet,
) -> Vec<ObjectKey> {
    all.iter()
        .filter(|c| !c.is_copied())
        .filter(|c| {
            c.metadata.namespace.as_deref() == Some(group_ns)
                || ((!apis.is_empty() || !previous_apis.is_empty()) && {
                    let provided = provided_apis::of_csv(c);
                    !provided.is_disjoint(apis) || !provided.is_disjoint(previous_apis)
                })
        })
        .filter_map(|c| ObjectKey::of(c.as_ref()))
        .collect()
}

/// The namespace a copied CSV was copied from (its `olm.copiedFrom` label).
fn copied_from(csv: &ClusterServiceVersion) -> Option<&str> {
    csv.metadata
        .labels
        .as_ref()?
        .get(annotations::COPIED_FROM)
        .map(String::as_str)
}

fn copy_writes(
    group: &OperatorGroup,
    key: &ObjectKey,
    members: &[&Arc<ClusterServiceVersion>],
    all: &[Arc<ClusterServiceVersion>],
    copy_to: &BTreeSet<String>,
    created: &BTreeSet<ObjectKey>,
) -> Vec<CopyWrite> {
    let group_ns = key.namespace_or_empty();
    // Borrowed, and built only when there is a copy to make: every CSV of the cluster is read.
    let existing: BTreeMap<(&str, &str), &Arc<ClusterServiceVersion>> = if copy_to.is_empty() {
        all.iter()
            .filter(|c| copied_from(c) == Some(group_ns))
            .filter_map(|c| {
                Some((
                    (
                        c.metadata.namespace.as_deref()?,
                        c.metadata.name.as_deref()?,
                    ),
                    c,
                ))
            })
            .collect()
    } else {
        all.iter()
            .filter_map(|c| {
                Some((
                    (
                        c.metadata.namespace.as_deref()?,
                        c.metadata.name.as_deref()?,
                    ),
                    c,
                ))
            })
            .collect()
    };
    let mut writes = Vec::new();
    let mut wanted_keys = BTreeSet::new();
    for parent in members
        .iter()
        .filter(|c| copied_csv::is_copyable(c) && machine::member_annotations(group, c).is_none())
    {
        let Some(name) = parent.metadata.name.clone() else {
            continue;
        };
        for ns in copy_to {
            wanted_keys.insert((ns.clone(), name.clone()));
            let wanted = copied_csv::render(parent, ns);
            match existing.get(&(ns.as_str(), name.as_str())) {
                None if created.contains(&ObjectKey::new(ns.clone(), name.clone())) => {}
                None => writes.push(CopyWrite::Create(Box::new(wanted))),
                Some(have) => {
                    let drift = copied_csv::drift(have, &wanted);
                    if drift.object || drift.status {
                        writes.push(CopyWrite::Update {
                            wanted: Box::new(wanted),
                            existing: Box::new(have.as_ref().clone()),
                            drift,
                        });
                    }
                }
            }
        }
    }
    // Copies of this group's members that are no longer wanted.
    let parents: BTreeMap<&str, &Arc<ClusterServiceVersion>> = members
        .iter()
        .filter_map(|c| Some((c.metadata.name.as_deref()?, *c)))
        .collect();
    for (&(ns, name), copy) in &existing {
        let ours = ns != group_ns
            && copied_from(copy) == Some(group_ns)
            && copy
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(annotations::OPERATOR_GROUP))
                == Some(&key.name);
        if !ours {
            continue;
        }
        let parent = parents.get(name).map(|p| p.as_ref());
        let still_wanted = wanted_keys.contains(&(ns.to_string(), name.to_string()));
        if copied_csv::dangling(copy, parent, still_wanted).is_some() {
            writes.push(CopyWrite::Delete(ObjectKey::new(ns, name)));
        }
    }
    writes
}

/// The operators' RBAC for the group's targets (spec §2.7, §3.5): copies of each member's Roles and
/// RoleBindings in every namespace holding its copied CSV, or lifted cluster-wide for all namespaces.
#[allow(
    clippy::too_many_arguments,
    reason = "the plan's inputs, each read once from the stores by the caller"
)]
fn tenant_rbac(
    group: &OperatorGroup,
    group_ns: &str,
    targets: &Targets,
    members: &[&Arc<ClusterServiceVersion>],
    all: &[Arc<ClusterServiceVersion>],
    copy_to: &BTreeSet<String>,
    done: &BTreeSet<String>,
    lifted: &BTreeSet<(String, String)>,
) -> Vec<TenantRbac> {
    use crate::rbac::tenant;
    let mut out = Vec::new();
    for parent in members
        .iter()
        .filter(|c| copied_csv::is_copyable(c) && machine::member_annotations(group, c).is_none())
    {
        let Ok(Ok(rendered)) = crate::strategy::render(parent) else {
            continue;
        };
        if rendered.roles.is_empty() && rendered.role_bindings.is_empty() {
            continue;
        }
        let (Some(name), Some(uid)) = (parent.metadata.name.clone(), parent.metadata.uid.clone())
        else {
            continue;
        };
        if targets.is_all() {
            let (cluster_roles, cluster_bindings) =
                tenant::lifted(&rendered.roles, &rendered.role_bindings, group_ns);
            let key = lift_key(
                &uid,
                &crate::rbac::naming::gvk_hash(
                    &serde_json::to_string(&(&cluster_roles, &cluster_bindings))
                        .unwrap_or_default(),
                ),
            );
            if !done.contains(&key) {
                out.push(TenantRbac {
                    done: key,
                    cluster_roles,
                    cluster_bindings,
                    ..Default::default()
                });
            }
            continue;
        }
        let unlift = unlift_key(&uid);
        if !done.contains(&unlift) && super::lifted::must_unlift(lifted, &name, group_ns) {
            out.push(TenantRbac {
                done: unlift,
                unlift: Some((name.clone(), group_ns.to_string())),
                ..Default::default()
            });
        }
        for ns in copy_to {
            let copy_uid = all
                .iter()
                .find(|c| {
                    c.metadata.namespace.as_deref() == Some(ns.as_str())
                        && c.metadata.name.as_deref() == Some(name.as_str())
                })
                .and_then(|c| c.metadata.uid.clone());
            let Some(copy_uid) = copy_uid else { continue };
            let (roles, bindings) = tenant::copied(
                &rendered.roles,
                &rendered.role_bindings,
                &name,
                group_ns,
                ns,
                &copy_uid,
            );
            let key = format!(
                "{ns}/{copy_uid}/{}",
                crate::rbac::naming::gvk_hash(
                    &serde_json::to_string(&(&roles, &bindings)).unwrap_or_default()
                )
            );
            if !done.contains(&key) {
                out.push(TenantRbac {
                    done: key,
                    roles,
                    bindings,
                    ..Default::default()
                });
            }
        }
    }
    out
}

/// The `Targets` a group's written status stands for (`None` before its first sync).
pub fn written_targets(group: &OperatorGroup) -> Option<Targets> {
    group
        .status
        .as_ref()?
        .namespaces
        .as_deref()
        .map(Targets::from_status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn set(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[rstest]
    #[case::removing_lifted_rbac_forgets_that_it_was_lifted(
        &["lift/u1/h1", "lift/u2/h2", "ns/c/h"], "unlift/u1", &["lift/u2/h2", "ns/c/h"]
    )]
    #[case::lifting_again_forgets_the_removal(&["unlift/u1", "unlift/u2"], "lift/u1/h3", &["unlift/u2"])]
    #[case::clearing_the_copy_warning_forgets_that_it_was_given(&["warn/u1", "warn/u2"], "unwarn/u1", &["warn/u2"])]
    #[case::warning_again_forgets_the_clear(&["unwarn/u1"], "warn/u1", &[])]
    #[case::other_keys_forget_nothing(&["lift/u1/h1", "unlift/u2"], "ns/c/h", &["lift/u1/h1", "unlift/u2"])]
    fn applied_rbac_forgets_the_opposite_done_key(
        #[case] before: &[&str],
        #[case] applied: &str,
        #[case] after: &[&str],
    ) {
        let mut done = set(before);
        forget_opposite(&mut done, applied);
        assert_eq!(done, set(after));
    }
}
