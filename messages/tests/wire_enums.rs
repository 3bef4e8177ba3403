//! Every wire-string enum: each known variant round-trips through JSON and MessagePack with
//! OLM's exact string, and an unknown string is kept verbatim instead of failing.

use messages::crd::catalog_source::{
    CatalogSourceReason, GrpcConnectionState, SecurityConfig, SourceType,
};
use messages::crd::csv::{
    CsvPhase, CsvReason, InstallModeType, RequirementStatusReason, WebhookAdmissionType,
};
use messages::crd::install_plan::{
    BundleLookupConditionType, InstallPlanConditionReason, InstallPlanConditionType,
    InstallPlanPhase, StepStatus,
};
use messages::crd::olm_config::{OlmConfigConditionReason, OlmConfigConditionType};
use messages::crd::operator_group::{
    OperatorGroupConditionReason, OperatorGroupConditionType, UpgradeStrategyName,
};
use messages::crd::subscription::{
    Approval, SubscriptionConditionType, SubscriptionReason, SubscriptionState,
};
use rstest::rstest;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Checks every known variant and one unknown string; returns the wire strings seen.
fn round_trips<T>(known: &[T], as_str: fn(&T) -> &str, from_wire: fn(&str) -> T) -> Vec<String>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Clone,
{
    let mut wires = Vec::new();
    for variant in known {
        let json = serde_json::to_value(variant).expect("to JSON");
        assert_eq!(
            json,
            serde_json::Value::from(as_str(variant)),
            "{variant:?} is written as its wire string"
        );
        let back: T = serde_json::from_value(json).expect("from JSON");
        assert_eq!(&back, variant);
        let packed = rmp_serde::to_vec_named(variant).expect("to MessagePack");
        let unpacked: T = rmp_serde::from_slice(&packed).expect("from MessagePack");
        assert_eq!(&unpacked, variant);
        assert_eq!(&from_wire(as_str(variant)), variant);
        wires.push(as_str(variant).to_owned());
    }
    let unknown: T = serde_json::from_value(serde_json::json!("SomethingNewFromTheCluster"))
        .expect("unknown reads");
    assert_eq!(as_str(&unknown), "SomethingNewFromTheCluster");
    assert_eq!(
        serde_json::to_value(&unknown).expect("to JSON"),
        serde_json::json!("SomethingNewFromTheCluster")
    );
    wires
}

macro_rules! wires {
    ($t:ty) => {
        round_trips::<$t>(<$t>::KNOWN, <$t>::as_str, <$t>::from_wire)
    };
}

#[rstest]
#[case::csv_phases(wires!(CsvPhase), &["", "Pending", "InstallReady", "Installing", "Succeeded", "Failed", "Unknown", "Replacing", "Deleting"])]
#[case::csv_reasons_include_the_odd_spellings(wires!(CsvReason), &["", "RequirementsUnknown", "RequirementsNotMet", "AllRequirementsMet", "OwnerConflict", "InstallComponentFailed", "InstallComponentFailedNoRetry", "InvalidInstallStrategy", "InstallWaiting", "InstallSucceeded", "InstallCheckFailed", "ComponentUnhealthy", "BeingReplaced", "Replaced", "NeedsReinstall", "NeedsCertRotation", "APIServiceResourceIssue", "APIServiceResourcesNeedReinstall", "APIServiceInstallFailed", "Copied", "InvalidInstallModes", "NoTargetNamespaces", "UnsupportedOperatorGroup", "NoOperatorGroup", "TooManyOperatorGroups", "InterOperatorGroupOwnerConflict", "CannotModifyStaticOperatorGroupProvidedAPIs", "DetectedClusterChange", "InvalidWebhookDescription", "OperatorConditionNotUpgradeable", "WaitingOnCleanup"])]
#[case::requirement_statuses(wires!(RequirementStatusReason), &["Present", "NotPresent", "PresentNotSatisfied", "PresentNotAvailable", "Satisfied", "NotSatisfied", "DeploymentFound", "DeploymentNotFound"])]
#[case::install_mode_types(wires!(InstallModeType), &["OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"])]
#[case::webhook_types(wires!(WebhookAdmissionType), &["ValidatingAdmissionWebhook", "MutatingAdmissionWebhook", "ConversionWebhook"])]
#[case::catalog_source_types_are_lower_case(wires!(SourceType), &["grpc", "configmap", "internal"])]
#[case::catalog_security_configs(wires!(SecurityConfig), &["legacy", "restricted"])]
#[case::catalog_source_reasons(wires!(CatalogSourceReason), &["", "SpecInvalidError", "ConfigMapError", "RegistryServerError", "InvalidIntervalError"])]
#[case::grpc_states_are_upper_case(wires!(GrpcConnectionState), &["IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN"])]
#[case::approvals(wires!(Approval), &["Automatic", "Manual"])]
#[case::subscription_states(wires!(SubscriptionState), &["", "UpgradeFailed", "UpgradeAvailable", "UpgradePending", "AtLatestKnown"])]
#[case::subscription_condition_types(wires!(SubscriptionConditionType), &["CatalogSourcesUnhealthy", "InstallPlanMissing", "InstallPlanPending", "InstallPlanFailed", "ResolutionFailed", "BundleUnpacking", "BundleUnpackFailed", "Deprecated", "PackageDeprecated", "ChannelDeprecated", "BundleDeprecated"])]
#[case::subscription_reasons(wires!(SubscriptionReason), &["", "NoCatalogSourcesFound", "AllCatalogSourcesHealthy", "CatalogSourcesAdded", "CatalogSourcesUpdated", "CatalogSourcesDeleted", "UnhealthyCatalogSourceFound", "ReferencedInstallPlanNotFound", "InstallPlanNotYetReconciled", "InstallPlanFailed", "InvalidCatalog", "UpgradeSucceeded", "RequiresApproval", "Installing", "InstallComponentFailed", "InstallCheckFailed", "ConstraintsNotSatisfiable", "ErrorPreventedResolution", "UnpackingInProgress", "BundleUnpackFailed"])]
#[case::install_plan_phases(wires!(InstallPlanPhase), &["", "Planning", "RequiresApproval", "Installing", "Complete", "Failed"])]
#[case::install_plan_condition_types(wires!(InstallPlanConditionType), &["Resolved", "Installed"])]
#[case::install_plan_condition_reasons(wires!(InstallPlanConditionReason), &["", "PlanUnknown", "InstallCheckFailed", "DependenciesConflict", "InstallComponentFailed"])]
#[case::step_statuses(wires!(StepStatus), &["Unknown", "NotPresent", "Present", "Created", "NotCreated", "WaitingForApi", "UnsupportedResource"])]
#[case::bundle_lookup_condition_types(wires!(BundleLookupConditionType), &["BundleLookupPending", "BundleLookupFailed", "BundleLookupNotPersisted"])]
#[case::upgrade_strategies(wires!(UpgradeStrategyName), &["Default", "TechPreviewUnsafeFailForward"])]
#[case::operator_group_condition_types(wires!(OperatorGroupConditionType), &["OperatorGroupServiceAccount", "MultipleOperatorGroup"])]
#[case::operator_group_condition_reasons(wires!(OperatorGroupConditionReason), &["ServiceAccountNotFound", "MultipleOperatorGroupsFound"])]
#[case::olm_config_condition_types(wires!(OlmConfigConditionType), &["DisabledCopiedCSVs"])]
#[case::olm_config_condition_reasons(wires!(OlmConfigConditionReason), &["CopiedCSVsEnabled", "CopiedCSVsDisabled"])]
fn every_variant_round_trips_with_olms_wire_string(
    #[case] seen: Vec<String>,
    #[case] expected: &[&str],
) {
    assert_eq!(seen, expected);
}

#[test]
fn an_unknown_reason_inside_a_csv_status_does_not_fail_decoding() {
    let status: messages::crd::csv::ClusterServiceVersionStatus = serde_json::from_value(
        serde_json::json!({"phase": "Succeeded", "reason": "BrandNewReason"}),
    )
    .expect("decodes");
    assert_eq!(status.phase, CsvPhase::Succeeded);
    assert_eq!(status.reason, CsvReason::Other("BrandNewReason".into()));
    assert_eq!(
        serde_json::to_value(&status).expect("encodes")["reason"],
        "BrandNewReason"
    );
}
