//! InstallPlan (`operators.coreos.com/v1alpha1`, namespaced): the resolved set of objects to
//! create for one or more CSVs (API `installplan_types.go`, spec §1.4).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::crd::subscription::Approval;
use crate::wire_enum;

wire_enum! {
    /// `status.phase`; `None` is `""`.
    pub enum InstallPlanPhase {
        None = "",
        /// Declared, never set by OLM.
        Planning = "Planning",
        RequiresApproval = "RequiresApproval",
        Installing = "Installing",
        Complete = "Complete",
        Failed = "Failed",
    }
}

wire_enum! {
    /// `status.conditions[].type`.
    pub enum InstallPlanConditionType {
        /// Declared, unused by OLM.
        Resolved = "Resolved",
        Installed = "Installed",
    }
}

wire_enum! {
    /// `status.conditions[].reason`; `None` is `""`.
    pub enum InstallPlanConditionReason {
        None = "",
        PlanUnknown = "PlanUnknown",
        InstallCheckFailed = "InstallCheckFailed",
        /// Declared, unused by OLM.
        DependenciesConflict = "DependenciesConflict",
        InstallComponentFailed = "InstallComponentFailed",
    }
}

wire_enum! {
    /// `status.plan[].status`.
    pub enum StepStatus {
        Unknown = "Unknown",
        NotPresent = "NotPresent",
        Present = "Present",
        Created = "Created",
        NotCreated = "NotCreated",
        WaitingForApi = "WaitingForApi",
        UnsupportedResource = "UnsupportedResource",
    }
}

wire_enum! {
    /// `status.bundleLookups[].conditions[].type`.
    pub enum BundleLookupConditionType {
        BundleLookupPending = "BundleLookupPending",
        BundleLookupFailed = "BundleLookupFailed",
        /// OLM-internal.
        BundleLookupNotPersisted = "BundleLookupNotPersisted",
    }
}

macro_rules! none_default {
    ($($t:ty),+) => {$(
        impl Default for $t {
            fn default() -> Self {
                <$t>::None
            }
        }
        impl $t {
            pub fn is_none(&self) -> bool {
                *self == <$t>::None
            }
        }
    )+};
}
none_default!(InstallPlanPhase, InstallPlanConditionReason);

/// `spec` of an InstallPlan.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "InstallPlan",
    plural = "installplans",
    singular = "installplan",
    namespaced,
    status = "InstallPlanStatus",
    shortname = "ip",
    category = "olm",
    derive = "PartialEq",
    doc = "InstallPlan defines the installation of a set of operators.",
    printcolumn = r#"{"name":"CSV","type":"string","description":"The first CSV in the list of clusterServiceVersionNames","jsonPath":".spec.clusterServiceVersionNames[0]"}"#,
    printcolumn = r#"{"name":"Approval","type":"string","description":"The approval mode","jsonPath":".spec.approval"}"#,
    printcolumn = r#"{"name":"Approved","type":"boolean","jsonPath":".spec.approved"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    #[serde(default)]
    pub cluster_service_version_names: Vec<String>,
    pub approval: Approval,
    #[serde(default)]
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// `status` of an InstallPlan.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanStatus {
    #[serde(default)]
    pub phase: InstallPlanPhase,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<InstallPlanCondition>,
    #[serde(default)]
    pub catalog_sources: Vec<String>,
    /// The steps (field `plan`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<Step>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundle_lookups: Vec<BundleLookup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attenuated_service_account_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `status.conditions[]` of an InstallPlan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanCondition {
    #[serde(rename = "type")]
    pub type_: InstallPlanConditionType,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "InstallPlanConditionReason::is_none")]
    pub reason: InstallPlanConditionReason,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// One object the plan creates.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Name of the CSV this step belongs to.
    pub resolving: String,
    pub resource: StepResource,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    pub status: StepStatus,
}

/// The object of a step; `manifest` is the object's JSON as a string (or a bundle reference).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResource {
    pub source_name: String,
    pub source_namespace: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
}

/// A bundle that must be unpacked before the plan is complete.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookup {
    /// Bundle image.
    pub path: String,
    /// CSV name.
    pub identifier: String,
    #[serde(default)]
    pub replaces: String,
    pub catalog_source_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<BundleLookupCondition>,
    /// Bundle properties as a JSON string.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub properties: String,
}

/// `status.bundleLookups[].conditions[]`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookupCondition {
    #[serde(rename = "type")]
    pub type_: BundleLookupConditionType,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Rank used by [`order_steps`]: CSVs, then CRDs, then everything else.
fn step_rank(step: &Step) -> u8 {
    match step.resource.kind.as_str() {
        "ClusterServiceVersion" => 0,
        "CustomResourceDefinition" => 1,
        _ => 2,
    }
}

/// OLM's `OrderSteps`: a stable partition of CSV steps, then CRD steps, then the rest.
pub fn order_steps(steps: Vec<Step>) -> Vec<Step> {
    let mut steps = steps;
    steps.sort_by_key(step_rank);
    steps
}

impl InstallPlanStatus {
    /// OLM's `SetCondition`: replace the condition of the same type (keeping its
    /// lastTransitionTime when the status did not change), else append.
    pub fn set_condition(&mut self, condition: InstallPlanCondition) {
        match self
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition.type_)
        {
            Some(existing) => {
                let keep_transition = existing.status == condition.status;
                let previous = existing.last_transition_time.clone();
                *existing = condition;
                if keep_transition {
                    existing.last_transition_time = previous;
                }
            }
            None => self.conditions.push(condition),
        }
    }

    /// OLM's `NeedsRequeue`: some step waits for its API.
    pub fn needs_requeue(&self) -> bool {
        self.plan
            .iter()
            .any(|s| s.status == StepStatus::WaitingForApi)
    }
}

impl InstallPlan {
    /// The phase, `None` when there is no status.
    pub fn phase(&self) -> InstallPlanPhase {
        self.status
            .as_ref()
            .map(|s| s.phase.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn step(kind: &str, name: &str) -> Step {
        Step {
            resolving: "a.v1".into(),
            resource: StepResource {
                kind: kind.into(),
                name: name.into(),
                ..Default::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    #[test]
    fn order_steps_puts_csvs_then_crds_then_the_rest_keeping_order_within_each() {
        let steps = vec![
            step("ServiceAccount", "sa"),
            step("CustomResourceDefinition", "crd-1"),
            step("ClusterServiceVersion", "csv-1"),
            step("Role", "role"),
            step("CustomResourceDefinition", "crd-2"),
            step("ClusterServiceVersion", "csv-2"),
        ];
        let names: Vec<String> = order_steps(steps)
            .into_iter()
            .map(|s| s.resource.name)
            .collect();
        assert_eq!(names, ["csv-1", "csv-2", "crd-1", "crd-2", "sa", "role"]);
    }

    fn condition(status: &str, second: i64) -> InstallPlanCondition {
        let at = Some(Time(Timestamp::from_second(second).expect("ts")));
        InstallPlanCondition {
            type_: InstallPlanConditionType::Installed,
            status: status.into(),
            last_update_time: at.clone(),
            last_transition_time: at,
            reason: InstallPlanConditionReason::None,
            message: String::new(),
        }
    }

    #[test]
    fn set_condition_keeps_the_transition_time_while_the_status_holds() {
        let mut status = InstallPlanStatus::default();
        status.set_condition(condition("False", 10));
        status.set_condition(condition("False", 20));
        assert_eq!(status.conditions.len(), 1);
        assert_eq!(
            status.conditions[0].last_transition_time,
            Some(Time(Timestamp::from_second(10).expect("ts")))
        );
        assert_eq!(
            status.conditions[0].last_update_time,
            Some(Time(Timestamp::from_second(20).expect("ts")))
        );
        status.set_condition(condition("True", 30));
        assert_eq!(
            status.conditions[0].last_transition_time,
            Some(Time(Timestamp::from_second(30).expect("ts")))
        );
    }

    #[test]
    fn a_step_waiting_for_its_api_needs_a_requeue() {
        let mut status = InstallPlanStatus {
            plan: vec![step("Role", "r")],
            ..Default::default()
        };
        assert!(!status.needs_requeue());
        status.plan[0].status = StepStatus::WaitingForApi;
        assert!(status.needs_requeue());
    }
}
