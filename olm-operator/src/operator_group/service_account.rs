//! The group's own service account (spec §3.1 step 2, OLM's `UserDefinedServiceAccountSyncer`), pure: with
//! `spec.serviceAccountName` set and the account missing, condition `OperatorGroupServiceAccount=True` reason
//! `ServiceAccountNotFound`; found, the condition goes, `status.serviceAccountRef` points at it (and the account
//! is labelled `olm.managed=true` by the sync); unset, the reference is cleared. `lastUpdated` moves when the
//! reference changes.

use k8s_openapi::api::core::v1::{ObjectReference, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use messages::crd::annotations;
use messages::crd::operator_group::{
    OperatorGroupConditionReason, OperatorGroupConditionType, OperatorGroupStatus,
};

/// What the store says of the group's service account.
#[derive(Clone, Debug, PartialEq)]
pub enum Account {
    /// `spec.serviceAccountName` is not set.
    Unset,
    /// Set, but no such account in the group's namespace.
    Missing(String),
    /// Set and present: the reference to write.
    Found(ObjectReference),
}

impl Account {
    /// Classify `spec.serviceAccountName` against the account found in the group's namespace (if any).
    pub fn of(name: Option<&str>, found: Option<&ServiceAccount>) -> Self {
        match (name.filter(|n| !n.is_empty()), found) {
            (None, _) => Account::Unset,
            (Some(name), None) => Account::Missing(name.to_string()),
            (Some(_), Some(sa)) => Account::Found(reference(sa)),
        }
    }
}

/// The reference OLM writes (`reference.GetReference`), without the resourceVersion so that unrelated updates
/// of the account do not rewrite the group's status.
pub fn reference(sa: &ServiceAccount) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ServiceAccount".into()),
        name: sa.metadata.name.clone(),
        namespace: sa.metadata.namespace.clone(),
        uid: sa.metadata.uid.clone(),
        ..Default::default()
    }
}

/// Does the account still need OLM's `olm.managed=true` label?
pub fn needs_label(sa: &ServiceAccount) -> bool {
    sa.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(annotations::MANAGED))
        .map(String::as_str)
        != Some("true")
}

pub fn not_found_message(name: &str) -> String {
    format!("ServiceAccount {name} not found")
}

/// `status` with its service-account part brought up to date, or `None` when it already is.
pub fn reconcile(
    status: &OperatorGroupStatus,
    account: &Account,
    now: &Time,
) -> Option<OperatorGroupStatus> {
    let kind = OperatorGroupConditionType::ServiceAccount.as_str();
    let mut next = status.clone();
    next.conditions.retain(|c| c.type_ != kind);
    match account {
        Account::Unset => next.service_account_ref = None,
        Account::Missing(name) => {
            let message = not_found_message(name);
            let kept = status
                .conditions
                .iter()
                .find(|c| c.type_ == kind && c.status == "True" && c.message == message)
                .cloned();
            next.conditions.push(kept.unwrap_or_else(|| {
                Condition {
                    type_: kind.to_string(),
                    status: "True".to_string(),
                    reason: OperatorGroupConditionReason::ServiceAccountNotFound
                        .as_str()
                        .to_string(),
                    message,
                    last_transition_time: now.clone(),
                    observed_generation: None,
                }
            }));
        }
        Account::Found(reference) => next.service_account_ref = Some(reference.clone()),
    }
    if next.service_account_ref != status.service_account_ref {
        next.last_updated = Some(now.clone());
    }
    (next != *status).then_some(next)
}

#[cfg(test)]
mod tests;
