//! Table tests of the OperatorCondition decisions.

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use messages::crd::operator_condition::ConditionOverride;
use rstest::rstest;
use serde_json::json;

fn condition(status: &str, message: &str, observed: Option<i64>) -> Condition {
    Condition {
        type_: UPGRADEABLE.into(),
        status: status.into(),
        reason: "Test".into(),
        message: message.into(),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        observed_generation: observed,
    }
}

/// An admin's override as admins write it: no `lastTransitionTime`.
fn r#override(status: &str, message: &str) -> ConditionOverride {
    ConditionOverride {
        type_: UPGRADEABLE.into(),
        status: status.into(),
        reason: "Admin".into(),
        message: message.into(),
        last_transition_time: None,
        observed_generation: None,
    }
}

fn oc(
    overrides: Vec<ConditionOverride>,
    status: Vec<Condition>,
    generation: i64,
) -> OperatorCondition {
    let mut oc = OperatorCondition::new(
        "a.v1",
        OperatorConditionSpec {
            overrides,
            ..Default::default()
        },
    );
    oc.metadata.generation = Some(generation);
    oc.status = Some(OperatorConditionStatus { conditions: status });
    oc
}

#[rstest]
#[case::no_operator_condition_is_upgradeable(None, Ok(()))]
#[case::no_upgradeable_condition_is_upgradeable(Some(oc(vec![], vec![], 1)), Ok(()))]
#[case::upgradeable_false_blocks(Some(oc(vec![], vec![condition("False", "migrating", Some(2))], 2)), Err("migrating".to_string()))]
#[case::upgradeable_true_passes(Some(oc(vec![], vec![condition("True", "", Some(2))], 2)), Ok(()))]
#[case::an_override_true_wins_over_false(Some(oc(vec![r#override("True", "")], vec![condition("False", "migrating", Some(2))], 2)), Ok(()))]
#[case::an_override_false_blocks(Some(oc(vec![r#override("False", "admin says no")], vec![], 1)), Err("admin says no".to_string()))]
#[case::a_stale_condition_blocks(Some(oc(vec![], vec![condition("True", "", Some(1))], 2)), Err("the Upgradeable condition is stale (observed generation Some(1), current Some(2))".to_string()))]
fn the_upgradeable_gate_follows_olm(
    #[case] oc: Option<OperatorCondition>,
    #[case] expected: Result<(), String>,
) {
    assert_eq!(gate(oc.as_ref()), expected);
}

fn csv(strategy: serde_json::Value) -> ClusterServiceVersion {
    let mut csv: ClusterServiceVersion = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "a.v1", "namespace": "ns", "uid": "u1"},
        "spec": {"install": {"strategy": "deployment", "spec": strategy}}
    }))
    .unwrap_or_else(|_| ClusterServiceVersion::new("broken", Default::default()));
    csv.metadata.namespace = Some("ns".into());
    csv
}

#[test]
fn the_spec_lists_cluster_accounts_then_namespaced_ones_once_and_the_deployments() {
    let c = csv(json!({
        "clusterPermissions": [{"serviceAccountName": "cluster-sa", "rules": []}],
        "permissions": [{"serviceAccountName": "ns-sa", "rules": []}, {"serviceAccountName": "cluster-sa", "rules": []}],
        "deployments": [{"name": "op", "spec": {"selector": {}, "template": {}}}]
    }));
    let spec = desired_spec(&c);
    assert_eq!(spec.service_accounts, ["cluster-sa", "ns-sa"]);
    assert_eq!(spec.deployments, ["op"]);
    let (role, binding) = access(&c, &spec).expect("a persisted csv");
    let rule = &role.rules.unwrap_or_default()[0];
    assert_eq!(
        rule.resource_names.as_deref(),
        Some(&["a.v1".to_string()][..])
    );
    assert_eq!(rule.verbs, ["get", "update", "patch"]);
    assert_eq!(binding.subjects.map(|s| s.len()), Some(2));
}

#[test]
fn a_strategy_without_accounts_uses_default() {
    assert_eq!(
        desired_spec(&csv(json!({"deployments": []}))).service_accounts,
        ["default"]
    );
}

#[test]
fn the_status_copies_the_spec_conditions_with_their_generation_once() {
    let mut o = oc(vec![], vec![], 3);
    o.spec.conditions = vec![condition("False", "migrating", None)];
    let update = status_update(&o).expect("an update");
    assert_eq!(update.conditions[0].observed_generation, Some(3));
    o.status = Some(update);
    assert_eq!(status_update(&o), None);
}
