use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use messages::crd::csv::{ClusterServiceVersionSpec, CrdDescription, CustomResourceDefinitions};
use rstest::rstest;
use std::collections::BTreeMap;

fn meta(labels: &[(&str, &str)], owner: Option<(&str, &str)>) -> ObjectMeta {
    ObjectMeta {
        name: Some("obj".into()),
        namespace: Some("ns".into()),
        labels: (!labels.is_empty()).then(|| {
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        }),
        owner_references: owner.map(|(kind, uid)| {
            vec![OwnerReference {
                kind: kind.into(),
                uid: uid.into(),
                ..OwnerReference::default()
            }]
        }),
        ..ObjectMeta::default()
    }
}

fn csv(namespace: &str, name: &str, uid: &str, crds: &[&str]) -> ClusterServiceVersion {
    let spec = ClusterServiceVersionSpec {
        custom_resource_definitions: Some(CustomResourceDefinitions {
            owned: Some(
                crds.iter()
                    .map(|n| CrdDescription {
                        name: (*n).into(),
                        ..CrdDescription::default()
                    })
                    .collect(),
            ),
            ..CustomResourceDefinitions::default()
        }),
        ..ClusterServiceVersionSpec::default()
    };
    let mut c = ClusterServiceVersion::new(name, spec);
    c.metadata.namespace = Some(namespace.into());
    c.metadata.uid = Some(uid.into());
    c
}

const LONG: &str = "a-package-whose-name-is-long-enough.a-namespace-whose-name-is-long-too";

#[rstest]
#[case::a_pending_operators_label(&[("operators.coreos.com/etcd.ns", "")], vec!["etcd.ns"])]
#[case::an_operator_not_pending(&[("operators.coreos.com/other.ns", "")], vec![])]
#[case::two_pending_operators(
    &[("operators.coreos.com/etcd.ns", ""), ("operators.coreos.com/redis.ns", ""), ("app", "x")],
    vec!["etcd.ns", "redis.ns"]
)]
#[case::a_long_name_by_its_cut_label(
    &[("operators.coreos.com/a-package-whose-name-is-long-enough.a-namespace-whose-name-is-l", "")],
    vec![LONG]
)]
#[case::no_labels(&[], vec![])]
fn pending_operators_named_by_labels(#[case] labels: &[(&str, &str)], #[case] expected: Vec<&str>) {
    let names: Vec<String> = ["etcd.ns", "redis.ns", LONG]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let pending = Pending::new(&names);
    let m = meta(labels, None);
    let mut found: Vec<&str> = pending.named_by(&m).collect();
    found.sort_unstable();
    assert_eq!(found, expected);
}

#[rstest]
#[case::an_owner_reference_to_an_adopting_csv(meta(&[], Some(("ClusterServiceVersion", "uid-1"))), vec!["etcd.ns"])]
#[case::an_owner_reference_to_another_csv(meta(&[], Some(("ClusterServiceVersion", "uid-9"))), vec![])]
#[case::an_owner_reference_of_another_kind(meta(&[], Some(("Deployment", "uid-1"))), vec![])]
#[case::olm_owner_labels(
    meta(&[("olm.owner", "etcd.v1"), ("olm.owner.namespace", "ns"), ("olm.owner.kind", "ClusterServiceVersion")], None),
    vec!["etcd.ns"]
)]
#[case::olm_owner_labels_without_a_kind(meta(&[("olm.owner", "redis.v2"), ("olm.owner.namespace", "ns")], None), vec!["redis.ns"])]
#[case::olm_owner_labels_of_an_operator_group(
    meta(&[("olm.owner", "etcd.v1"), ("olm.owner.namespace", "ns"), ("olm.owner.kind", "OperatorGroup")], None),
    vec![]
)]
#[case::olm_owner_labels_in_another_namespace(meta(&[("olm.owner", "etcd.v1"), ("olm.owner.namespace", "other")], None), vec![])]
#[case::already_labelled_for_its_operator(
    meta(&[("operators.coreos.com/etcd.ns", "")], Some(("ClusterServiceVersion", "uid-1"))),
    vec![]
)]
#[case::nothing(meta(&[], None), vec![])]
fn owners_of_an_object(#[case] m: ObjectMeta, #[case] expected: Vec<&str>) {
    let mut adopting = Adopting::default();
    adopting.add("etcd.ns", &csv("ns", "etcd.v1", "uid-1", &["a.x.io"]));
    adopting.add("redis.ns", &csv("ns", "redis.v2", "uid-2", &[]));
    assert_eq!(
        adopting.owners(&m).into_iter().collect::<Vec<_>>(),
        expected
    );
}

#[rstest]
#[case::an_owned_crd("a.x.io", meta(&[], None), vec!["etcd.ns"])]
#[case::a_crd_owned_by_two_operators("b.x.io", meta(&[], None), vec!["etcd.ns", "redis.ns"])]
#[case::labelled_for_one_of_them("b.x.io", meta(&[("operators.coreos.com/redis.ns", "")], None), vec!["etcd.ns"])]
#[case::a_crd_no_adopting_csv_owns("c.x.io", meta(&[], None), vec![])]
fn owners_of_a_crd(#[case] name: &str, #[case] m: ObjectMeta, #[case] expected: Vec<&str>) {
    let mut adopting = Adopting::default();
    adopting.add(
        "etcd.ns",
        &csv("ns", "etcd.v1", "uid-1", &["a.x.io", "b.x.io"]),
    );
    adopting.add("redis.ns", &csv("ns", "redis.v2", "uid-2", &["b.x.io"]));
    assert_eq!(
        adopting
            .crd_owners(name, &m)
            .into_iter()
            .collect::<Vec<_>>(),
        expected
    );
}

#[test]
fn nothing_adopting_owns_nothing() {
    let adopting = Adopting::default();
    assert!(adopting.is_empty());
    assert!(
        adopting
            .owners(&meta(&[], Some(("ClusterServiceVersion", "uid-1"))))
            .is_empty()
    );
}
