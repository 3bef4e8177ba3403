//! Subscription (`operators.coreos.com/v1alpha1`, namespaced): a request to install and keep
//! updating a package from a catalog (API `subscription_types.go`, spec §1.3).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire_enum;

wire_enum! {
    /// `spec.installPlanApproval` and InstallPlan `spec.approval`. Anything but `Manual` is
    /// treated as automatic (see [`Approval::is_manual`]).
    pub enum Approval {
        Automatic = "Automatic",
        Manual = "Manual",
    }
}

impl Approval {
    pub fn is_manual(&self) -> bool {
        *self == Approval::Manual
    }
}

wire_enum! {
    /// `status.state`; `None` is `""`.
    #[derive(Default)]
    pub enum SubscriptionState {
        #[default]
        None = "",
        UpgradeFailed = "UpgradeFailed",
        UpgradeAvailable = "UpgradeAvailable",
        UpgradePending = "UpgradePending",
        AtLatestKnown = "AtLatestKnown",
    }
}

impl SubscriptionState {
    pub fn is_none(&self) -> bool {
        *self == SubscriptionState::None
    }
}

wire_enum! {
    /// `status.conditions[].type`.
    pub enum SubscriptionConditionType {
        CatalogSourcesUnhealthy = "CatalogSourcesUnhealthy",
        InstallPlanMissing = "InstallPlanMissing",
        InstallPlanPending = "InstallPlanPending",
        InstallPlanFailed = "InstallPlanFailed",
        ResolutionFailed = "ResolutionFailed",
        BundleUnpacking = "BundleUnpacking",
        BundleUnpackFailed = "BundleUnpackFailed",
        Deprecated = "Deprecated",
        PackageDeprecated = "PackageDeprecated",
        ChannelDeprecated = "ChannelDeprecated",
        BundleDeprecated = "BundleDeprecated",
    }
}

wire_enum! {
    /// `status.reason` and condition reasons used on Subscriptions. Condition reasons also carry
    /// InstallPlan phases/reasons (e.g. `RequiresApproval`, `InstallComponentFailed`) and
    /// resolution reasons, which read as `Other` unless listed here.
    #[derive(Default)]
    pub enum SubscriptionReason {
        #[default]
        None = "",
        NoCatalogSourcesFound = "NoCatalogSourcesFound",
        AllCatalogSourcesHealthy = "AllCatalogSourcesHealthy",
        CatalogSourcesAdded = "CatalogSourcesAdded",
        CatalogSourcesUpdated = "CatalogSourcesUpdated",
        CatalogSourcesDeleted = "CatalogSourcesDeleted",
        UnhealthyCatalogSourceFound = "UnhealthyCatalogSourceFound",
        ReferencedInstallPlanNotFound = "ReferencedInstallPlanNotFound",
        InstallPlanNotYetReconciled = "InstallPlanNotYetReconciled",
        InstallPlanFailed = "InstallPlanFailed",
        /// Declared, unused by OLM.
        InvalidCatalog = "InvalidCatalog",
        /// Declared, unused by OLM.
        UpgradeSucceeded = "UpgradeSucceeded",
        RequiresApproval = "RequiresApproval",
        Installing = "Installing",
        InstallComponentFailed = "InstallComponentFailed",
        InstallCheckFailed = "InstallCheckFailed",
        ConstraintsNotSatisfiable = "ConstraintsNotSatisfiable",
        ErrorPreventedResolution = "ErrorPreventedResolution",
        /// `BundleUnpacking` while a bundle image is pulled.
        UnpackingInProgress = "UnpackingInProgress",
        /// `BundleUnpackFailed` when it could not be.
        BundleUnpackFailed = "BundleUnpackFailed",
    }
}

impl SubscriptionReason {
    pub fn is_none(&self) -> bool {
        *self == SubscriptionReason::None
    }
}

/// `spec` of a Subscription.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "Subscription",
    plural = "subscriptions",
    singular = "subscription",
    namespaced,
    status = "SubscriptionStatus",
    shortname = "sub",
    shortname = "subs",
    category = "olm",
    derive = "PartialEq",
    doc = "Subscription keeps operators up to date by tracking changes to Catalogs.",
    printcolumn = r#"{"name":"Package","type":"string","description":"The package subscribed to","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Source","type":"string","description":"The catalog source for the specified package","jsonPath":".spec.source"}"#,
    printcolumn = r#"{"name":"Channel","type":"string","description":"The channel of updates to subscribe to","jsonPath":".spec.channel"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionSpec {
    /// Name of the CatalogSource.
    #[serde(rename = "source", default)]
    pub catalog_source: String,
    #[serde(rename = "sourceNamespace", default)]
    pub catalog_source_namespace: String,
    /// The package name.
    #[serde(rename = "name", default)]
    pub package: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(
        rename = "startingCSV",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub starting_csv: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_approval: Option<Approval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<SubscriptionConfig>,
}

/// `spec.config`: overrides projected onto the operator's deployments (spec §2.6).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// `status` of a Subscription.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    #[serde(
        rename = "currentCSV",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub current_csv: String,
    #[serde(
        rename = "installedCSV",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub installed_csv: String,
    /// Reference to the InstallPlan (field `installplan`, lower case).
    #[serde(
        rename = "installplan",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub install_plan: Option<InstallPlanReference>,
    #[serde(default, skip_serializing_if = "SubscriptionState::is_none")]
    pub state: SubscriptionState,
    #[serde(default, skip_serializing_if = "SubscriptionReason::is_none")]
    pub reason: SubscriptionReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_ref: Option<k8s_openapi::api::core::v1::ObjectReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalog_health: Vec<SubscriptionCatalogHealth>,
    /// Not on the wire: how catalog-operator's Subscription store holds a `catalogHealth` in the form it writes
    /// (`catalog_health` is then empty), so that a Subscription's memory does not grow with the catalogs it sees.
    #[serde(skip)]
    #[schemars(skip)]
    pub catalog_health_summary: Option<CatalogHealthSummary>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<SubscriptionCondition>,
    /// Go writes it always (non-pointer `metav1.Time`); absent here means never set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
}

/// A `status.catalogHealth` whose entries are all in the form catalog-operator writes (a reference naming
/// `operators.coreos.com/v1alpha1` CatalogSources by name, namespace and uid, one `lastUpdated` for every entry),
/// reduced to what rebuilds it from the catalogs it names: a digest of its entries, their count and their time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogHealthSummary {
    /// The digest of the entries, times aside (what catalog-operator compares).
    pub digest: u64,
    pub entries: u32,
    pub last_updated: Time,
}

/// `status.installplan`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uuid: String,
}

/// `status.catalogHealth[]`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCatalogHealth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_source_ref: Option<k8s_openapi::api::core::v1::ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
    #[serde(default)]
    pub healthy: bool,
}

/// `status.conditions[]` of a Subscription.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCondition {
    #[serde(rename = "type")]
    pub type_: SubscriptionConditionType,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "SubscriptionReason::is_none")]
    pub reason: SubscriptionReason,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl SubscriptionCondition {
    /// Equality ignoring timestamps (OLM's `SubscriptionCondition.Equals`).
    pub fn same_as(&self, other: &SubscriptionCondition) -> bool {
        self.type_ == other.type_
            && self.status == other.status
            && self.reason == other.reason
            && self.message == other.message
    }
}

impl SubscriptionStatus {
    /// OLM's `SetCondition`: replace the condition of the same type, else append.
    pub fn set_condition(&mut self, condition: SubscriptionCondition) {
        match self
            .conditions
            .iter_mut()
            .find(|c| c.type_ == condition.type_)
        {
            Some(existing) => *existing = condition,
            None => self.conditions.push(condition),
        }
    }

    /// The condition of type `type_`, if present.
    pub fn condition(&self, type_: &SubscriptionConditionType) -> Option<&SubscriptionCondition> {
        self.conditions.iter().find(|c| &c.type_ == type_)
    }

    /// OLM's `RemoveConditions`: drop every condition of the given types.
    pub fn remove_conditions(&mut self, types: &[SubscriptionConditionType]) {
        self.conditions.retain(|c| !types.contains(&c.type_));
    }
}

impl Subscription {
    /// Whether new InstallPlans need manual approval (only `Manual` does).
    pub fn approval_is_manual(&self) -> bool {
        self.spec
            .install_plan_approval
            .as_ref()
            .is_some_and(Approval::is_manual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(
        type_: SubscriptionConditionType,
        status: &str,
        reason: SubscriptionReason,
    ) -> SubscriptionCondition {
        SubscriptionCondition {
            type_,
            status: status.into(),
            reason,
            message: String::new(),
            last_heartbeat_time: None,
            last_transition_time: None,
        }
    }

    #[test]
    fn set_condition_replaces_the_same_type_and_appends_others() {
        let mut status = SubscriptionStatus::default();
        status.set_condition(condition(
            SubscriptionConditionType::CatalogSourcesUnhealthy,
            "True",
            SubscriptionReason::NoCatalogSourcesFound,
        ));
        status.set_condition(condition(
            SubscriptionConditionType::ResolutionFailed,
            "True",
            SubscriptionReason::ConstraintsNotSatisfiable,
        ));
        status.set_condition(condition(
            SubscriptionConditionType::CatalogSourcesUnhealthy,
            "False",
            SubscriptionReason::AllCatalogSourcesHealthy,
        ));
        let summary: Vec<(&str, &str, &str)> = status
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "CatalogSourcesUnhealthy",
                    "False",
                    "AllCatalogSourcesHealthy"
                ),
                ("ResolutionFailed", "True", "ConstraintsNotSatisfiable")
            ]
        );
        status.remove_conditions(&[SubscriptionConditionType::ResolutionFailed]);
        assert_eq!(status.conditions.len(), 1);
    }

    #[test]
    fn only_manual_approval_is_manual() {
        let mut sub = Subscription::new("s", SubscriptionSpec::default());
        assert!(!sub.approval_is_manual());
        sub.spec.install_plan_approval = Some(Approval::from_wire("manual"));
        assert!(
            !sub.approval_is_manual(),
            "wire strings are case-sensitive, as in OLM"
        );
        sub.spec.install_plan_approval = Some(Approval::Manual);
        assert!(sub.approval_is_manual());
    }
}
