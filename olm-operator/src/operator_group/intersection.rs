//! The provided-API intersection rules of the seeds (OLM `groups.go` `ReconcileAPIIntersection` and its use in
//! `transitionCSVState`, spec §3.4). Pure: the groups come from the store, the CSV's APIs from its spec.

use super::provided_apis::{self, ApiSet};
use super::targets;
use messages::crd::csv::CsvReason;
use messages::crd::operator_group::OperatorGroup;
use messages::msg::ApiChange;

/// OLM's `APIReconciliationResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconciliation {
    /// The CSV's APIs are already the group's and no intersecting group provides them: carry on.
    NoApiConflict,
    /// The CSV's APIs are not all the group's and no intersecting group provides them: union them in.
    AddApis,
    /// The CSV's APIs are all the group's but an intersecting group provides some too: take them out (the next
    /// sync then sees the conflict).
    RemoveApis,
    /// An intersecting group provides some of the CSV's APIs and this group does not have them all.
    ApiConflict,
}

/// `add` = the CSV's APIs; `own` = the group's `olm.providedAPIs`; `others` = the union of the provided APIs of
/// every other group whose surface intersects this one's.
pub fn reconcile(add: &ApiSet, own: &ApiSet, others: &ApiSet) -> Reconciliation {
    if add.is_empty() {
        return Reconciliation::NoApiConflict;
    }
    let subset = add.is_subset(own);
    let intersecting = !add.is_disjoint(others);
    match (subset, intersecting) {
        (true, true) => Reconciliation::RemoveApis,
        (false, true) => Reconciliation::ApiConflict,
        (false, false) => Reconciliation::AddApis,
        (true, false) => Reconciliation::NoApiConflict,
    }
}

/// The union of the provided APIs of every group other than `group` whose surface intersects `group`'s.
pub fn apis_of_intersecting_groups<'a>(
    group: &OperatorGroup,
    all: impl IntoIterator<Item = &'a OperatorGroup>,
) -> ApiSet {
    let Some(mine) = targets::surface(group) else {
        return ApiSet::new();
    };
    let me = (
        group.metadata.namespace.as_deref(),
        group.metadata.name.as_deref(),
    );
    all.into_iter()
        .filter(|other| {
            (
                other.metadata.namespace.as_deref(),
                other.metadata.name.as_deref(),
            ) != me
        })
        .filter(|other| targets::surface_intersects(&mine, other))
        .flat_map(provided_apis::of_group)
        .collect()
}

/// What the CSV must do about its group's provided APIs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiVerdict {
    /// Nothing to change: go on with the phase machine.
    Proceed,
    /// Ask the group's actor to change `olm.providedAPIs`, then reconcile again (OLM requeues and stops).
    Change(ApiChange, ApiSet),
    /// Fail (non-terminal) with this reason and delete the CSV's deployments; `write` is false when the CSV
    /// already carries the failure OLM would not rewrite.
    Fail {
        reason: CsvReason,
        message: &'static str,
        write: bool,
    },
}

pub const MSG_STATIC: &str = "static provided api operatorgroup cannot be modified by these apis";
pub const MSG_CONFLICT: &str = "intersecting operatorgroups provide the same apis";

/// OLM's switch on the reconciliation result: a static group refuses any change (keeping an earlier
/// `InterOperatorGroupOwnerConflict`), a conflict fails the CSV, add and remove go to the group's actor.
pub fn verdict(
    result: Reconciliation,
    is_static: bool,
    csv_apis: &ApiSet,
    current_reason: &CsvReason,
) -> ApiVerdict {
    match result {
        Reconciliation::AddApis | Reconciliation::RemoveApis if is_static => ApiVerdict::Fail {
            reason: CsvReason::CannotModifyStaticOperatorGroupProvidedApis,
            message: MSG_STATIC,
            write: *current_reason != CsvReason::InterOperatorGroupOwnerConflict,
        },
        Reconciliation::ApiConflict => ApiVerdict::Fail {
            reason: CsvReason::InterOperatorGroupOwnerConflict,
            message: MSG_CONFLICT,
            write: *current_reason != CsvReason::InterOperatorGroupOwnerConflict,
        },
        Reconciliation::AddApis => ApiVerdict::Change(ApiChange::Add, csv_apis.clone()),
        Reconciliation::RemoveApis => ApiVerdict::Change(ApiChange::Remove, csv_apis.clone()),
        Reconciliation::NoApiConflict => ApiVerdict::Proceed,
    }
}

/// The whole check for one CSV in `group`, given every group of the cluster.
pub fn check<'a>(
    csv_apis: &ApiSet,
    current_reason: &CsvReason,
    group: &OperatorGroup,
    all: impl IntoIterator<Item = &'a OperatorGroup>,
) -> ApiVerdict {
    let others = apis_of_intersecting_groups(group, all);
    let result = reconcile(csv_apis, &provided_apis::of_group(group), &others);
    verdict(result, group.is_static(), csv_apis, current_reason)
}

/// Apply a change to a set (the group actor's only arithmetic on `olm.providedAPIs`).
pub fn apply(current: &ApiSet, change: ApiChange, apis: &ApiSet) -> ApiSet {
    match change {
        ApiChange::Add => current.union(apis).cloned().collect(),
        ApiChange::Remove => current.difference(apis).cloned().collect(),
    }
}

#[cfg(test)]
mod tests;
