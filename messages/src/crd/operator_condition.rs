//! OperatorCondition (`operators.coreos.com/v2` storage, `v1` served; namespaced): conditions
//! an operator reports to OLM, chiefly `Upgradeable` (API `operatorcondition_types.go`, §1.7, §5).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition type OLM gates upgrades on.
pub const UPGRADEABLE: &str = "Upgradeable";

/// `spec` of an OperatorCondition (v2).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v2",
    kind = "OperatorCondition",
    plural = "operatorconditions",
    singular = "operatorcondition",
    namespaced,
    status = "OperatorConditionStatus",
    shortname = "condition",
    category = "olm",
    derive = "PartialEq",
    doc = "OperatorCondition is a Custom Resource of type `OperatorCondition` which is used to convey information to OLM about the state of an operator."
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConditionSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_accounts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<String>,
    /// Conditions set by a cluster admin; they win over the operator's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<ConditionOverride>,
    /// Conditions set by the operator (v2 only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status` of an OperatorCondition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct OperatorConditionStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `spec.overrides[]`: a `metav1.Condition` written by a cluster admin. OLM's schema does not require its
/// `lastTransitionTime` (admins write overrides by hand, usually without one), so unlike [`Condition`] it is
/// optional here, and an override without it decodes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionOverride {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The served `v1` version (no `spec.conditions`).
pub mod v1 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    pub use super::OperatorConditionStatus;

    /// `spec` of an OperatorCondition (v1).
    #[derive(
        CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "operators.coreos.com",
        version = "v1",
        kind = "OperatorCondition",
        plural = "operatorconditions",
        singular = "operatorcondition",
        namespaced,
        status = "OperatorConditionStatus",
        shortname = "condition",
        category = "olm",
        derive = "PartialEq",
        doc = "OperatorCondition is a Custom Resource of type `OperatorCondition` which is used to convey information to OLM about the state of an operator."
    )]
    #[serde(rename_all = "camelCase")]
    pub struct OperatorConditionSpec {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub service_accounts: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub deployments: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub overrides: Vec<super::ConditionOverride>,
    }
}
