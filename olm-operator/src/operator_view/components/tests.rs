use super::*;
use messages::crd::csv::{ClusterServiceVersionStatus, CsvPhase, CsvReason};
use rstest::rstest;

fn c(kind: &str, api_version: &str, namespace: Option<&str>, name: &str) -> Component {
    Component {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: namespace.map(str::to_owned),
        name: name.into(),
        conditions: Vec::new(),
    }
}

fn order(status: &OperatorStatus) -> Vec<String> {
    status
        .components
        .as_ref()
        .map(|c| {
            c.refs
                .iter()
                .map(|r| {
                    format!(
                        "{}/{}/{}/{}",
                        r.object.kind.as_deref().unwrap_or_default(),
                        r.object.api_version.as_deref().unwrap_or_default(),
                        r.object.namespace.as_deref().unwrap_or_default(),
                        r.object.name.as_deref().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[rstest]
#[case::sorted_by_kind_then_api_version_namespace_name(
    vec![c("Deployment", "apps/v1", Some("b"), "x"), c("ClusterServiceVersion", "operators.coreos.com/v1alpha1", Some("a"), "y"),
         c("Deployment", "apps/v1", Some("a"), "z"), c("Deployment", "apps/v1", Some("a"), "a")],
    vec!["ClusterServiceVersion/operators.coreos.com/v1alpha1/a/y", "Deployment/apps/v1/a/a", "Deployment/apps/v1/a/z",
         "Deployment/apps/v1/b/x"])]
#[case::cluster_scoped_objects_sort_before_namespaced_ones_of_their_kind(
    vec![c("Role", "rbac.authorization.k8s.io/v1", Some("ns"), "r"), c("Role", "rbac.authorization.k8s.io/v1", None, "r")],
    vec!["Role/rbac.authorization.k8s.io/v1//r", "Role/rbac.authorization.k8s.io/v1/ns/r"])]
#[case::an_object_seen_twice_is_listed_once(
    vec![c("Subscription", "operators.coreos.com/v1alpha1", Some("ns"), "s"), c("Subscription", "operators.coreos.com/v1alpha1", Some("ns"), "s")],
    vec!["Subscription/operators.coreos.com/v1alpha1/ns/s"])]
#[case::nothing_labelled_gives_no_refs(vec![], vec![])]
fn refs_follow_olms_order(#[case] found: Vec<Component>, #[case] expected: Vec<&str>) {
    let status = status("etcd.ns", found);
    assert_eq!(order(&status), expected);
    let selector = status.components.and_then(|c| c.label_selector);
    assert_eq!(selector, Some(super::selector("etcd.ns")));
}

#[test]
fn the_selector_is_the_component_label_exists() {
    let s = selector("etcd.ns");
    let e = &s.match_expressions.unwrap_or_default()[0];
    assert_eq!(
        (e.key.as_str(), e.operator.as_str(), &e.values),
        ("operators.coreos.com/etcd.ns", "Exists", &None)
    );
}

#[rstest]
#[case::a_succeeded_csv_is_one_true_condition_named_after_its_phase(
    Some(ClusterServiceVersionStatus { phase: CsvPhase::Succeeded, reason: CsvReason::InstallSucceeded, message: "done".into(), ..Default::default() }),
    vec![("Succeeded", "True", "InstallSucceeded", "done")])]
#[case::no_status_no_condition(None, vec![])]
fn csv_conditions_are_its_phase(
    #[case] status: Option<ClusterServiceVersionStatus>,
    #[case] expected: Vec<(&str, &str, &str, &str)>,
) {
    let got: Vec<_> = csv_conditions(status.as_ref())
        .into_iter()
        .map(|c| (c.type_, c.status, c.reason, c.message))
        .collect();
    let expected: Vec<_> = expected
        .into_iter()
        .map(|(a, b, c, d)| (a.to_owned(), b.to_owned(), c.to_owned(), d.to_owned()))
        .collect();
    assert_eq!(got, expected);
}

#[rstest]
#[case::conditions_are_copied(r#"{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"}]}"#, vec!["Available"])]
#[case::an_entry_that_does_not_decode_is_left_out(r#"{"conditions":[{"status":"True"},{"type":"Progressing","status":"False"}]}"#, vec!["Progressing"])]
#[case::conditions_that_are_not_a_list_give_none(r#"{"conditions":"oops"}"#, vec![])]
#[case::no_conditions_give_none(r#"{}"#, vec![])]
fn generic_conditions_are_read_leniently(#[case] status: &str, #[case] expected: Vec<&str>) {
    let value: serde_json::Value = serde_json::from_str(status).unwrap_or_default();
    let got: Vec<String> = generic_conditions(Some(&value))
        .into_iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(got, expected);
}

fn stored(status: Option<OperatorStatus>) -> Operator {
    let mut o = Operator::new("etcd.ns", messages::crd::operator::OperatorSpec {});
    o.status = status;
    o
}

fn one_subscription(condition_status: &str) -> OperatorStatus {
    let mut sub = c(
        "Subscription",
        "operators.coreos.com/v1alpha1",
        Some("ns"),
        "etcd",
    );
    sub.conditions = vec![OperatorComponentCondition {
        type_: "CatalogSourcesUnhealthy".into(),
        status: condition_status.into(),
        ..Default::default()
    }];
    status("etcd.ns", vec![sub])
}

#[rstest]
#[case::absent_without_components_is_not_created(None, status("etcd.ns", vec![]), Write::Nothing)]
#[case::absent_with_components_is_created(None, one_subscription("False"), Write::Create)]
#[case::stored_with_the_same_status_is_left_alone(
    Some(stored(Some(one_subscription("False")))),
    one_subscription("False"),
    Write::Nothing
)]
#[case::a_component_condition_that_flipped_is_written(
    Some(stored(Some(one_subscription("False")))),
    one_subscription("True"),
    Write::Status
)]
#[case::stored_without_status_is_written(
    Some(stored(None)),
    one_subscription("False"),
    Write::Status
)]
#[case::stored_components_that_are_gone_are_written(
    Some(stored(Some(one_subscription("False")))),
    status("etcd.ns", vec![]),
    Write::Status
)]
fn only_a_difference_is_written(
    #[case] existing: Option<Operator>,
    #[case] computed: OperatorStatus,
    #[case] expected: Write,
) {
    assert_eq!(write(existing.as_ref(), &computed), expected);
}
