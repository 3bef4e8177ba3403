//! OLMConfig (`operators.coreos.com/v1`, cluster-scoped singleton named `cluster`): cluster-wide
//! OLM settings (API `olmconfig_types.go`, spec §1.6).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire_enum;

/// The name of the one OLMConfig OLM reads.
pub const OLM_CONFIG_NAME: &str = "cluster";

wire_enum! {
    /// `status.conditions[].type` of the OLMConfig.
    pub enum OlmConfigConditionType {
        DisabledCopiedCsvs = "DisabledCopiedCSVs",
    }
}

wire_enum! {
    /// `status.conditions[].reason` of the OLMConfig.
    pub enum OlmConfigConditionReason {
        CopiedCsvsEnabled = "CopiedCSVsEnabled",
        CopiedCsvsDisabled = "CopiedCSVsDisabled",
    }
}

/// `spec` of the OLMConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OLMConfig",
    plural = "olmconfigs",
    singular = "olmconfig",
    status = "OlmConfigStatus",
    category = "olm",
    derive = "PartialEq",
    doc = "OLMConfig is a resource responsible for configuring OLM."
)]
#[serde(rename_all = "camelCase")]
pub struct OlmConfigSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Features>,
}

/// `spec.features`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    #[serde(
        rename = "disableCopiedCSVs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_copied_csvs: Option<bool>,
    /// A duration string such as `5m` (the CRD checks the pattern upstream OLM uses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_server_sync_interval: Option<String>,
}

/// `status` of the OLMConfig.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct OlmConfigStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// OLM's `CopiedCSVsAreEnabled`: true unless `disableCopiedCSVs` is explicitly true (also true
/// when there is no OLMConfig).
pub fn copied_csvs_are_enabled(config: Option<&OLMConfig>) -> bool {
    !config
        .and_then(|c| c.spec.features.as_ref())
        .and_then(|f| f.disable_copied_csvs)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn config(disable: Option<bool>) -> OLMConfig {
        OLMConfig::new(
            OLM_CONFIG_NAME,
            OlmConfigSpec {
                features: Some(Features {
                    disable_copied_csvs: disable,
                    package_server_sync_interval: None,
                }),
            },
        )
    }

    #[rstest]
    #[case::no_config_means_enabled(None, true)]
    #[case::unset_flag_means_enabled(Some(config(None)), true)]
    #[case::explicit_false_means_enabled(Some(config(Some(false))), true)]
    #[case::explicit_true_disables(Some(config(Some(true))), false)]
    fn copied_csvs_are_enabled_unless_explicitly_disabled(
        #[case] config: Option<OLMConfig>,
        #[case] enabled: bool,
    ) {
        assert_eq!(copied_csvs_are_enabled(config.as_ref()), enabled);
    }
}
