//! Table tests of the copy projection: what is kept, and that drift still sees edits through it.

use super::*;
use crate::copied_csv::{drift, render};
use messages::crd::csv::{ClusterServiceVersionStatus, CsvPhase, CsvReason};
use rstest::rstest;
use std::collections::BTreeMap;

fn parent() -> ClusterServiceVersion {
    let spec: ClusterServiceVersionSpec = serde_json::from_value(serde_json::json!({
        "displayName": "Etcd", "description": "x".repeat(2000), "version": "1.0.0", "replaces": "etcd.v0",
        "icon": [{"base64data": "y".repeat(4000), "mediatype": "image/png"}],
        "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "etcd-operator", "spec": {
            "selector": {"matchLabels": {"app": "etcd"}},
            "template": {"metadata": {"labels": {"app": "etcd"}}, "spec": {"containers": [{"name": "etcd", "image": "etcd"}]}}}}]}},
        "customresourcedefinitions": {"owned": [{"name": "etcds.example.com", "version": "v1", "kind": "Etcd",
            "description": "long", "specDescriptors": [{"path": "size", "displayName": "Size"}]}]}
    }))
    .expect("a valid spec");
    let mut csv = ClusterServiceVersion::new("etcd.v1", spec);
    csv.metadata.namespace = Some("operators".into());
    csv.metadata.uid = Some("uid".into());
    csv.metadata.annotations = Some(BTreeMap::from([
        ("olm.operatorGroup".to_string(), "og".to_string()),
        ("olm.operatorNamespace".to_string(), "operators".to_string()),
        ("alm-examples".to_string(), "z".repeat(3000)),
    ]));
    csv.status = Some(ClusterServiceVersionStatus {
        phase: CsvPhase::Succeeded,
        reason: CsvReason::InstallSucceeded,
        message: "done".into(),
        ..Default::default()
    });
    csv
}

fn stored_copy() -> ClusterServiceVersion {
    let mut copy = render(&parent(), "team-a");
    project(&mut copy);
    copy
}

#[test]
fn a_copy_keeps_what_its_readers_use_and_drops_the_content() {
    let copy = stored_copy();
    assert_eq!(copy.spec.version.as_deref(), Some("1.0.0"));
    assert_eq!(copy.spec.replaces.as_deref(), Some("etcd.v0"));
    let owned = copy
        .spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|d| d.owned.clone())
        .unwrap_or_default();
    assert_eq!(
        owned
            .iter()
            .map(|c| (c.name.as_str(), c.version.as_str(), c.kind.as_str()))
            .collect::<Vec<_>>(),
        vec![("etcds.example.com", "v1", "Etcd")]
    );
    assert!(
        owned
            .iter()
            .all(|c| c.spec_descriptors.is_none() && c.description.is_none())
    );
    assert!(copy.spec.icon.is_none() && copy.spec.description.is_none());
    assert!(copy.spec.install.spec.is_none());
    assert_eq!(
        copy.status.as_ref().map(|s| s.reason.clone()),
        Some(CsvReason::Copied)
    );
    let examples = copy
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("alm-examples"))
        .cloned()
        .unwrap_or_default();
    assert!(examples.len() < 40, "a long value is kept as its hash");
    let small = serde_json::to_vec(&copy)
        .map(|v| v.len())
        .unwrap_or_default();
    let whole = serde_json::to_vec(&render(&parent(), "team-a"))
        .map(|v| v.len())
        .unwrap_or_default();
    assert!(small * 10 < whole, "projected {small} bytes of {whole}");
}

#[test]
fn a_member_that_is_not_a_copy_is_kept_whole() {
    let mut csv = parent();
    project(&mut csv);
    assert_eq!(csv, parent());
}

#[test]
fn projecting_twice_changes_nothing() {
    let mut twice = stored_copy();
    project(&mut twice);
    assert_eq!(twice, stored_copy());
}

#[rstest]
#[case::an_untouched_copy_is_in_place(|_: &mut ClusterServiceVersion| {}, false, false)]
#[case::an_edited_spec_is_drift(|c: &mut ClusterServiceVersion| c.spec.display_name = "edited".into(), true, false)]
#[case::an_edited_long_annotation_is_drift(|c: &mut ClusterServiceVersion| { c.metadata.annotations.get_or_insert_with(Default::default).insert("alm-examples".into(), "w".repeat(3000)); }, true, false)]
#[case::a_removed_annotation_is_drift(|c: &mut ClusterServiceVersion| { c.metadata.annotations.get_or_insert_with(Default::default).remove("olm.operatorGroup"); }, true, false)]
#[case::an_edited_status_is_drift(|c: &mut ClusterServiceVersion| { if let Some(s) = c.status.as_mut() { s.message = "edited".into(); } }, false, true)]
fn drift_sees_edits_through_the_projection(
    #[case] edit: fn(&mut ClusterServiceVersion),
    #[case] object: bool,
    #[case] status: bool,
) {
    let wanted = render(&parent(), "team-a");
    let mut live = wanted.clone();
    edit(&mut live);
    project(&mut live);
    let d = drift(&live, &wanted);
    assert_eq!((d.object, d.status), (object, status));
}
