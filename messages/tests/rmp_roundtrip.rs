//! Every kind survives MessagePack (`rmp_serde::to_vec_named` / `from_slice`) unchanged,
//! including statuses with timestamps, conditions and unknown reasons.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use messages::crd::csv::{CsvPhase, CsvReason, InstallModeType};
use messages::crd::install_plan::{InstallPlanPhase, Step, StepResource, StepStatus};
use messages::crd::subscription::{
    Approval, SubscriptionConditionType, SubscriptionReason, SubscriptionState,
};
use messages::crd::{
    catalog_source, olm_config, operator, operator_condition, operator_group, subscription,
};
use messages::testing::{Catsrc, Csv, Ip, Og, Sub};
use serde::Serialize;
use serde::de::DeserializeOwned;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).expect("valid"))
}

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let packed = rmp_serde::to_vec_named(value).expect("encode");
    let back: T = rmp_serde::from_slice(&packed).expect("decode");
    assert_eq!(&back, value);
    // Named encoding keeps the JSON field names, so the JSON view is unchanged too.
    assert_eq!(
        serde_json::to_value(&back).expect("json"),
        serde_json::to_value(value).expect("json")
    );
}

fn condition(type_: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: "Because".into(),
        message: "m".into(),
        last_transition_time: at(10),
        observed_generation: Some(2),
    }
}

#[test]
fn a_csv_with_deployments_crds_and_a_phase_history_round_trips() {
    let mut csv = Csv::named("a.v1")
        .in_ns("ns")
        .version("1.0.0")
        .replaces("a.v0")
        .install_modes(&[
            InstallModeType::OwnNamespace,
            InstallModeType::AllNamespaces,
        ])
        .owns_crd("widgets.example.com", "v1", "Widget")
        .requires_crd("gadgets.example.com", "v1", "Gadget")
        .deployment("a-operator", "quay.io/a/operator:1")
        .annotation("olm.skipRange", "<1.0.0")
        .build();
    csv.set_phase(
        CsvPhase::Pending,
        CsvReason::RequirementsUnknown,
        "requirements not yet checked",
        &at(1),
    );
    csv.set_phase(
        CsvPhase::Failed,
        CsvReason::Other("FromTheFuture".into()),
        "x",
        &at(2),
    );
    round_trip(&csv);
}

#[test]
fn operator_groups_of_both_versions_round_trip() {
    let og = Og::named("og")
        .in_ns("ns")
        .uid("u")
        .targets(&["a", "b"])
        .status_namespaces(&["a", "b"])
        .build();
    round_trip(&og);
    let mut with_conditions = og.clone();
    if let Some(status) = with_conditions.status.as_mut() {
        status.last_updated = Some(at(5));
        status.conditions = vec![condition("MultipleOperatorGroup")];
    }
    round_trip(&with_conditions);
    let v1alpha2: operator_group::v1alpha2::OperatorGroup = serde_json::from_value(
        serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha2", "kind": "OperatorGroup",
            "metadata": {"name": "og"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}}),
    )
    .expect("v1alpha2");
    round_trip(&v1alpha2);
}

#[test]
fn a_subscription_with_a_full_status_round_trips() {
    let mut sub = Sub::named("s")
        .in_ns("ns")
        .package("etcd")
        .channel("alpha")
        .source("cat", "olm")
        .approval(Approval::Manual)
        .build();
    let mut status = subscription::SubscriptionStatus {
        current_csv: "etcd.v2".into(),
        installed_csv: "etcd.v1".into(),
        state: SubscriptionState::UpgradePending,
        install_plan: Some(subscription::InstallPlanReference {
            api_version: "operators.coreos.com/v1alpha1".into(),
            kind: "InstallPlan".into(),
            name: "install-x".into(),
            uuid: "u".into(),
        }),
        last_updated: Some(at(9)),
        ..Default::default()
    };
    status.set_condition(subscription::SubscriptionCondition {
        type_: SubscriptionConditionType::InstallPlanPending,
        status: "True".into(),
        reason: SubscriptionReason::RequiresApproval,
        message: String::new(),
        last_heartbeat_time: None,
        last_transition_time: Some(at(3)),
    });
    sub.status = Some(status);
    round_trip(&sub);
}

#[test]
fn an_install_plan_with_steps_round_trips() {
    let mut ip = Ip::named("install-x")
        .in_ns("ns")
        .csvs(&["a.v1"])
        .approval(Approval::Manual, true)
        .phase(InstallPlanPhase::Complete)
        .build();
    if let Some(status) = ip.status.as_mut() {
        status.catalog_sources = vec!["cat".into()];
        status.plan = vec![Step {
            resolving: "a.v1".into(),
            resource: StepResource {
                source_name: "cat".into(),
                source_namespace: "olm".into(),
                group: "operators.coreos.com".into(),
                version: "v1alpha1".into(),
                kind: "ClusterServiceVersion".into(),
                name: "a.v1".into(),
                manifest: "{\"kind\":\"ClusterServiceVersion\"}".into(),
            },
            optional: false,
            status: StepStatus::Created,
        }];
        status.start_time = Some(at(4));
    }
    round_trip(&ip);
}

#[test]
fn a_catalog_source_with_status_round_trips() {
    let mut cs = Catsrc::named("cat")
        .in_ns("olm")
        .image("quay.io/x/catalog:latest")
        .poll("10m")
        .priority(-100)
        .build();
    cs.status = Some(catalog_source::CatalogSourceStatus {
        connection_state: Some(catalog_source::GrpcConnectionStatus {
            address: "cat.olm.svc:50051".into(),
            last_observed_state: catalog_source::GrpcConnectionState::Ready,
            last_connect: Some(at(7)),
        }),
        latest_image_registry_poll: Some(at(8)),
        conditions: vec![condition("Ready")],
        ..Default::default()
    });
    round_trip(&cs);
}

#[test]
fn cluster_scoped_kinds_and_operator_conditions_round_trip() {
    let config: olm_config::OLMConfig = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
        "spec": {"features": {"disableCopiedCSVs": true, "packageServerSyncInterval": "5m"}},
        "status": {"conditions": [{"type": "DisabledCopiedCSVs", "status": "True", "reason": "CopiedCSVsDisabled",
            "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    .expect("olmconfig");
    round_trip(&config);
    let op: operator::Operator = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "Operator", "metadata": {"name": "etcd.ns"}, "spec": {},
        "status": {"components": {"labelSelector": {"matchExpressions": [{"key": "operators.coreos.com/etcd.ns", "operator": "Exists"}]},
            "refs": [{"apiVersion": "v1", "kind": "ServiceAccount", "name": "sa", "namespace": "ns",
                "conditions": [{"type": "Ready", "status": "True"}]}]}}}))
    .expect("operator");
    round_trip(&op);
    let oc = operator_condition::OperatorCondition::new(
        "a.v1",
        operator_condition::OperatorConditionSpec {
            service_accounts: vec!["sa".into()],
            deployments: vec!["a-operator".into()],
            overrides: vec![operator_condition::ConditionOverride {
                type_: "Upgradeable".into(),
                status: "True".into(),
                reason: "Admin".into(),
                message: "go".into(),
                last_transition_time: None,
                observed_generation: None,
            }],
            conditions: vec![condition("Upgradeable")],
        },
    );
    round_trip(&oc);
    let oc_v1: operator_condition::v1::OperatorCondition = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorCondition", "metadata": {"name": "a.v1"},
        "spec": {"deployments": ["d"]}}))
    .expect("v1");
    round_trip(&oc_v1);
}
