//! Copied CSVs (spec §2.7): what the copy of a member CSV in a target namespace looks like, whether an
//! existing copy needs a write, and when a copy must go. Pure; the OperatorGroup actor does the I/O.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, ClusterServiceVersionStatus, CsvPhase, CsvReason};
use std::collections::BTreeMap;

/// The copy of `parent` for `namespace`: same name and spec; annotations without `olm.targetNamespaces` and
/// kubectl's last-applied; labels without `operators.coreos.com/*`, plus `olm.copiedFrom=<parent ns>`; the
/// parent's status with reason `Copied`.
pub fn render(parent: &ClusterServiceVersion, namespace: &str) -> ClusterServiceVersion {
    let parent_ns = parent.metadata.namespace.clone().unwrap_or_default();
    let mut annotations = parent.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(annotations::TARGET_NAMESPACES);
    annotations.remove(annotations::LAST_APPLIED_CONFIGURATION);
    let mut labels: BTreeMap<String, String> = parent
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with(annotations::OPERATOR_LABEL_PREFIX))
        .collect();
    labels.insert(annotations::COPIED_FROM.to_string(), parent_ns.clone());
    ClusterServiceVersion {
        metadata: ObjectMeta {
            name: parent.metadata.name.clone(),
            namespace: Some(namespace.to_string()),
            annotations: Some(annotations),
            labels: Some(labels),
            ..Default::default()
        },
        spec: parent.spec.clone(),
        status: Some(status_for(parent)),
    }
}

/// The parent's status as its copies carry it (reason `Copied`, OLM's message).
pub fn status_for(parent: &ClusterServiceVersion) -> ClusterServiceVersionStatus {
    let parent_ns = parent.metadata.namespace.clone().unwrap_or_default();
    let mut status = parent.status.clone().unwrap_or_default();
    status.reason = CsvReason::Copied;
    status.message =
        format!("The operator is running in {parent_ns} but is managing this namespace");
    status
}

/// Which parts of an existing copy differ from the wanted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drift {
    /// Labels, annotations or spec differ: update the object.
    pub object: bool,
    /// The status differs: update the status subresource.
    pub status: bool,
}

/// Compare an existing copy with the wanted one. Extra annotations or labels on the copy (e.g. added by
/// someone else) are tolerated; missing or different ones are drift.
/// An existing copy may be a projection (`projection`): its spec is then compared by hash, its long annotation
/// values by theirs.
pub fn drift(existing: &ClusterServiceVersion, wanted: &ClusterServiceVersion) -> Drift {
    let projected = projection::is_projected(existing);
    let contains = |have: &Option<BTreeMap<String, String>>,
                    want: &Option<BTreeMap<String, String>>| {
        let have = have.clone().unwrap_or_default();
        want.iter().flatten().all(|(k, v)| {
            let v = if projected {
                projection::value(v)
            } else {
                v.clone()
            };
            have.get(k) == Some(&v)
        })
    };
    let spec_differs = if projected {
        existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(projection::SPEC_HASH))
            != Some(&projection::spec_hash(&wanted.spec))
    } else {
        existing.spec != wanted.spec
    };
    let object = spec_differs
        || !contains(&existing.metadata.annotations, &wanted.metadata.annotations)
        || !contains(&existing.metadata.labels, &wanted.metadata.labels)
        || existing
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(annotations::TARGET_NAMESPACES));
    Drift {
        object,
        status: existing.status != wanted.status,
    }
}

/// Why a copy must be deleted (OLM's `removeDanglingChildCSVs`, and the group no longer targeting it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dangling {
    /// The copy lacks `olm.operatorNamespace`.
    NoOperatorNamespace,
    /// The parent CSV is gone.
    ParentMissing,
    /// The parent failed, or conflicts with another group's APIs.
    ParentFailed,
    /// The parent's group does not target the copy's namespace any more (or copying is off for it).
    NotTargeted,
    /// The "copy" is in the parent's own namespace.
    SameNamespace,
}

/// Whether `copy` must go, given its parent (same name in the namespace `olm.operatorNamespace` names) and
/// whether its namespace is still one the parent should be copied to.
pub fn dangling(
    copy: &ClusterServiceVersion,
    parent: Option<&ClusterServiceVersion>,
    still_wanted: bool,
) -> Option<Dangling> {
    let operator_ns = copy
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::OPERATOR_NAMESPACE));
    let Some(operator_ns) = operator_ns else {
        return Some(Dangling::NoOperatorNamespace);
    };
    if copy.metadata.namespace.as_deref() == Some(operator_ns.as_str()) {
        return Some(Dangling::SameNamespace);
    }
    let Some(parent) = parent else {
        return Some(Dangling::ParentMissing);
    };
    if parent.phase() == CsvPhase::Failed
        && parent.reason() == CsvReason::InterOperatorGroupOwnerConflict
    {
        return Some(Dangling::ParentFailed);
    }
    if !still_wanted {
        return Some(Dangling::NotTargeted);
    }
    None
}

/// Whether a member CSV is copied at all: not a copy itself, and not in phase None or failed for a reason
/// saying it does not fit its group (OLM's `IsUncopiable`).
pub fn is_copyable(csv: &ClusterServiceVersion) -> bool {
    !csv.is_copied() && !csv.is_uncopiable()
}

#[cfg(test)]
mod tests;

pub mod orphan;
pub mod projection;
