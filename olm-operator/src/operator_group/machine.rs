//! What one OperatorGroup sync wants (spec §3.1, §3.3, §3.4), pure: the status (targets, lastUpdated, the
//! `MultipleOperatorGroup` condition), the namespace labels, the annotations of member CSVs, the pruned
//! `olm.providedAPIs`. The actor gathers the inputs from the stores and applies the result.

use super::provided_apis::{self, ApiSet};
use super::targets::Targets;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::operator_group::{
    OperatorGroup, OperatorGroupConditionReason, OperatorGroupConditionType, OperatorGroupStatus,
};
use std::collections::{BTreeMap, BTreeSet};

pub const MSG_MULTIPLE_GROUPS: &str = "Multiple OperatorGroup found in the same namespace";

/// The status the group should have, or `None` when the current one is right. `lastUpdated` moves only when
/// the target set changes.
pub fn status(
    group: &OperatorGroup,
    targets: &Targets,
    groups_in_namespace: usize,
    now: &Time,
) -> Option<OperatorGroupStatus> {
    let current = group.status.clone().unwrap_or_default();
    let current_targets = current.namespaces.as_deref().map(Targets::from_status);
    let targets_changed = current_targets.as_ref() != Some(targets);
    let conditions = conditions(&current.conditions, groups_in_namespace, now);
    if !targets_changed && conditions == current.conditions && current.last_updated.is_some() {
        return None;
    }
    Some(OperatorGroupStatus {
        namespaces: Some(targets.to_status()),
        last_updated: if targets_changed || current.last_updated.is_none() {
            Some(now.clone())
        } else {
            current.last_updated
        },
        conditions,
        service_account_ref: current.service_account_ref,
    })
}

/// OLM: with more than one group in the namespace every group carries `MultipleOperatorGroup=True`; with one
/// the condition is removed. Other conditions are kept as they are.
fn conditions(current: &[Condition], groups_in_namespace: usize, now: &Time) -> Vec<Condition> {
    let kind = OperatorGroupConditionType::MultipleOperatorGroup.as_str();
    let mut out: Vec<Condition> = current
        .iter()
        .filter(|c| c.type_ != kind)
        .cloned()
        .collect();
    if groups_in_namespace > 1 {
        let kept = current
            .iter()
            .find(|c| c.type_ == kind && c.status == "True")
            .cloned();
        out.push(kept.unwrap_or_else(|| {
            Condition {
                type_: kind.to_string(),
                status: "True".to_string(),
                reason: OperatorGroupConditionReason::MultipleOperatorGroupsFound
                    .as_str()
                    .to_string(),
                message: MSG_MULTIPLE_GROUPS.to_string(),
                last_transition_time: now.clone(),
                observed_generation: None,
            }
        }));
    }
    out
}

/// A namespace label to add or remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelChange {
    Add { namespace: String, key: String },
    Remove { namespace: String, key: String },
}

/// The `olm.operatorgroup.uid/<uid>` labels: on every existing targeted namespace of a group that does not
/// target all namespaces, and nowhere else. `uid: None` (deleted group) removes them all.
pub fn namespace_labels<'a>(
    uid: &str,
    targets: Option<&Targets>,
    namespaces: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
) -> Vec<LabelChange> {
    let key = annotations::operator_group_uid_label(uid);
    namespaces
        .into_iter()
        .filter_map(|(namespace, labels)| {
            let wanted = matches!(targets, Some(Targets::Some(set)) if set.contains(namespace));
            match (wanted, labels.contains_key(&key)) {
                (true, false) => Some(LabelChange::Add {
                    namespace: namespace.to_string(),
                    key: key.clone(),
                }),
                (false, true) => Some(LabelChange::Remove {
                    namespace: namespace.to_string(),
                    key: key.clone(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The group annotations a member CSV must carry (`olm.operatorGroup`, `olm.operatorNamespace`,
/// `olm.targetNamespaces`), or `None` when it carries them already.
pub fn member_annotations(
    group: &OperatorGroup,
    csv: &ClusterServiceVersion,
) -> Option<BTreeMap<String, String>> {
    let wanted = BTreeMap::from([
        (
            annotations::OPERATOR_GROUP.to_string(),
            group.metadata.name.clone().unwrap_or_default(),
        ),
        (
            annotations::OPERATOR_NAMESPACE.to_string(),
            group.metadata.namespace.clone().unwrap_or_default(),
        ),
        (
            annotations::TARGET_NAMESPACES.to_string(),
            group.build_target_namespaces(),
        ),
    ]);
    let have = csv.metadata.annotations.clone().unwrap_or_default();
    wanted
        .iter()
        .any(|(k, v)| have.get(k) != Some(v))
        .then_some(wanted)
}

/// OLM's `pruneProvidedAPIs`: a non-static group's annotation is cut down to the APIs its (non-copied) member
/// CSVs still provide, unless a member providing an API not yet annotated is still in phase None or Pending.
/// `None` when nothing is to be pruned.
pub fn prune<'a>(
    group: &OperatorGroup,
    members: impl IntoIterator<Item = &'a ClusterServiceVersion> + Clone,
) -> Option<ApiSet> {
    if group.is_static() {
        return None;
    }
    let annotated = provided_apis::of_group(group);
    let provided: ApiSet = members
        .clone()
        .into_iter()
        .filter(|c| !c.is_copied())
        .flat_map(provided_apis::of_csv)
        .collect();
    let kept: ApiSet = annotated.intersection(&provided).cloned().collect();
    if kept == annotated {
        return None;
    }
    let installing = members.into_iter().filter(|c| !c.is_copied()).any(|c| {
        matches!(c.phase(), CsvPhase::None | CsvPhase::Pending)
            && !provided_apis::of_csv(c).is_subset(&annotated)
    });
    (!installing).then_some(kept)
}

/// Every API the group stands for: its annotation plus what its members provide (OLM ensures ClusterRoles and
/// requeues CSVs for this set).
pub fn all_apis<'a>(
    group: &OperatorGroup,
    members: impl IntoIterator<Item = &'a ClusterServiceVersion>,
) -> ApiSet {
    let mut apis = provided_apis::of_group(group);
    apis.extend(
        members
            .into_iter()
            .filter(|c| !c.is_copied())
            .flat_map(provided_apis::of_csv),
    );
    apis
}

/// The namespaces copies of the group's members go to: every existing namespace the group targets, except its
/// own. OLMConfig `disableCopiedCSVs` applies to all-namespaces groups: their copies then go only to the
/// `protected` namespaces (OLM's `--protectedCopiedCSVNamespaces`).
pub fn copy_namespaces<'a>(
    group_namespace: &str,
    targets: &Targets,
    copies_enabled: bool,
    protected: &BTreeSet<String>,
    namespaces: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let disabled = targets.is_all() && !copies_enabled;
    namespaces
        .into_iter()
        .filter(|ns| *ns != group_namespace && targets.contains(ns))
        .filter(|ns| !disabled || protected.contains(*ns))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests;
