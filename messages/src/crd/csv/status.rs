//! CSV status: phases, reasons, requirement statuses, and the pure helpers of OLM's
//! `clusterserviceversion.go` (`SetPhase`, `IsCopied`, `IsObsolete`, `IsUncopiable`).
//!
//! Status fields mirror Go's `omitempty` exactly (empty phase, reason and message are not
//! written), because OLM itself writes this status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CONDITIONS_LENGTH_LIMIT, ClusterServiceVersion};
use crate::crd::annotations;
use crate::wire_enum;

wire_enum! {
    /// `status.phase` (`ClusterServiceVersionPhase`); `None` is `""` (also OLM's "Any").
    pub enum CsvPhase {
        None = "",
        Pending = "Pending",
        InstallReady = "InstallReady",
        Installing = "Installing",
        Succeeded = "Succeeded",
        Failed = "Failed",
        /// Declared by OLM, never set.
        Unknown = "Unknown",
        Replacing = "Replacing",
        Deleting = "Deleting",
    }
}

wire_enum! {
    /// `status.reason` (`ConditionReason`); `None` is `""`.
    pub enum CsvReason {
        None = "",
        RequirementsUnknown = "RequirementsUnknown",
        RequirementsNotMet = "RequirementsNotMet",
        AllRequirementsMet = "AllRequirementsMet",
        OwnerConflict = "OwnerConflict",
        InstallComponentFailed = "InstallComponentFailed",
        InstallComponentFailedNoRetry = "InstallComponentFailedNoRetry",
        InvalidInstallStrategy = "InvalidInstallStrategy",
        InstallWaiting = "InstallWaiting",
        InstallSucceeded = "InstallSucceeded",
        InstallCheckFailed = "InstallCheckFailed",
        ComponentUnhealthy = "ComponentUnhealthy",
        BeingReplaced = "BeingReplaced",
        Replaced = "Replaced",
        NeedsReinstall = "NeedsReinstall",
        NeedsCertRotation = "NeedsCertRotation",
        ApiServiceResourceIssue = "APIServiceResourceIssue",
        ApiServiceResourcesNeedReinstall = "APIServiceResourcesNeedReinstall",
        ApiServiceInstallFailed = "APIServiceInstallFailed",
        Copied = "Copied",
        InvalidInstallModes = "InvalidInstallModes",
        NoTargetNamespaces = "NoTargetNamespaces",
        UnsupportedOperatorGroup = "UnsupportedOperatorGroup",
        NoOperatorGroup = "NoOperatorGroup",
        TooManyOperatorGroups = "TooManyOperatorGroups",
        InterOperatorGroupOwnerConflict = "InterOperatorGroupOwnerConflict",
        CannotModifyStaticOperatorGroupProvidedApis = "CannotModifyStaticOperatorGroupProvidedAPIs",
        DetectedClusterChange = "DetectedClusterChange",
        InvalidWebhookDescription = "InvalidWebhookDescription",
        OperatorConditionNotUpgradeable = "OperatorConditionNotUpgradeable",
        /// Declared by OLM, unused.
        WaitingOnCleanup = "WaitingOnCleanup",
    }
}

wire_enum! {
    /// `requirementStatus[].status` and `dependents[].status` (`StatusReason`).
    pub enum RequirementStatusReason {
        Present = "Present",
        NotPresent = "NotPresent",
        PresentNotSatisfied = "PresentNotSatisfied",
        PresentNotAvailable = "PresentNotAvailable",
        Satisfied = "Satisfied",
        NotSatisfied = "NotSatisfied",
        /// Ad-hoc status OLM uses for owned APIServices (`olm/requirements.go`).
        DeploymentFound = "DeploymentFound",
        DeploymentNotFound = "DeploymentNotFound",
    }
}

impl Default for CsvPhase {
    fn default() -> Self {
        CsvPhase::None
    }
}

impl Default for CsvReason {
    fn default() -> Self {
        CsvReason::None
    }
}

impl CsvPhase {
    pub fn is_none(&self) -> bool {
        *self == CsvPhase::None
    }
}

impl CsvReason {
    pub fn is_none(&self) -> bool {
        *self == CsvReason::None
    }
}

/// `status` of a ClusterServiceVersion.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionStatus {
    #[serde(default, skip_serializing_if = "CsvPhase::is_none")]
    pub phase: CsvPhase,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "CsvReason::is_none")]
    pub reason: CsvReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterServiceVersionCondition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirement_status: Vec<RequirementStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_last_updated: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_rotate_at: Option<Time>,
    /// Declared in the API, written by no OLM controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupStatus>,
}

/// One entry of the CSV's phase history.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionCondition {
    #[serde(default)]
    pub phase: CsvPhase,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "CsvReason::is_none")]
    pub reason: CsvReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// The state of one requirement (CRD, APIService, native API, service account, minKubeVersion).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct RequirementStatus {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub status: RequirementStatusReason,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uuid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependents: Vec<DependentStatus>,
}

/// A dependent of a requirement (e.g. one RBAC rule of a service account).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct DependentStatus {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub status: RequirementStatusReason,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uuid: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `status.cleanup` (unused by OLM controllers).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_deletion: Vec<ResourceList>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceList {
    pub group: String,
    pub kind: String,
    #[serde(default)]
    pub instances: Vec<ResourceInstance>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceInstance {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl ClusterServiceVersionStatus {
    /// OLM's `SetPhase`: lastUpdateTime, message and reason always move; lastTransitionTime only
    /// when the phase changes. A condition with the new values is appended when there is none
    /// yet or the last one differs in phase or reason; the newest 20 are kept.
    pub fn set_phase(&mut self, phase: CsvPhase, reason: CsvReason, message: impl Into<String>, now: &Time) {
        self.last_update_time = Some(now.clone());
        if self.phase != phase {
            self.phase = phase;
            self.last_transition_time = Some(now.clone());
        }
        self.message = message.into();
        self.reason = reason;
        let append = match self.conditions.last() {
            None => true,
            Some(last) => last.phase != self.phase || last.reason != self.reason,
        };
        if append {
            self.conditions.push(ClusterServiceVersionCondition {
                phase: self.phase.clone(),
                message: self.message.clone(),
                reason: self.reason.clone(),
                last_update_time: self.last_update_time.clone(),
                last_transition_time: self.last_transition_time.clone(),
            });
        }
        if self.conditions.len() > CONDITIONS_LENGTH_LIMIT {
            let excess = self.conditions.len() - CONDITIONS_LENGTH_LIMIT;
            self.conditions.drain(..excess);
        }
    }
}

/// Reasons that make a CSV "uncopiable" (`IsUncopiable`).
const UNCOPIABLE_REASONS: &[CsvReason] = &[
    CsvReason::Copied,
    CsvReason::InvalidInstallModes,
    CsvReason::NoTargetNamespaces,
    CsvReason::UnsupportedOperatorGroup,
    CsvReason::NoOperatorGroup,
    CsvReason::TooManyOperatorGroups,
    CsvReason::InterOperatorGroupOwnerConflict,
    CsvReason::CannotModifyStaticOperatorGroupProvidedApis,
];

impl ClusterServiceVersion {
    /// The phase, `None` when there is no status.
    pub fn phase(&self) -> CsvPhase {
        self.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default()
    }

    /// The reason, `None` when there is no status.
    pub fn reason(&self) -> CsvReason {
        self.status.as_ref().map(|s| s.reason.clone()).unwrap_or_default()
    }

    /// [`ClusterServiceVersionStatus::set_phase`] on this CSV's status (created if absent).
    pub fn set_phase(&mut self, phase: CsvPhase, reason: CsvReason, message: impl Into<String>, now: &Time) {
        self.status.get_or_insert_with(Default::default).set_phase(phase, reason, message, now);
    }

    /// OLM's `IsCopied`: reason `Copied`, or `olm.operatorNamespace` names another namespace, or
    /// the `olm.copiedFrom` label is present.
    pub fn is_copied(&self) -> bool {
        if self.reason() == CsvReason::Copied {
            return true;
        }
        let own_ns = self.metadata.namespace.as_deref().unwrap_or_default();
        let foreign_operator_ns = self
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::OPERATOR_NAMESPACE))
            .is_some_and(|ns| ns != own_ns);
        let copied_label = self.metadata.labels.as_ref().is_some_and(|l| l.contains_key(annotations::COPIED_FROM));
        foreign_operator_ns || copied_label
    }

    /// OLM's `IsObsolete`: some condition has reason `Replaced` or `BeingReplaced`.
    pub fn is_obsolete(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| matches!(c.reason, CsvReason::Replaced | CsvReason::BeingReplaced))
        })
    }

    /// OLM's `IsUncopiable`: phase None, or a reason saying the operator group does not fit.
    pub fn is_uncopiable(&self) -> bool {
        self.phase() == CsvPhase::None || UNCOPIABLE_REASONS.contains(&self.reason())
    }
}
