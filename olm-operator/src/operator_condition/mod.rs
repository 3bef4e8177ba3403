//! OperatorConditions (spec §1.7, §5): for each CSV an OperatorCondition named like it (spec.serviceAccounts and
//! spec.deployments from its strategy, owned by the CSV) with a Role/RoleBinding letting those accounts
//! `get,update,patch` it; its `spec.conditions` are copied into `status.conditions` with the generation they were
//! observed at; and the `Upgradeable` gate a replacing CSV waits on. The decisions are pure ([`gate`],
//! [`desired`], [`status_update`]); `sync.rs` does the I/O.

pub mod actor;
pub mod sync;

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference};
use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_condition::{
    OperatorCondition, OperatorConditionSpec, OperatorConditionStatus, UPGRADEABLE,
};

/// OLM's message prefix when the gate holds a CSV back.
pub fn not_upgradeable_message(why: &str) -> String {
    format!("operator is not upgradeable: {why}")
}

/// OLM's `olm/operatorconditions.go`: no OperatorCondition → upgradeable; an `Upgradeable` override decides when
/// present; otherwise the status condition does, and one observed at an older generation blocks too.
/// `Err` carries why the upgrade is blocked.
pub fn gate(oc: Option<&OperatorCondition>) -> Result<(), String> {
    let Some(oc) = oc else { return Ok(()) };
    if let Some(o) = oc.spec.overrides.iter().find(|c| c.type_ == UPGRADEABLE) {
        return if o.status == "False" {
            Err(o.message.clone())
        } else {
            Ok(())
        };
    }
    let Some(c) = oc
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == UPGRADEABLE))
    else {
        return Ok(());
    };
    let stale = c
        .observed_generation
        .is_some_and(|g| Some(g) != oc.metadata.generation);
    if stale {
        return Err(format!(
            "the {UPGRADEABLE} condition is stale (observed generation {:?}, current {:?})",
            c.observed_generation, oc.metadata.generation
        ));
    }
    if c.status == "False" {
        return Err(c.message.clone());
    }
    Ok(())
}

/// The service accounts and deployments of the CSV's strategy (OLM: clusterPermissions then permissions;
/// `default` when none).
pub fn desired_spec(csv: &ClusterServiceVersion) -> OperatorConditionSpec {
    let strategy = csv.spec.install.spec.as_ref();
    let mut accounts: Vec<String> = Vec::new();
    if let Some(s) = strategy {
        for p in s
            .cluster_permissions
            .iter()
            .flatten()
            .chain(s.permissions.iter().flatten())
        {
            if !accounts.contains(&p.service_account_name) {
                accounts.push(p.service_account_name.clone());
            }
        }
    }
    if accounts.is_empty() {
        accounts.push("default".into());
    }
    let deployments = strategy
        .map(|s| s.deployments.iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default();
    OperatorConditionSpec {
        service_accounts: accounts,
        deployments,
        ..Default::default()
    }
}

/// Labelled `olm.managed`, and with the CSV's Operator labels from the start (`crate::component_labels`).
fn meta(
    name: &str,
    namespace: &str,
    owner: &OwnerReference,
    csv: &ClusterServiceVersion,
) -> ObjectMeta {
    let mut labels = crate::component_labels::inherited(csv.metadata.labels.as_ref());
    labels.insert(annotations::MANAGED.to_string(), "true".to_string());
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        labels: Some(labels),
        owner_references: Some(vec![owner.clone()]),
        ..Default::default()
    }
}

/// The OperatorCondition of a persisted CSV, controller-owned by it.
pub fn desired(csv: &ClusterServiceVersion) -> Option<OperatorCondition> {
    let owner = owner(csv)?;
    let (name, namespace) = (
        csv.metadata.name.as_deref()?,
        csv.metadata.namespace.as_deref()?,
    );
    Some(OperatorCondition {
        metadata: meta(name, namespace, &owner, csv),
        spec: desired_spec(csv),
        status: None,
    })
}

fn owner(csv: &ClusterServiceVersion) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "ClusterServiceVersion".into(),
        name: csv.metadata.name.clone()?,
        uid: csv.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(false),
    })
}

/// The Role and RoleBinding named like the OperatorCondition letting its service accounts update it.
pub fn access(
    csv: &ClusterServiceVersion,
    spec: &OperatorConditionSpec,
) -> Option<(Role, RoleBinding)> {
    let owner = owner(csv)?;
    let (name, namespace) = (
        csv.metadata.name.as_deref()?,
        csv.metadata.namespace.as_deref()?,
    );
    let role = Role {
        metadata: meta(name, namespace, &owner, csv),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["operators.coreos.com".into()]),
            resources: Some(vec!["operatorconditions".into()]),
            resource_names: Some(vec![name.to_string()]),
            verbs: vec!["get".into(), "update".into(), "patch".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta(name, namespace, &owner, csv),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.to_string(),
        },
        subjects: Some(
            spec.service_accounts
                .iter()
                .map(|sa| Subject {
                    kind: "ServiceAccount".into(),
                    name: sa.clone(),
                    namespace: Some(namespace.to_string()),
                    ..Default::default()
                })
                .collect(),
        ),
    };
    Some((role, binding))
}

/// `status.conditions` = `spec.conditions` stamped with the generation they were observed at; `None` when the
/// status already says so.
pub fn status_update(oc: &OperatorCondition) -> Option<OperatorConditionStatus> {
    let generation = oc.metadata.generation;
    let wanted: Vec<Condition> = oc
        .spec
        .conditions
        .iter()
        .map(|c| Condition {
            observed_generation: generation,
            ..c.clone()
        })
        .collect();
    let current = oc
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    (current != wanted).then_some(OperatorConditionStatus { conditions: wanted })
}

#[cfg(test)]
mod tests;
