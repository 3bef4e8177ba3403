//! The OperatorGroup as catalog-operator reads it: its metadata, `spec.upgradeStrategy`, and the scoped-install
//! account (`spec.serviceAccountName`, `status.serviceAccountRef`), nothing else.
//!
//! Resolution needs the group's annotations (global catalogs, unpack timeout) and whether it asks for
//! fail-forward upgrades (OLM `IsFailForwardEnabled`). The rest of the spec is never decoded, so a group whose
//! selector or targets do not fit our types still counts as its namespace's group (a group that failed to
//! decode would be skipped by the watch, and its namespace would read "expected 1 OperatorGroup, found 0").
//! `upgradeStrategy` itself is read leniently: the plain string of today's API, the `{name: ...}` object of the
//! operator-framework/api releases that introduced it, or anything else (read as `Default`, as OLM's
//! `UpgradeStrategy()` does for unknown values). Pure.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::operator_group::{OperatorGroup, UpgradeStrategyName};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// An OperatorGroup with only what catalog-operator reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupView {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: GroupViewSpec,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: GroupViewStatus,
}

/// `status` with only the account olm-operator synced (a value that does not decode reads as none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupViewStatus {
    #[serde(
        default,
        rename = "serviceAccountRef",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_account_ref: Option<ObjectReference>,
    /// `status.namespaces`: the targets olm-operator synced (`None` before its first sync, or when it does not
    /// decode).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub namespaces: Option<Vec<String>>,
}

/// `spec` with `upgradeStrategy` kept as written.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupViewSpec {
    #[serde(
        default,
        rename = "upgradeStrategy",
        skip_serializing_if = "Option::is_none"
    )]
    pub upgrade_strategy: Option<serde_json::Value>,
    /// The account scoped installs act as (read by the InstallPlan executor from the store, as OLM's
    /// `UserDefinedServiceAccountQuerier` reads its lister; a GET per plan before).
    #[serde(
        default,
        rename = "serviceAccountName",
        skip_serializing_if = "Option::is_none"
    )]
    pub service_account_name: Option<String>,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::de::DeserializeOwned,
{
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default())
}

impl GroupView {
    /// OLM's `UpgradeStrategy()`: `TechPreviewUnsafeFailForward` when set to exactly that, else `Default`.
    pub fn upgrade_strategy(&self) -> UpgradeStrategyName {
        let name = match &self.spec.upgrade_strategy {
            Some(serde_json::Value::String(s)) => Some(s.as_str()),
            Some(serde_json::Value::Object(o)) => o.get("name").and_then(|n| n.as_str()),
            _ => None,
        };
        match name.map(UpgradeStrategyName::from_wire) {
            Some(UpgradeStrategyName::TechPreviewUnsafeFailForward) => {
                UpgradeStrategyName::TechPreviewUnsafeFailForward
            }
            _ => UpgradeStrategyName::Default,
        }
    }

    /// The scoped-install account facts of this group.
    pub fn account(&self) -> olm_runtime::scoped_install::GroupAccount {
        olm_runtime::scoped_install::GroupAccount {
            namespace: self.metadata.namespace.clone().unwrap_or_default(),
            group: self.metadata.name.clone().unwrap_or_default(),
            named: self.spec.service_account_name.clone(),
            synced: self.status.service_account_ref.clone(),
        }
    }

    /// Whether the group asks for fail-forward upgrades.
    pub fn fail_forward(&self) -> bool {
        self.upgrade_strategy() == UpgradeStrategyName::TechPreviewUnsafeFailForward
    }
}

impl kube::Resource for GroupView {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        OperatorGroup::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        OperatorGroup::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        OperatorGroup::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        OperatorGroup::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::unset(json!({"targetNamespaces": ["a"]}), false)]
    #[case::the_default(json!({"upgradeStrategy": "Default"}), false)]
    #[case::fail_forward_as_a_string(json!({"upgradeStrategy": "TechPreviewUnsafeFailForward"}), true)]
    #[case::fail_forward_as_the_early_object(json!({"upgradeStrategy": {"name": "TechPreviewUnsafeFailForward"}}), true)]
    #[case::an_object_without_a_name(json!({"upgradeStrategy": {}}), false)]
    #[case::an_unknown_value_reads_as_default(json!({"upgradeStrategy": "UnsafeFailForward"}), false)]
    #[case::a_wrong_type_reads_as_default(json!({"upgradeStrategy": 7}), false)]
    #[case::a_selector_our_types_would_reject_does_not_matter(
        json!({"selector": {"matchLabels": 5}, "upgradeStrategy": "TechPreviewUnsafeFailForward"}), true)]
    #[case::no_spec_at_all(serde_json::Value::Null, false)]
    fn the_upgrade_strategy_is_read_as_olm_reads_it(
        #[case] spec: serde_json::Value,
        #[case] fail_forward: bool,
    ) {
        let group: GroupView = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "og", "namespace": "ns"}, "spec": spec}))
        .expect("a group decodes whatever its spec");
        assert_eq!(group.fail_forward(), fail_forward);
        assert_eq!(group.metadata.name.as_deref(), Some("og"));
    }

    #[rstest]
    #[case::no_account(json!({"spec": {}}), None, false)]
    #[case::named_not_synced(json!({"spec": {"serviceAccountName": "sa"}}), Some("sa"), false)]
    #[case::named_and_synced(json!({"spec": {"serviceAccountName": "sa"},
        "status": {"serviceAccountRef": {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}}}), Some("sa"), true)]
    #[case::a_status_that_does_not_decode_reads_as_not_synced(json!({"spec": {"serviceAccountName": "sa"},
        "status": {"serviceAccountRef": "sa"}}), Some("sa"), false)]
    #[case::a_name_that_does_not_decode_drops_the_spec_but_not_the_group(json!({"spec": {"serviceAccountName": 5}}), None, false)]
    fn the_account_is_read_from_the_view(
        #[case] fields: serde_json::Value,
        #[case] named: Option<&str>,
        #[case] synced: bool,
    ) {
        let mut group = json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "og", "namespace": "ns"}});
        if let (Some(g), Some(f)) = (group.as_object_mut(), fields.as_object()) {
            g.extend(f.clone());
        }
        let group: GroupView = serde_json::from_value(group).expect("a group decodes");
        let account = group.account();
        assert_eq!(account.named.as_deref(), named);
        assert_eq!(account.synced.is_some(), synced);
        assert_eq!(
            (account.namespace.as_str(), account.group.as_str()),
            ("ns", "og")
        );
    }

    #[test]
    fn the_view_names_the_operator_group_resource() {
        use kube::Resource;
        assert_eq!(GroupView::api_version(&()), "operators.coreos.com/v1");
        assert_eq!(GroupView::plural(&()), "operatorgroups");
        assert_eq!(GroupView::kind(&()), "OperatorGroup");
    }
}
