//! Table tests of copied CSVs: rendering, drift and garbage collection (spec §2.7, scenarios 14-16).

use super::*;
use messages::crd::csv::ClusterServiceVersionSpec;
use rstest::rstest;

fn parent() -> ClusterServiceVersion {
    let mut csv = ClusterServiceVersion::new(
        "etcd.v1",
        ClusterServiceVersionSpec {
            version: Some("1.0.0".into()),
            ..Default::default()
        },
    );
    csv.metadata.namespace = Some("operators".into());
    csv.metadata.annotations = Some(BTreeMap::from([
        ("olm.targetNamespaces".to_string(), "".to_string()),
        ("olm.operatorNamespace".to_string(), "operators".to_string()),
        ("olm.operatorGroup".to_string(), "og".to_string()),
        (
            "kubectl.kubernetes.io/last-applied-configuration".to_string(),
            "{}".to_string(),
        ),
        ("keep".to_string(), "me".to_string()),
    ]));
    csv.metadata.labels = Some(BTreeMap::from([
        (
            "operators.coreos.com/etcd.operators".to_string(),
            "".to_string(),
        ),
        ("app".to_string(), "etcd".to_string()),
    ]));
    csv.metadata.uid = Some("uid".into());
    csv.metadata.resource_version = Some("7".into());
    csv.status = Some(ClusterServiceVersionStatus {
        phase: CsvPhase::Succeeded,
        reason: CsvReason::InstallSucceeded,
        message: "done".into(),
        ..Default::default()
    });
    csv
}

#[test]
fn a_copy_keeps_name_and_spec_and_drops_what_olm_drops() {
    let copy = render(&parent(), "tenant");
    assert_eq!(copy.metadata.name.as_deref(), Some("etcd.v1"));
    assert_eq!(copy.metadata.namespace.as_deref(), Some("tenant"));
    assert_eq!(copy.spec, parent().spec);
    let annotations = copy.metadata.annotations.clone().unwrap_or_default();
    assert!(!annotations.contains_key("olm.targetNamespaces"));
    assert!(!annotations.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
    assert_eq!(
        annotations.get("olm.operatorNamespace").map(String::as_str),
        Some("operators")
    );
    assert_eq!(annotations.get("keep").map(String::as_str), Some("me"));
    let labels = copy.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("olm.copiedFrom").map(String::as_str),
        Some("operators")
    );
    assert_eq!(labels.get("app").map(String::as_str), Some("etcd"));
    assert!(!labels.contains_key("operators.coreos.com/etcd.operators"));
    assert!(copy.metadata.uid.is_none() && copy.metadata.resource_version.is_none());
    let status = copy.status.clone().expect("status");
    assert_eq!(
        (status.phase, status.reason),
        (CsvPhase::Succeeded, CsvReason::Copied)
    );
    assert_eq!(
        status.message,
        "The operator is running in operators but is managing this namespace"
    );
    assert!(copy.is_copied());
}

#[rstest]
#[case::an_identical_copy_needs_nothing(|_c: &mut ClusterServiceVersion| {}, Drift { object: false, status: false })]
#[case::extra_labels_on_the_copy_are_tolerated(|c: &mut ClusterServiceVersion| { c.metadata.labels.get_or_insert_default().insert("x".into(), "y".into()); }, Drift { object: false, status: false })]
#[case::a_changed_spec_is_object_drift(|c: &mut ClusterServiceVersion| c.spec.version = Some("9.9.9".into()), Drift { object: true, status: false })]
#[case::a_missing_copied_from_label_is_object_drift(|c: &mut ClusterServiceVersion| { c.metadata.labels = None; }, Drift { object: true, status: false })]
#[case::a_target_namespaces_annotation_on_the_copy_is_object_drift(|c: &mut ClusterServiceVersion| { c.metadata.annotations.get_or_insert_default().insert("olm.targetNamespaces".into(), "a".into()); }, Drift { object: true, status: false })]
#[case::a_different_phase_is_status_drift(|c: &mut ClusterServiceVersion| { if let Some(s) = c.status.as_mut() { s.phase = CsvPhase::Installing; } }, Drift { object: false, status: true })]
fn drift_is_found_where_it_is(
    #[case] edit: fn(&mut ClusterServiceVersion),
    #[case] expected: Drift,
) {
    let wanted = render(&parent(), "tenant");
    let mut existing = wanted.clone();
    edit(&mut existing);
    assert_eq!(drift(&existing, &wanted), expected);
}

fn failed(reason: CsvReason) -> ClusterServiceVersion {
    let mut p = parent();
    p.status = Some(ClusterServiceVersionStatus {
        phase: CsvPhase::Failed,
        reason,
        ..Default::default()
    });
    p
}

#[rstest]
#[case::a_copy_of_a_live_targeted_parent_stays(Some(parent()), true, None)]
#[case::a_copy_whose_parent_is_gone_goes(None, true, Some(Dangling::ParentMissing))]
#[case::a_copy_of_a_conflicting_parent_goes(
    Some(failed(CsvReason::InterOperatorGroupOwnerConflict)),
    true,
    Some(Dangling::ParentFailed)
)]
#[case::a_copy_of_a_parent_failed_otherwise_stays(
    Some(failed(CsvReason::ComponentUnhealthy)),
    true,
    None
)]
#[case::a_copy_in_a_namespace_no_longer_targeted_goes(
    Some(parent()),
    false,
    Some(Dangling::NotTargeted)
)]
fn dangling_copies_are_collected(
    #[case] parent_csv: Option<ClusterServiceVersion>,
    #[case] wanted: bool,
    #[case] expected: Option<Dangling>,
) {
    let copy = render(&parent(), "tenant");
    assert_eq!(dangling(&copy, parent_csv.as_ref(), wanted), expected);
}

#[test]
fn a_copy_without_operator_namespace_or_in_the_parents_namespace_goes() {
    let mut copy = render(&parent(), "tenant");
    copy.metadata.annotations = None;
    assert_eq!(
        dangling(&copy, Some(&parent()), true),
        Some(Dangling::NoOperatorNamespace)
    );
    let same = render(&parent(), "operators");
    assert_eq!(
        dangling(&same, Some(&parent()), true),
        Some(Dangling::SameNamespace)
    );
}

#[rstest]
#[case::a_succeeded_member_is_copied(parent(), true)]
#[case::a_member_without_phase_is_not_copied({ let mut p = parent(); p.status = None; p }, false)]
#[case::a_member_unsupported_by_its_group_is_not_copied(
    failed(CsvReason::UnsupportedOperatorGroup),
    false
)]
#[case::a_copy_is_not_copied_again(render(&parent(), "tenant"), false)]
fn only_fitting_members_are_copied(#[case] csv: ClusterServiceVersion, #[case] expected: bool) {
    assert_eq!(is_copyable(&csv), expected);
}
