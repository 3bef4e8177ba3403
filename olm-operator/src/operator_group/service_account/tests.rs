//! Table tests of the group's service-account status.

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use rstest::rstest;

fn at(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH))
}

fn sa(name: &str, labels: &[(&str, &str)]) -> ServiceAccount {
    ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("op".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("7".into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn not_found(name: &str, at_secs: i64) -> Condition {
    Condition {
        type_: "OperatorGroupServiceAccount".into(),
        status: "True".into(),
        reason: "ServiceAccountNotFound".into(),
        message: format!("ServiceAccount {name} not found"),
        last_transition_time: at(at_secs),
        observed_generation: None,
    }
}

fn status(reference: Option<ObjectReference>, conditions: Vec<Condition>) -> OperatorGroupStatus {
    OperatorGroupStatus {
        namespaces: Some(vec!["op".into()]),
        service_account_ref: reference,
        last_updated: Some(at(1)),
        conditions,
    }
}

#[rstest]
#[case::no_name_is_unset(None, None, Account::Unset)]
#[case::an_empty_name_is_unset(Some(""), None, Account::Unset)]
#[case::a_name_without_its_account_is_missing(Some("sa"), None, Account::Missing("sa".into()))]
#[case::a_name_with_its_account_is_found(Some("sa"), Some(sa("sa", &[])), Account::Found(reference(&sa("sa", &[]))))]
fn the_account_is_classified_from_the_spec_and_the_store(
    #[case] name: Option<&str>,
    #[case] found: Option<ServiceAccount>,
    #[case] expected: Account,
) {
    assert_eq!(Account::of(name, found.as_ref()), expected);
}

#[test]
fn the_reference_leaves_out_the_resource_version() {
    let r = reference(&sa("sa", &[]));
    assert_eq!(r.kind.as_deref(), Some("ServiceAccount"));
    assert_eq!(r.uid.as_deref(), Some("uid-sa"));
    assert_eq!(r.resource_version, None);
}

#[rstest]
#[case::an_unlabelled_account_needs_the_label(sa("sa", &[]), true)]
#[case::a_managed_account_does_not(sa("sa", &[("olm.managed", "true")]), false)]
fn the_account_is_labelled_managed_once(#[case] account: ServiceAccount, #[case] needed: bool) {
    assert_eq!(needs_label(&account), needed);
}

#[rstest]
#[case::a_missing_account_sets_the_condition(
    status(None, vec![]), Account::Missing("sa".into()), Some(status(None, vec![not_found("sa", 9)]))
)]
#[case::a_still_missing_account_keeps_its_transition_time(
    status(None, vec![not_found("sa", 3)]), Account::Missing("sa".into()), None
)]
#[case::an_account_that_appears_clears_the_condition_and_is_referenced(
    status(None, vec![not_found("sa", 3)]),
    Account::Found(reference(&sa("sa", &[]))),
    Some(OperatorGroupStatus { last_updated: Some(at(9)), ..status(Some(reference(&sa("sa", &[]))), vec![]) })
)]
#[case::an_account_already_referenced_changes_nothing(
    status(Some(reference(&sa("sa", &[]))), vec![]), Account::Found(reference(&sa("sa", &[]))), None
)]
#[case::clearing_the_name_clears_the_reference(
    status(Some(reference(&sa("sa", &[]))), vec![]),
    Account::Unset,
    Some(OperatorGroupStatus { last_updated: Some(at(9)), ..status(None, vec![]) })
)]
#[case::clearing_the_name_of_a_missing_account_removes_the_condition(
    status(None, vec![not_found("sa", 3)]), Account::Unset, Some(status(None, vec![]))
)]
#[case::no_account_asked_and_none_referenced_changes_nothing(status(None, vec![]), Account::Unset, None)]
fn the_status_follows_the_account(
    #[case] current: OperatorGroupStatus,
    #[case] account: Account,
    #[case] expected: Option<OperatorGroupStatus>,
) {
    assert_eq!(reconcile(&current, &account, &at(9)), expected);
}
