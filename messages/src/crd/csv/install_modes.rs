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
    #[error(
        "operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces"
    )]
    ZeroNamespaces,
    #[error("{mode} InstallModeType not supported, cannot configure to watch {watch}")]
    Unsupported {
        mode: InstallModeType,
        watch: String,
    },
    #[error(
        "operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1"
    )]
    AllNamespacesAmongMany,
}

/// Whether `modes` support `mode`. Like OLM's map-built `InstallModeSet`, a later entry of the
/// same type wins and a missing entry is unsupported.
pub fn supports_mode(modes: &[InstallMode], mode: &InstallModeType) -> bool {
    modes
        .iter()
        .rev()
        .find(|m| &m.type_ == mode)
        .is_some_and(|m| m.supported)
}

/// OLM's `InstallModeSet.Supports(operatorNamespace, namespaces)`, same order of checks and texts.
pub fn supports(
    modes: &[InstallMode],
    operator_namespace: &str,
    namespaces: &[String],
) -> Result<(), InstallModeError> {
    let need = |mode: InstallModeType, watch: String| {
        if supports_mode(modes, &mode) {
            Ok(())
        } else {
            Err(InstallModeError::Unsupported { mode, watch })
        }
    };
    match namespaces {
        [] => Err(InstallModeError::ZeroNamespaces),
        [only] if only == operator_namespace => {
            need(InstallModeType::OwnNamespace, "own namespace".to_owned())
        }
        [only] if only.is_empty() => {
            need(InstallModeType::AllNamespaces, "all namespaces".to_owned())
        }
        [_] => need(InstallModeType::SingleNamespace, "one namespace".to_owned()),
        many => {
            need(
                InstallModeType::MultiNamespace,
                format!("{} namespaces", many.len()),
            )?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn modes(supported: &[InstallModeType]) -> Vec<InstallMode> {
        InstallModeType::KNOWN
            .iter()
            .map(|t| InstallMode {
                type_: t.clone(),
                supported: supported.contains(t),
            })
            .collect()
    }

    fn ns(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    use InstallModeType::*;

    #[rstest]
    #[case::zero_namespaces_are_never_supported(modes(&[AllNamespaces]), ns(&[]),
        Err("operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces"))]
    #[case::own_namespace_needs_own_namespace_mode(modes(&[SingleNamespace]), ns(&["op"]),
        Err("OwnNamespace InstallModeType not supported, cannot configure to watch own namespace"))]
    #[case::own_namespace_with_the_mode_is_fine(modes(&[OwnNamespace]), ns(&["op"]), Ok(()))]
    #[case::all_namespaces_needs_all_namespaces_mode(modes(&[OwnNamespace]), ns(&[""]),
        Err("AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces"))]
    #[case::one_other_namespace_needs_single_namespace(modes(&[OwnNamespace]), ns(&["other"]),
        Err("SingleNamespace InstallModeType not supported, cannot configure to watch one namespace"))]
    #[case::several_namespaces_need_multi_namespace(modes(&[SingleNamespace]), ns(&["a", "b"]),
        Err("MultiNamespace InstallModeType not supported, cannot configure to watch 2 namespaces"))]
    #[case::several_including_own_also_need_own_namespace(modes(&[MultiNamespace]), ns(&["a", "op"]),
        Err("OwnNamespace InstallModeType not supported, cannot configure to watch own namespace"))]
    #[case::all_namespaces_among_several_is_invalid(modes(&[MultiNamespace]), ns(&["a", ""]),
        Err("operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1"))]
    #[case::several_with_multi_namespace_are_fine(modes(&[MultiNamespace]), ns(&["a", "b"]), Ok(()))]
    #[case::missing_entries_count_as_unsupported(Vec::new(), ns(&["op"]),
        Err("OwnNamespace InstallModeType not supported, cannot configure to watch own namespace"))]
    fn supports_matches_olm(
        #[case] modes: Vec<InstallMode>,
        #[case] targets: Vec<String>,
        #[case] expected: Result<(), &str>,
    ) {
        let got = supports(&modes, "op", &targets).map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(str::to_owned));
    }
}
