//! Operator (`operators.coreos.com/v1`, cluster-scoped): an aggregate view of the objects that
//! belong to one installed operator (API `operator_types.go`, spec §1.7).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec` of an Operator (empty).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "Operator",
    plural = "operators",
    singular = "operator",
    status = "OperatorStatus",
    category = "olm",
    derive = "PartialEq",
    doc = "Operator represents a cluster operator."
)]
pub struct OperatorSpec {}

/// `status` of an Operator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct OperatorStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Components>,
}

/// `status.components`: the selector and the objects it matches.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    pub label_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<RichReference>,
}

/// An object reference with the object's conditions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RichReference {
    #[serde(flatten)]
    pub object: k8s_openapi::api::core::v1::ObjectReference,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<OperatorComponentCondition>,
}

/// A condition copied from a component (`operators.coreos.com/v1` `Condition`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorComponentCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

/// The Operator name OLM uses for a package installed in a namespace: `<package>.<namespace>`.
pub fn operator_name(package: &str, subscription_namespace: &str) -> String {
    format!("{package}.{subscription_namespace}")
}
