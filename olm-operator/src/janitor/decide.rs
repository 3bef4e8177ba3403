//! The janitor's pure decisions: whether a gone CSV's cluster-scoped objects are deleted now, and which
//! labelled cluster RBAC (of CSVs and of OperatorGroups) the start-up sweep deletes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use messages::crd::annotations;
use messages::key::ObjectKey;

/// What to do with a gone CSV's cluster-scoped objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Delete them (labelled by the CSV's name and namespace); `reset_conversions`: also put the conversion of
    /// the CRDs its conversion webhooks served back to `None` (not when a CSV replaces it: the new one serves).
    Clean { reset_conversions: bool },
    /// Leave them: the store holds a CSV under that key again.
    Skip(Skipped),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// The same CSV (same uid): it was not gone after all (e.g. it vanished from one relist only).
    Back,
    /// Another CSV of the same name (another uid, or none known): the labelled objects are the new CSV's.
    Recreated,
    /// A copy (`olm.copiedFrom`): it owns nothing in the cluster (OLM's deletion handler skips copies too).
    Copy,
}

/// `stored_uid`: the uid of the CSV the store holds under the gone CSV's key now (`None`: none there;
/// `Some(None)`: one without a uid). `replaced`: a CSV of the namespace names it in `spec.replaces`.
/// `known`: the actor had observed the CSV (its webhooks are known); `copied`: it was a copy.
pub fn verdict(
    gone_uid: Option<&str>,
    stored_uid: Option<Option<&str>>,
    replaced: bool,
    known: bool,
    copied: bool,
) -> Verdict {
    if copied {
        return Verdict::Skip(Skipped::Copy);
    }
    match stored_uid {
        Some(stored) if stored.is_some() && stored == gone_uid => Verdict::Skip(Skipped::Back),
        Some(_) => Verdict::Skip(Skipped::Recreated),
        None => Verdict::Clean {
            reset_conversions: known && !replaced,
        },
    }
}

/// What the sweep knows of the cluster, from the stores.
pub struct SweepView<'a> {
    /// Objects created after this may belong to a CSV the store has not seen yet: left alone for now.
    pub settled: Timestamp,
    /// Objects created after this may belong to a namespace the store has not seen yet: left alone for now.
    /// Shorter than `settled`: a namespace the store misses that long after an object labelled with it was
    /// created is gone (its objects cannot come back), while a CSV store may lag behind an InstallPlan's writes.
    pub settled_namespace: Timestamp,
    pub namespace_exists: &'a dyn Fn(&str) -> bool,
    /// The namespace is in the operator's scope (its CSV store is complete for it).
    pub watched: &'a dyn Fn(&str) -> bool,
    pub csv_exists: &'a dyn Fn(&ObjectKey) -> bool,
    /// The OperatorGroup store holds this group (true while that store is unknown).
    pub group_exists: &'a dyn Fn(&ObjectKey) -> bool,
}

/// Cluster-scoped RBAC cannot be owned by a namespaced CSV or OperatorGroup, so one deleted while no operator ran
/// (e.g. with its namespace) leaves its ClusterRoles/ClusterRoleBindings behind: an object labelled with an
/// owner CSV or OperatorGroup (the group's provided-API ClusterRoles) is orphaned when that namespace is gone, or
/// when the namespace is watched and the owner is not in its store.
pub fn orphaned(meta: &ObjectMeta, view: &SweepView<'_>) -> bool {
    orphan(meta, view) == Orphan::Yes
}

/// Whether a labelled object is orphaned: now, or once it is old enough to judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orphan {
    No,
    Yes,
    /// It would be, but it is younger than the settle margin: the sweep looks again later (else an object
    /// orphaned shortly before the operator started, e.g. with its namespace deleted, would stay forever).
    NotYet,
}

pub fn orphan(meta: &ObjectMeta, view: &SweepView<'_>) -> Orphan {
    let Some(created) = meta.creation_timestamp.as_ref() else {
        return Orphan::No;
    };
    let labels = meta.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).cloned();
    let owner_exists: &dyn Fn(&ObjectKey) -> bool = match get(annotations::OWNER_KIND).as_deref() {
        Some("ClusterServiceVersion") => view.csv_exists,
        Some("OperatorGroup") => view.group_exists,
        _ => return Orphan::No,
    };
    let (Some(name), Some(namespace)) =
        (get(annotations::OWNER), get(annotations::OWNER_NAMESPACE))
    else {
        return Orphan::No;
    };
    let namespace_gone = !(view.namespace_exists)(&namespace);
    let owner_gone = !owner_exists(&ObjectKey::new(namespace.clone(), name));
    let settled = if namespace_gone {
        view.settled_namespace
    } else {
        view.settled
    };
    match namespace_gone || ((view.watched)(&namespace) && owner_gone) {
        false => Orphan::No,
        true if created.0 > settled => Orphan::NotYet,
        true => Orphan::Yes,
    }
}

#[cfg(test)]
mod tests;
