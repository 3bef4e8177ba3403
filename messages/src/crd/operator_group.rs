//! OperatorGroup (`operators.coreos.com/v1` storage, `v1alpha2` served; namespaced): the
//! namespaces an operator serves (API `operatorgroup_types.go`, spec §1.5, §3).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::crd::annotations;
use crate::wire_enum;

wire_enum! {
    /// `spec.upgradeStrategy.name`.
    #[derive(Default)]
    pub enum UpgradeStrategyName {
        #[default]
        Default = "Default",
        TechPreviewUnsafeFailForward = "TechPreviewUnsafeFailForward",
    }
}

wire_enum! {
    /// `status.conditions[].type` of an OperatorGroup.
    pub enum OperatorGroupConditionType {
        ServiceAccount = "OperatorGroupServiceAccount",
        MultipleOperatorGroup = "MultipleOperatorGroup",
    }
}

wire_enum! {
    /// `status.conditions[].reason` of an OperatorGroup.
    pub enum OperatorGroupConditionReason {
        ServiceAccountNotFound = "ServiceAccountNotFound",
        MultipleOperatorGroupsFound = "MultipleOperatorGroupsFound",
    }
}

/// `spec` of an OperatorGroup (v1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OperatorGroup",
    plural = "operatorgroups",
    singular = "operatorgroup",
    namespaced,
    status = "OperatorGroupStatus",
    shortname = "og",
    category = "olm",
    derive = "PartialEq",
    doc = "OperatorGroup is the unit of multitenancy for OLM managed operators. It constrains the installation of operators in its namespace to a specified set of target namespaces.",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupSpec {
    /// Selects target namespaces by label; ignored when `targetNamespaces` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    #[serde(
        rename = "staticProvidedAPIs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub static_provided_apis: Option<bool>,
    /// `Default` or `TechPreviewUnsafeFailForward` (a plain string in OLM's API; the CRD
    /// defaults it to `Default`). Read it through [`OperatorGroup::upgrade_strategy`].
    #[serde(
        default,
        deserialize_with = "upgrade_strategy_either_shape",
        skip_serializing_if = "Option::is_none"
    )]
    pub upgrade_strategy: Option<UpgradeStrategyName>,
}

/// `spec.upgradeStrategy` in either shape OLM has stored: the plain string of today's API, or the object
/// `{name: ...}` of the operator-framework/api releases that introduced the field (objects written then stay
/// in etcd as they were: the apiserver does not validate on read). An object without `name` (Go's
/// `omitempty` of `""`) reads as unset, as OLM reads `""` as `Default`. We always write the string.
fn upgrade_strategy_either_shape<'de, D>(
    deserializer: D,
) -> Result<Option<UpgradeStrategyName>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Plain(UpgradeStrategyName),
        Named {
            #[serde(default)]
            name: Option<UpgradeStrategyName>,
        },
    }
    Ok(match Option::<Shape>::deserialize(deserializer)? {
        None => None,
        Some(Shape::Plain(name)) => Some(name),
        Some(Shape::Named { name }) => name.filter(|n| !n.as_str().is_empty()),
    })
}

/// `status` of an OperatorGroup.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    /// Target namespaces; `[""]` means all namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_ref: Option<ObjectReference>,
    /// Required by the CRD's status schema; Go writes `null` when unset.
    pub last_updated: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl OperatorGroup {
    /// OLM's `BuildTargetNamespaces`: status.namespaces sorted and joined with `,`
    /// (AllNamespaces `[""]` gives `""`).
    pub fn build_target_namespaces(&self) -> String {
        let mut namespaces = self
            .status
            .as_ref()
            .and_then(|s| s.namespaces.clone())
            .unwrap_or_default();
        namespaces.sort();
        namespaces.join(",")
    }

    /// OLM's `UpgradeStrategy()`: `TechPreviewUnsafeFailForward` when set to exactly that,
    /// otherwise `Default` (also for unset or unknown values).
    pub fn upgrade_strategy(&self) -> UpgradeStrategyName {
        match &self.spec.upgrade_strategy {
            Some(UpgradeStrategyName::TechPreviewUnsafeFailForward) => {
                UpgradeStrategyName::TechPreviewUnsafeFailForward
            }
            _ => UpgradeStrategyName::Default,
        }
    }

    /// Whether `spec.staticProvidedAPIs` is true.
    pub fn is_static(&self) -> bool {
        self.spec.static_provided_apis.unwrap_or(false)
    }

    /// OLM's `NamespaceLabelSelector`: with targetNamespaces, the `olm.operatorgroup.uid/<uid>`
    /// label; else spec.selector; `None` selects every namespace. Errors when targets are set but
    /// the object has no uid yet (OLM's "Missing UID").
    pub fn namespace_label_selector(&self) -> Result<Option<LabelSelector>, MissingUid> {
        let has_targets = self
            .spec
            .target_namespaces
            .as_ref()
            .is_some_and(|t| !t.is_empty());
        if !has_targets {
            return Ok(self.spec.selector.clone());
        }
        let uid = self
            .metadata
            .uid
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or(MissingUid)?;
        let labels = BTreeMap::from([(annotations::operator_group_uid_label(uid), String::new())]);
        Ok(Some(LabelSelector {
            match_labels: Some(labels),
            ..LabelSelector::default()
        }))
    }
}

/// The OperatorGroup has no uid yet, so its namespace label cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Missing UID")]
pub struct MissingUid;

/// The served `v1alpha2` version (no `upgradeStrategy`).
pub mod v1alpha2 {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    pub use super::OperatorGroupStatus;

    /// `spec` of an OperatorGroup (v1alpha2).
    #[derive(
        CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "operators.coreos.com",
        version = "v1alpha2",
        kind = "OperatorGroup",
        plural = "operatorgroups",
        singular = "operatorgroup",
        namespaced,
        status = "OperatorGroupStatus",
        shortname = "og",
        category = "olm",
        derive = "PartialEq",
        doc = "OperatorGroup is the unit of multitenancy for OLM managed operators. It constrains the installation of operators in its namespace to a specified set of target namespaces.",
        printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
    )]
    #[serde(rename_all = "camelCase")]
    pub struct OperatorGroupSpec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub selector: Option<LabelSelector>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub target_namespaces: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub service_account_name: Option<String>,
        #[serde(
            rename = "staticProvidedAPIs",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        pub static_provided_apis: Option<bool>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn og(targets: Option<&[&str]>, status: Option<&[&str]>) -> OperatorGroup {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut og = OperatorGroup::new(
            "og",
            OperatorGroupSpec {
                target_namespaces: targets.map(own),
                ..Default::default()
            },
        );
        og.metadata.uid = Some("uid-1".into());
        og.status = status.map(|s| OperatorGroupStatus {
            namespaces: Some(own(s)),
            ..Default::default()
        });
        og
    }

    #[rstest]
    #[case::sorted_and_joined(og(None, Some(&["b", "a", "c"])), "a,b,c")]
    #[case::all_namespaces_is_empty(og(None, Some(&[""])), "")]
    #[case::no_status_is_empty(og(None, None), "")]
    fn build_target_namespaces_follows_olm(#[case] og: OperatorGroup, #[case] expected: &str) {
        assert_eq!(og.build_target_namespaces(), expected);
    }

    #[test]
    fn explicit_targets_select_namespaces_by_the_uid_label() {
        let selector = og(Some(&["a"]), None)
            .namespace_label_selector()
            .expect("uid set")
            .expect("selector");
        let labels = selector.match_labels.expect("labels");
        assert_eq!(
            labels
                .get("olm.operatorgroup.uid/uid-1")
                .map(String::as_str),
            Some("")
        );
    }

    #[test]
    fn explicit_targets_without_a_uid_are_an_error() {
        let mut og = og(Some(&["a"]), None);
        og.metadata.uid = None;
        assert_eq!(og.namespace_label_selector(), Err(MissingUid));
    }

    #[test]
    fn without_targets_or_selector_every_namespace_is_selected() {
        assert_eq!(og(None, None).namespace_label_selector(), Ok(None));
    }

    fn spec_with(upgrade_strategy: serde_json::Value) -> OperatorGroupSpec {
        serde_json::from_value(serde_json::json!({"upgradeStrategy": upgrade_strategy}))
            .expect("spec decodes")
    }

    #[rstest]
    #[case::a_plain_string(serde_json::json!("TechPreviewUnsafeFailForward"), Some(UpgradeStrategyName::TechPreviewUnsafeFailForward))]
    #[case::the_older_object_shape(serde_json::json!({"name": "TechPreviewUnsafeFailForward"}), Some(UpgradeStrategyName::TechPreviewUnsafeFailForward))]
    #[case::the_older_object_shape_with_default(serde_json::json!({"name": "Default"}), Some(UpgradeStrategyName::Default))]
    #[case::an_object_without_a_name_is_unset(serde_json::json!({}), None)]
    #[case::an_object_with_an_empty_name_is_unset(serde_json::json!({"name": ""}), None)]
    #[case::null_is_unset(serde_json::Value::Null, None)]
    #[case::an_unknown_string_is_kept(serde_json::json!("Sideways"), Some(UpgradeStrategyName::Other("Sideways".into())))]
    fn upgrade_strategy_decodes_either_stored_shape(
        #[case] raw: serde_json::Value,
        #[case] expected: Option<UpgradeStrategyName>,
    ) {
        assert_eq!(spec_with(raw).upgrade_strategy, expected);
    }

    #[rstest]
    #[case::from_a_string(serde_json::json!("TechPreviewUnsafeFailForward"))]
    #[case::from_an_object(serde_json::json!({"name": "TechPreviewUnsafeFailForward"}))]
    fn upgrade_strategy_is_written_as_olms_plain_string_and_reads_back_the_same(
        #[case] raw: serde_json::Value,
    ) {
        let spec = spec_with(raw);
        let written = serde_json::to_value(&spec).expect("serializes");
        assert_eq!(written["upgradeStrategy"], "TechPreviewUnsafeFailForward");
        let again: OperatorGroupSpec = serde_json::from_value(written).expect("decodes");
        assert_eq!(again, spec);
    }

    #[test]
    fn a_missing_upgrade_strategy_is_not_written() {
        let spec: OperatorGroupSpec =
            serde_json::from_value(serde_json::json!({})).expect("decodes");
        assert_eq!(spec.upgrade_strategy, None);
        assert_eq!(
            serde_json::to_value(&spec).expect("serializes"),
            serde_json::json!({})
        );
    }

    #[rstest]
    #[case::unset_is_default(None, UpgradeStrategyName::Default)]
    #[case::fail_forward_is_kept(
        Some("TechPreviewUnsafeFailForward"),
        UpgradeStrategyName::TechPreviewUnsafeFailForward
    )]
    #[case::an_unknown_value_reads_as_default(Some("foo"), UpgradeStrategyName::Default)]
    fn upgrade_strategy_follows_olm(
        #[case] raw: Option<&str>,
        #[case] expected: UpgradeStrategyName,
    ) {
        let mut og = og(None, None);
        og.spec.upgrade_strategy = raw.map(UpgradeStrategyName::from_wire);
        assert_eq!(og.upgrade_strategy(), expected);
    }
}
