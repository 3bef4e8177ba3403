//! The CSV's install strategy: deployments and the RBAC their service accounts need.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::rbac::v1::PolicyRule;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.install`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NamedInstallStrategy {
    /// Always `deployment` in practice ([`super::INSTALL_STRATEGY_NAME_DEPLOYMENT`]).
    #[serde(rename = "strategy", default)]
    pub strategy: String,
    #[serde(rename = "spec", default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<StrategyDetailsDeployment>,
}

/// `spec.install.spec` for the `deployment` strategy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDetailsDeployment {
    #[serde(default)]
    pub deployments: Vec<StrategyDeploymentSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<StrategyDeploymentPermissions>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_permissions: Option<Vec<StrategyDeploymentPermissions>>,
}

/// One Deployment OLM creates in the CSV's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct StrategyDeploymentSpec {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub spec: DeploymentSpec,
    /// Extra labels for the Deployment object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<BTreeMap<String, String>>,
}

/// RBAC rules granted to one service account.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDeploymentPermissions {
    #[serde(default)]
    pub service_account_name: String,
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
}
