//! Table tests of the OperatorGroup sync decisions (spec §3.1, §3.4; scenarios 6, 14, 15, 17, 18).

use super::*;
use k8s_openapi::jiff::Timestamp;
use messages::crd::csv::{
    ClusterServiceVersionSpec, ClusterServiceVersionStatus, CrdDescription, CsvReason,
    CustomResourceDefinitions,
};
use messages::crd::operator_group::OperatorGroupSpec;
use rstest::rstest;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).expect("time"))
}

fn set(names: &[&str]) -> Targets {
    Targets::Some(names.iter().map(|s| s.to_string()).collect())
}

fn group(status: Option<(&[&str], i64)>) -> OperatorGroup {
    let mut og = OperatorGroup::new("og", OperatorGroupSpec::default());
    og.metadata.namespace = Some("op".into());
    og.status = status.map(|(ns, t)| OperatorGroupStatus {
        namespaces: Some(ns.iter().map(|s| s.to_string()).collect()),
        last_updated: Some(at(t)),
        ..Default::default()
    });
    og
}

#[rstest]
#[case::a_fresh_group_gets_its_targets_and_a_timestamp(group(None), set(&["a"]), 1, Some((vec!["a"], 100, false)))]
#[case::unchanged_targets_write_nothing(group(Some((&["a", "b"], 5))), set(&["b", "a"]), 1, None)]
#[case::new_targets_move_last_updated(group(Some((&["a"], 5))), set(&["a", "b"]), 1, Some((vec!["a", "b"], 100, false)))]
#[case::all_namespaces_is_written_as_the_empty_namespace(group(Some((&["a"], 5))), Targets::All, 1, Some((vec![""], 100, false)))]
#[case::a_second_group_in_the_namespace_adds_the_condition(group(Some((&["a"], 5))), set(&["a"]), 2, Some((vec!["a"], 5, true)))]
fn the_status_follows_targets_and_neighbours(
    #[case] og: OperatorGroup,
    #[case] targets: Targets,
    #[case] groups: usize,
    #[case] expected: Option<(Vec<&str>, i64, bool)>,
) {
    let got = status(&og, &targets, groups, &at(100));
    let got = got.map(|s| {
        let multiple = s.conditions.iter().any(|c| {
            c.type_ == "MultipleOperatorGroup"
                && c.status == "True"
                && c.reason == "MultipleOperatorGroupsFound"
        });
        (
            s.namespaces.unwrap_or_default(),
            s.last_updated.map(|t| t.0.as_second()).unwrap_or(0),
            multiple,
        )
    });
    let expected =
        expected.map(|(ns, t, m)| (ns.into_iter().map(String::from).collect::<Vec<_>>(), t, m));
    assert_eq!(got, expected);
}

#[test]
fn the_multiple_group_condition_goes_when_the_other_group_goes() {
    let mut og = group(Some((&["a"], 5)));
    og.status = status(&og, &set(&["a"]), 2, &at(6));
    assert!(
        status(&og, &set(&["a"]), 2, &at(7)).is_none(),
        "the condition is stable while two groups exist"
    );
    let after = status(&og, &set(&["a"]), 1, &at(8)).expect("a write");
    assert!(after.conditions.is_empty());
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const KEY: &str = "olm.operatorgroup.uid/u1";

#[rstest]
#[case::targeted_namespaces_get_the_label(Some(set(&["a", "b"])), vec![LabelChange::Add { namespace: "a".into(), key: KEY.into() }])]
#[case::an_untargeted_namespace_loses_the_label(Some(set(&["a"])), vec![LabelChange::Add { namespace: "a".into(), key: KEY.into() }, LabelChange::Remove { namespace: "b".into(), key: KEY.into() }])]
#[case::an_all_namespaces_group_labels_nothing(Some(Targets::All), vec![LabelChange::Remove { namespace: "b".into(), key: KEY.into() }])]
#[case::a_deleted_group_leaves_no_label(None, vec![LabelChange::Remove { namespace: "b".into(), key: KEY.into() }])]
fn namespace_labels_mark_exactly_the_targets(
    #[case] targets: Option<Targets>,
    #[case] expected: Vec<LabelChange>,
) {
    let namespaces = [
        ("a", labels(&[])),
        ("b", labels(&[(KEY, "")])),
        ("c", labels(&[("olm.operatorgroup.uid/other", "")])),
    ];
    assert_eq!(
        namespace_labels(
            "u1",
            targets.as_ref(),
            namespaces.iter().map(|(n, l)| (*n, l))
        ),
        expected
    );
}

fn csv(name: &str, kind: Option<&str>, phase: CsvPhase) -> ClusterServiceVersion {
    let mut c = ClusterServiceVersion::new(name, ClusterServiceVersionSpec::default());
    c.metadata.namespace = Some("op".into());
    if let Some(kind) = kind {
        let crd = CrdDescription {
            name: format!("{}s.birds.com", kind.to_lowercase()),
            version: "v1".into(),
            kind: kind.into(),
            ..CrdDescription::default()
        };
        c.spec.custom_resource_definitions = Some(CustomResourceDefinitions {
            owned: Some(vec![crd]),
            required: None,
        });
    }
    c.status = Some(ClusterServiceVersionStatus {
        phase,
        reason: CsvReason::None,
        ..Default::default()
    });
    c
}

fn annotated(og: &mut OperatorGroup, value: &str) {
    og.metadata.annotations = Some(BTreeMap::from([(
        "olm.providedAPIs".to_string(),
        value.to_string(),
    )]));
}

#[rstest]
#[case::apis_nobody_provides_are_pruned("Goose.v1.birds.com,Duck.v1.birds.com", false, vec![csv("g", Some("Goose"), CsvPhase::Succeeded)], Some("Goose.v1.birds.com"))]
#[case::apis_still_provided_are_kept("Goose.v1.birds.com", false, vec![csv("g", Some("Goose"), CsvPhase::Succeeded)], None)]
#[case::a_group_without_members_loses_everything("Goose.v1.birds.com", false, vec![], Some(""))]
#[case::a_static_group_is_never_pruned("Goose.v1.birds.com", true, vec![], None)]
#[case::a_pending_member_with_a_new_api_holds_the_pruning("Goose.v1.birds.com,Duck.v1.birds.com", false, vec![csv("g", Some("Goose"), CsvPhase::Succeeded), csv("s", Some("Swan"), CsvPhase::Pending)], None)]
#[case::a_pending_member_with_known_apis_does_not_hold_it("Goose.v1.birds.com,Duck.v1.birds.com", false, vec![csv("g", Some("Goose"), CsvPhase::Pending)], Some("Goose.v1.birds.com"))]
fn provided_apis_are_pruned_like_olm(
    #[case] value: &str,
    #[case] is_static: bool,
    #[case] members: Vec<ClusterServiceVersion>,
    #[case] expected: Option<&str>,
) {
    let mut og = group(Some((&["op"], 1)));
    annotated(&mut og, value);
    og.spec.static_provided_apis = Some(is_static);
    assert_eq!(
        prune(&og, members.iter()).map(|s| provided_apis::format(&s)),
        expected.map(String::from)
    );
}

#[test]
fn copies_of_members_are_ignored_when_pruning() {
    let mut og = group(Some((&["op"], 1)));
    annotated(&mut og, "Goose.v1.birds.com");
    let mut copy = csv("g", Some("Goose"), CsvPhase::Succeeded);
    copy.metadata.labels = Some(BTreeMap::from([(
        "olm.copiedFrom".to_string(),
        "elsewhere".to_string(),
    )]));
    assert_eq!(
        prune(&og, [&copy]).map(|s| provided_apis::format(&s)),
        Some(String::new())
    );
}

#[rstest]
#[case::an_unannotated_member_gets_all_three(None, true)]
#[case::a_member_with_stale_targets_is_reannotated(Some("b"), true)]
#[case::a_member_already_annotated_is_left_alone(Some("a,c"), false)]
fn members_carry_the_group_annotations(#[case] targets: Option<&str>, #[case] expected: bool) {
    let og = group(Some((&["c", "a"], 1)));
    let mut c = csv("m", None, CsvPhase::Pending);
    if let Some(t) = targets {
        c.metadata.annotations = Some(BTreeMap::from([
            ("olm.operatorGroup".to_string(), "og".to_string()),
            ("olm.operatorNamespace".to_string(), "op".to_string()),
            ("olm.targetNamespaces".to_string(), t.to_string()),
        ]));
    }
    let got = member_annotations(&og, &c);
    assert_eq!(got.is_some(), expected);
    if let Some(wanted) = got {
        assert_eq!(
            wanted.get("olm.targetNamespaces").map(String::as_str),
            Some("a,c")
        );
    }
}

#[rstest]
#[case::a_namespaced_group_copies_to_its_other_existing_targets(set(&["op", "a", "gone"]), true, &[], &["a"])]
#[case::an_all_namespaces_group_copies_everywhere_but_home(Targets::All, true, &[], &["a", "b"])]
#[case::disabled_copies_stop_an_all_namespaces_group(Targets::All, false, &[], &[])]
#[case::disabled_copies_do_not_stop_a_namespaced_group(set(&["a"]), false, &[], &["a"])]
#[case::disabled_copies_stay_in_protected_namespaces(Targets::All, false, &["b", "gone"], &["b"])]
#[case::protection_changes_nothing_while_copies_are_enabled(Targets::All, true, &["b"], &["a", "b"])]
fn copies_go_to_the_existing_targets(
    #[case] targets: Targets,
    #[case] enabled: bool,
    #[case] protected: &[&str],
    #[case] expected: &[&str],
) {
    let protected: BTreeSet<String> = protected.iter().map(|s| s.to_string()).collect();
    let got = copy_namespaces("op", &targets, enabled, &protected, ["op", "a", "b"]);
    assert_eq!(
        got,
        expected
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
}
