//! The API surface a CSV owns or requires: CRD and APIService descriptions with their UI
//! descriptors, and webhook descriptions.

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire_enum;

/// `spec.customresourcedefinitions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CustomResourceDefinitions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned: Option<Vec<CrdDescription>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<CrdDescription>>,
}

/// `spec.apiservicedefinitions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ApiServiceDefinitions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned: Option<Vec<ApiServiceDescription>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<ApiServiceDescription>>,
}

/// A CRD the CSV owns or requires; `name` is `<plural>.<group>`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<ApiResourceReference>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_descriptors: Option<Vec<Descriptor>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_descriptors: Option<Vec<Descriptor>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_descriptors: Option<Vec<Descriptor>>,
}

/// An APIService the CSV owns or requires; its object name is `<version>.<group>`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDescription {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<ApiResourceReference>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_descriptors: Option<Vec<Descriptor>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_descriptors: Option<Vec<Descriptor>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_descriptors: Option<Vec<Descriptor>>,
}

impl ApiServiceDescription {
    /// Name of the APIService object: `<version>.<group>`.
    pub fn api_service_name(&self) -> String {
        format!("{}.{}", self.version, self.group)
    }
}

/// A Kubernetes resource an owned API creates (`APIResourceReference`). Go always writes all
/// three; many real CSVs omit `name`, so absence is kept as absence.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ApiResourceReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A spec, status or action descriptor (the three Go types have the same shape).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    #[serde(default)]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(
        rename = "x-descriptors",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_descriptors: Option<Vec<String>>,
    /// Free-form default value (`json.RawMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::crd::schema::any_json")]
    pub value: Option<serde_json::Value>,
}

wire_enum! {
    /// `webhookdefinitions[].type`.
    pub enum WebhookAdmissionType {
        ValidatingAdmissionWebhook = "ValidatingAdmissionWebhook",
        MutatingAdmissionWebhook = "MutatingAdmissionWebhook",
        ConversionWebhook = "ConversionWebhook",
    }
}

/// A webhook the operator serves (`WebhookDescription`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDescription {
    #[serde(default)]
    pub generate_name: String,
    #[serde(rename = "type")]
    pub type_: WebhookAdmissionType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// Defaults to 443 when absent (see [`WebhookDescription::container_port`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<RuleWithOperations>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effects: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_review_versions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinvocation_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
    #[serde(
        rename = "conversionCRDs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub conversion_crds: Option<Vec<String>>,
}

impl WebhookDescription {
    /// The port the webhook container listens on (`containerPort`, default 443).
    pub fn container_port(&self) -> i32 {
        self.container_port.unwrap_or(443)
    }

    /// The Service OLM creates for it: `<deploymentName with . → ->-service`.
    pub fn service_name(&self) -> String {
        format!(
            "{}-service",
            self.deployment_name
                .as_deref()
                .unwrap_or_default()
                .replace('.', "-")
        )
    }
}
