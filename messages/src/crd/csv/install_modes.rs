//! Install modes a CSV declares and OLM's `InstallModeSet.Supports` check (spec §3.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire_enum;

wire_enum! {
    /// `spec.installModes[].type`.
    pub enum InstallModeType {
        OwnNamespace = "OwnNamespace",
        SingleNamespace = "SingleNamespace",
        MultiNamespace = "MultiNamespace",
        AllNamespaces = "AllNamespaces",
    }
}

/// `spec.installModes[]`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct InstallMode {
    #[serde(rename = "type")]
    pub type_: InstallModeType,
    #[serde(default)]
    pub supported: bool,
}

/// Why a set of target namespaces is not supported (texts as OLM's `Supports`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallModeError {
    #[error("operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces")]
    ZeroNamespaces,
    #[error("{mode} InstallModeType not supported, cannot configure to watch {watch}")]
    Unsupported { mode: InstallModeType, watch: String },
    #[error("operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1")]
    AllNamespacesAmongMany,
}

/// Whether `modes` support `mode`. Like OLM's map-built `InstallModeSet`, a later entry of the
/// same type wins and a missing entry is unsupported.
pub fn supports_mode(modes: &[InstallMode], mode: &InstallModeType) -> bool {
    modes.iter().rev().find(|m| &m.type_ == mode).is_some_and(|m| m.supported)
}

/// OLM's `InstallModeSet.Supports(operatorNamespace, namespaces)`, same order of checks and texts.
pub fn supports(modes: &[InstallMode], operator_namespace: &str, namespaces: &[String]) -> Result<(), InstallModeError> {
    let need = |mode: InstallModeType, watch: String| {
        if supports_mode(modes, &mode) { Ok(()) } else { Err(InstallModeError::Unsupported { mode, watch }) }
    };
    match namespaces {
        [] => Err(InstallModeError::ZeroNamespaces),
        [only] if only == operator_namespace => need(InstallModeType::OwnNamespace, "own namespace".to_owned()),
        [only] if only.is_empty() => need(InstallModeType::AllNamespaces, "all namespaces".to_owned()),
        [_] => need(InstallModeType::SingleNamespace, "one namespace".to_owned()),
        many => {
            need(InstallModeType::MultiNamespace, format!("{} namespaces", many.len()))?;
            for ns in many {
                if ns == operator_namespace {
                    need(InstallModeType::OwnNamespace, "own namespace".to_owned())?;
                }
                if ns.is_empty() {
                    return Err(InstallModeError::AllNamespacesAmongMany);
                }
            }
            Ok(())
        }
    }
}
