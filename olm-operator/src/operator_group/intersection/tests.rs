//! Table tests of the intersection rules: every branch of the seed's four cases, static groups, and OLM's
//! `TestReconcileAPIIntersection` / `TestGroupIntersection` scenarios (spec §8 scenarios 1-5).

use super::*;
use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
use rstest::rstest;
use std::collections::BTreeMap;

const GOOSE: &str = "Goose.v1alpha1.birds.com";
const DUCK: &str = "Duck.v1.birds.com";

fn apis(list: &[&str]) -> ApiSet {
    list.iter().map(|s| s.to_string()).collect()
}

fn group(namespace: &str, name: &str, targets: &[&str], provided: Option<&str>) -> OperatorGroup {
    let mut og = OperatorGroup::new(name, OperatorGroupSpec::default());
    og.metadata.namespace = Some(namespace.into());
    og.status = Some(OperatorGroupStatus {
        namespaces: Some(targets.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    });
    if let Some(value) = provided {
        og.metadata.annotations = Some(BTreeMap::from([(
            "olm.providedAPIs".to_string(),
            value.to_string(),
        )]));
    }
    og
}

#[rstest]
#[case::apis_already_ours_and_nobody_else_has_them_need_nothing(&[GOOSE], &[GOOSE], &[], Reconciliation::NoApiConflict)]
#[case::apis_not_yet_ours_and_nobody_else_has_them_are_added(&[GOOSE], &[], &[], Reconciliation::AddApis)]
#[case::apis_partly_ours_and_nobody_else_has_them_are_added(&[GOOSE, DUCK], &[GOOSE], &[], Reconciliation::AddApis)]
#[case::apis_ours_that_an_intersecting_group_also_has_are_removed(&[GOOSE], &[GOOSE], &[GOOSE], Reconciliation::RemoveApis)]
#[case::apis_not_ours_that_an_intersecting_group_has_conflict(&[GOOSE], &[], &[GOOSE], Reconciliation::ApiConflict)]
#[case::one_shared_api_among_several_is_a_conflict(&[GOOSE, DUCK], &[], &[DUCK], Reconciliation::ApiConflict)]
#[case::an_intersecting_group_with_other_apis_is_no_conflict(&[GOOSE], &[], &[DUCK], Reconciliation::AddApis)]
#[case::a_csv_providing_nothing_never_conflicts(&[], &[], &[GOOSE], Reconciliation::NoApiConflict)]
fn the_four_cases_of_the_seed(
    #[case] add: &[&str],
    #[case] own: &[&str],
    #[case] others: &[&str],
    #[case] expected: Reconciliation,
) {
    assert_eq!(reconcile(&apis(add), &apis(own), &apis(others)), expected);
}

/// OLM TestReconcileAPIIntersection: g1 in `ns` targeting `ns-1`; another group in `ns-2`.
#[rstest]
#[case::same_api_in_an_intersecting_group_when_annotated_is_removed(Some(GOOSE), &["ns-1"], &[GOOSE], Reconciliation::RemoveApis)]
#[case::same_api_in_an_intersecting_group_when_unannotated_is_a_conflict(None, &["ns-1"], &[GOOSE], Reconciliation::ApiConflict)]
#[case::a_group_targeting_elsewhere_does_not_intersect(None, &["ns-2"], &[GOOSE], Reconciliation::AddApis)]
#[case::an_empty_add_is_no_conflict(Some(GOOSE), &["ns-1"], &[], Reconciliation::NoApiConflict)]
#[case::the_other_groups_own_namespace_counts_as_a_target(None, &["ns"], &[GOOSE], Reconciliation::ApiConflict)]
#[case::an_all_namespaces_group_intersects_everyone(None, &[""], &[GOOSE], Reconciliation::ApiConflict)]
fn olms_api_intersection_matrix(
    #[case] g1_annotation: Option<&str>,
    #[case] other_targets: &[&str],
    #[case] add: &[&str],
    #[case] expected: Reconciliation,
) {
    let g1 = group("ns", "g1", &["ns-1"], g1_annotation);
    let other = group("ns-2", "other", other_targets, Some(GOOSE));
    let others = apis_of_intersecting_groups(&g1, [&g1, &other]);
    assert_eq!(
        reconcile(&apis(add), &provided_apis::of_group(&g1), &others),
        expected
    );
}

#[test]
fn a_group_is_never_counted_against_itself() {
    let g1 = group("ns", "g1", &[""], Some(GOOSE));
    assert_eq!(apis_of_intersecting_groups(&g1, [&g1]), ApiSet::new());
}

#[test]
fn groups_without_a_computed_status_are_not_counted() {
    let g1 = group("ns", "g1", &["ns-1"], None);
    let mut pending = group("ns-1", "fresh", &[], Some(GOOSE));
    pending.status = None;
    assert_eq!(apis_of_intersecting_groups(&g1, [&pending]), ApiSet::new());
}

use CsvReason::{
    CannotModifyStaticOperatorGroupProvidedApis as Static,
    InterOperatorGroupOwnerConflict as Conflict,
};

#[rstest]
#[case::no_conflict_proceeds(
    Reconciliation::NoApiConflict,
    false,
    CsvReason::None,
    ApiVerdict::Proceed
)]
#[case::no_conflict_in_a_static_group_proceeds(
    Reconciliation::NoApiConflict,
    true,
    CsvReason::None,
    ApiVerdict::Proceed
)]
#[case::add_asks_the_group_to_union(Reconciliation::AddApis, false, CsvReason::None, ApiVerdict::Change(ApiChange::Add, apis(&[GOOSE])))]
#[case::remove_asks_the_group_for_the_difference(Reconciliation::RemoveApis, false, CsvReason::None, ApiVerdict::Change(ApiChange::Remove, apis(&[GOOSE])))]
#[case::add_in_a_static_group_fails(Reconciliation::AddApis, true, CsvReason::None, ApiVerdict::Fail { reason: Static, message: MSG_STATIC, write: true })]
#[case::remove_in_a_static_group_fails(Reconciliation::RemoveApis, true, CsvReason::RequirementsUnknown, ApiVerdict::Fail { reason: Static, message: MSG_STATIC, write: true })]
#[case::a_static_group_keeps_an_earlier_owner_conflict(Reconciliation::AddApis, true, Conflict, ApiVerdict::Fail { reason: Static, message: MSG_STATIC, write: false })]
#[case::a_conflict_fails_the_csv(Reconciliation::ApiConflict, false, CsvReason::None, ApiVerdict::Fail { reason: Conflict, message: MSG_CONFLICT, write: true })]
#[case::a_conflict_is_not_rewritten(Reconciliation::ApiConflict, false, Conflict, ApiVerdict::Fail { reason: Conflict, message: MSG_CONFLICT, write: false })]
#[case::a_conflict_in_a_static_group_is_a_conflict(Reconciliation::ApiConflict, true, CsvReason::None, ApiVerdict::Fail { reason: Conflict, message: MSG_CONFLICT, write: true })]
fn the_csv_acts_on_the_result_like_olm(
    #[case] result: Reconciliation,
    #[case] is_static: bool,
    #[case] reason: CsvReason,
    #[case] expected: ApiVerdict,
) {
    assert_eq!(
        verdict(result, is_static, &apis(&[GOOSE]), &reason),
        expected
    );
}

#[rstest]
#[case::a_static_group_protects_its_api_from_a_new_csv(Some(GOOSE), true, &[DUCK], "Static")]
#[case::a_static_group_lets_a_csv_providing_its_apis_proceed(Some(GOOSE), true, &[GOOSE], "Proceed")]
#[case::a_plain_group_adds_a_new_api(Some(GOOSE), false, &[DUCK], "Add")]
fn check_combines_the_rules(
    #[case] annotation: Option<&str>,
    #[case] is_static: bool,
    #[case] csv: &[&str],
    #[case] expected: &str,
) {
    let mut g = group("ns", "g", &["ns"], annotation);
    g.spec.static_provided_apis = Some(is_static);
    let got = match check(&apis(csv), &CsvReason::None, &g, [&g]) {
        ApiVerdict::Proceed => "Proceed",
        ApiVerdict::Change(ApiChange::Add, _) => "Add",
        ApiVerdict::Change(ApiChange::Remove, _) => "Remove",
        ApiVerdict::Fail { reason: Static, .. } => "Static",
        ApiVerdict::Fail { .. } => "Fail",
    };
    assert_eq!(got, expected);
}

#[rstest]
#[case::adding_is_a_union(&[GOOSE], ApiChange::Add, &[DUCK], &[DUCK, GOOSE])]
#[case::adding_what_is_there_changes_nothing(&[GOOSE], ApiChange::Add, &[GOOSE], &[GOOSE])]
#[case::removing_is_a_difference(&[GOOSE, DUCK], ApiChange::Remove, &[DUCK], &[GOOSE])]
#[case::removing_what_is_absent_changes_nothing(&[GOOSE], ApiChange::Remove, &[DUCK], &[GOOSE])]
fn changes_apply_as_set_arithmetic(
    #[case] current: &[&str],
    #[case] change: ApiChange,
    #[case] with: &[&str],
    #[case] expected: &[&str],
) {
    assert_eq!(apply(&apis(current), change, &apis(with)), apis(expected));
}
