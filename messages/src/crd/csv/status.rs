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
    #[derive(Default)]
    pub enum CsvPhase {
        #[default]
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
    #[derive(Default)]
    pub enum CsvReason {
        #[default]
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
    pub fn set_phase(
        &mut self,
        phase: CsvPhase,
        reason: CsvReason,
        message: impl Into<String>,
        now: &Time,
    ) {
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
        self.status
            .as_ref()
            .map(|s| s.phase.clone())
            .unwrap_or_default()
    }

    /// The reason, `None` when there is no status.
    pub fn reason(&self) -> CsvReason {
        self.status
            .as_ref()
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    }

    /// [`ClusterServiceVersionStatus::set_phase`] on this CSV's status (created if absent).
    pub fn set_phase(
        &mut self,
        phase: CsvPhase,
        reason: CsvReason,
        message: impl Into<String>,
        now: &Time,
    ) {
        self.status
            .get_or_insert_with(Default::default)
            .set_phase(phase, reason, message, now);
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
        let copied_label = self
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(annotations::COPIED_FROM));
        foreign_operator_ns || copied_label
    }

    /// OLM's `IsObsolete`: some condition has reason `Replaced` or `BeingReplaced`.
    pub fn is_obsolete(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| matches!(c.reason, CsvReason::Replaced | CsvReason::BeingReplaced))
        })
    }

    /// OLM's `IsUncopiable`: phase None, or a reason saying the operator group does not fit.
    pub fn is_uncopiable(&self) -> bool {
        self.phase() == CsvPhase::None || UNCOPIABLE_REASONS.contains(&self.reason())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).expect("valid second"))
    }

    fn status(phase: CsvPhase, reason: CsvReason, history: usize) -> ClusterServiceVersionStatus {
        let condition = ClusterServiceVersionCondition {
            phase: phase.clone(),
            message: "before".into(),
            reason: reason.clone(),
            last_update_time: Some(at(1)),
            last_transition_time: Some(at(1)),
        };
        ClusterServiceVersionStatus {
            phase,
            reason,
            message: "before".into(),
            last_update_time: Some(at(1)),
            last_transition_time: Some(at(1)),
            conditions: vec![condition; history],
            ..Default::default()
        }
    }

    /// (phase, reason, history) before; SetPhase(new phase, new reason, "after", t=50);
    /// expected lastTransitionTime second, number of conditions afterwards, whether one was appended.
    #[rstest]
    #[case::first_phase_on_an_empty_status_appends_and_transitions(
        status(CsvPhase::None, CsvReason::None, 0),
        CsvPhase::Pending,
        CsvReason::RequirementsUnknown,
        50,
        1,
        true
    )]
    #[case::same_phase_and_reason_only_refreshes_update_time_and_message(
        status(CsvPhase::Pending, CsvReason::RequirementsNotMet, 3),
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        1,
        3,
        false
    )]
    #[case::same_phase_new_reason_appends_without_transition(
        status(CsvPhase::Pending, CsvReason::RequirementsUnknown, 3),
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        1,
        4,
        true
    )]
    #[case::new_phase_appends_and_transitions(
        status(CsvPhase::Pending, CsvReason::RequirementsNotMet, 3),
        CsvPhase::InstallReady,
        CsvReason::AllRequirementsMet,
        50,
        4,
        true
    )]
    #[case::history_is_trimmed_to_the_newest_twenty(
        status(CsvPhase::Installing, CsvReason::InstallWaiting, 20),
        CsvPhase::Succeeded,
        CsvReason::InstallSucceeded,
        50,
        20,
        true
    )]
    #[case::an_empty_history_gets_a_condition_even_without_change(
        status(CsvPhase::Pending, CsvReason::RequirementsNotMet, 0),
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        1,
        1,
        true
    )]
    fn set_phase_follows_olm(
        #[case] mut before: ClusterServiceVersionStatus,
        #[case] phase: CsvPhase,
        #[case] reason: CsvReason,
        #[case] transition_second: i64,
        #[case] conditions: usize,
        #[case] appended: bool,
    ) {
        before.set_phase(phase.clone(), reason.clone(), "after", &at(50));
        assert_eq!(before.phase, phase);
        assert_eq!(before.reason, reason);
        assert_eq!(before.message, "after");
        assert_eq!(before.last_update_time, Some(at(50)));
        assert_eq!(before.last_transition_time, Some(at(transition_second)));
        assert_eq!(before.conditions.len(), conditions);
        let last = before.conditions.last().expect("a condition");
        let expected_message = if appended { "after" } else { "before" };
        assert_eq!(
            (&last.phase, &last.reason, last.message.as_str()),
            (&phase, &reason, expected_message)
        );
        if appended {
            // The appended condition carries the new times.
            assert_eq!(last.last_update_time, Some(at(50)));
            assert_eq!(last.last_transition_time, Some(at(transition_second)));
        }
    }

    fn csv(
        namespace: &str,
        reason: CsvReason,
        annotations: &[(&str, &str)],
        labels: &[(&str, &str)],
    ) -> ClusterServiceVersion {
        let mut csv = ClusterServiceVersion::new("a.v1", Default::default());
        csv.metadata.namespace = Some(namespace.into());
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        csv.metadata.annotations = Some(map(annotations));
        csv.metadata.labels = Some(map(labels));
        csv.status = Some(ClusterServiceVersionStatus {
            phase: CsvPhase::Succeeded,
            reason,
            ..Default::default()
        });
        csv
    }

    #[rstest]
    #[case::a_plain_csv_is_not_a_copy(csv("ns", CsvReason::InstallSucceeded, &[], &[]), false)]
    #[case::reason_copied_marks_a_copy(csv("ns", CsvReason::Copied, &[], &[]), true)]
    #[case::operator_namespace_elsewhere_marks_a_copy(
        csv("ns", CsvReason::InstallSucceeded, &[("olm.operatorNamespace", "other")], &[]), true)]
    #[case::operator_namespace_equal_to_own_is_not_a_copy(
        csv("ns", CsvReason::InstallSucceeded, &[("olm.operatorNamespace", "ns")], &[]), false)]
    #[case::copied_from_label_marks_a_copy(csv("ns", CsvReason::InstallSucceeded, &[], &[("olm.copiedFrom", "x")]), true)]
    fn is_copied_follows_olm(#[case] csv: ClusterServiceVersion, #[case] copied: bool) {
        assert_eq!(csv.is_copied(), copied);
    }

    #[rstest]
    #[case::phase_none_is_uncopiable(CsvPhase::None, CsvReason::InstallSucceeded, true)]
    #[case::succeeded_is_copiable(CsvPhase::Succeeded, CsvReason::InstallSucceeded, false)]
    #[case::no_operator_group_is_uncopiable(CsvPhase::Failed, CsvReason::NoOperatorGroup, true)]
    #[case::static_group_conflict_is_uncopiable(
        CsvPhase::Failed,
        CsvReason::CannotModifyStaticOperatorGroupProvidedApis,
        true
    )]
    #[case::a_failed_install_is_still_copiable(
        CsvPhase::Failed,
        CsvReason::InstallComponentFailed,
        false
    )]
    fn is_uncopiable_follows_olm(
        #[case] phase: CsvPhase,
        #[case] reason: CsvReason,
        #[case] uncopiable: bool,
    ) {
        let mut csv = csv("ns", reason, &[], &[]);
        if let Some(status) = csv.status.as_mut() {
            status.phase = phase;
        }
        assert_eq!(csv.is_uncopiable(), uncopiable);
    }

    #[rstest]
    #[case::no_history_is_not_obsolete(&[], false)]
    #[case::a_replaced_condition_makes_it_obsolete(&[CsvReason::InstallSucceeded, CsvReason::Replaced], true)]
    #[case::being_replaced_makes_it_obsolete(&[CsvReason::BeingReplaced], true)]
    #[case::other_reasons_do_not(&[CsvReason::InstallSucceeded, CsvReason::NeedsReinstall], false)]
    fn is_obsolete_follows_olm(#[case] reasons: &[CsvReason], #[case] obsolete: bool) {
        let mut csv = csv("ns", CsvReason::InstallSucceeded, &[], &[]);
        if let Some(status) = csv.status.as_mut() {
            status.conditions = reasons
                .iter()
                .map(|r| ClusterServiceVersionCondition {
                    reason: r.clone(),
                    ..Default::default()
                })
                .collect();
        }
        assert_eq!(csv.is_obsolete(), obsolete);
    }
}
