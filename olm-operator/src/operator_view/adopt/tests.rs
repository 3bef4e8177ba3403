use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use messages::crd::subscription::SubscriptionSpec;
use rstest::rstest;
use std::collections::BTreeMap;

fn csv() -> ClusterServiceVersion {
    let mut csv = ClusterServiceVersion::new("etcd.v1", Default::default());
    csv.metadata.namespace = Some("ns".into());
    csv.metadata.uid = Some("csv-uid".into());
    csv
}

fn meta(labels: &[(&str, &str)], owner_uid: Option<(&str, &str)>) -> ObjectMeta {
    ObjectMeta {
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        owner_references: owner_uid.map(|(kind, uid)| {
            vec![OwnerReference {
                kind: kind.into(),
                uid: uid.into(),
                ..Default::default()
            }]
        }),
        ..Default::default()
    }
}

#[rstest]
#[case::package_and_namespace("etcd", Some("ns"), Some("etcd.ns"))]
#[case::no_package("", Some("ns"), None)]
#[case::no_namespace("etcd", None, None)]
fn the_operator_of_a_subscription(
    #[case] package: &str,
    #[case] namespace: Option<&str>,
    #[case] expected: Option<&str>,
) {
    let mut sub = Subscription::new(
        "s",
        SubscriptionSpec {
            package: package.into(),
            ..Default::default()
        },
    );
    sub.metadata.namespace = namespace.map(str::to_owned);
    assert_eq!(operator_of(&sub).as_deref(), expected);
}

#[rstest]
#[case::component_labels_name_operators(&[("operators.coreos.com/etcd.ns", ""), ("app", "x")], vec!["etcd.ns"])]
#[case::two_operators(&[("operators.coreos.com/a.ns", ""), ("operators.coreos.com/b.ns", "")], vec!["a.ns", "b.ns"])]
#[case::an_empty_name_is_not_an_operator(&[("operators.coreos.com/", "")], vec![])]
#[case::no_labels(&[], vec![])]
fn operators_named_by_labels(#[case] labels: &[(&str, &str)], #[case] expected: Vec<&str>) {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(operators_named(Some(&labels)), expected);
}

#[test]
fn a_copied_csv_is_a_copy_and_an_original_is_not() {
    let mut copy = csv();
    copy.metadata.labels = Some(BTreeMap::from([(
        "olm.copiedFrom".to_owned(),
        "ns".to_owned(),
    )]));
    assert!(is_copy(&copy));
    assert!(!is_copy(&csv()));
}

#[test]
fn labelled_means_the_component_label_key_is_present() {
    assert!(is_labelled(
        &meta(&[("operators.coreos.com/etcd.ns", "")], None),
        "etcd.ns"
    ));
    assert!(!is_labelled(
        &meta(&[("operators.coreos.com/other.ns", "")], None),
        "etcd.ns"
    ));
}

#[rstest]
#[case::the_whole_cluster_keeps_every_operator(
    olm_runtime::scope::Scope::Cluster,
    "etcd.anywhere",
    true
)]
#[case::a_package_in_a_watched_namespace(olm_runtime::scope::Scope::Namespaces(vec!["ns".into()]), "etcd.ns", true)]
#[case::a_package_in_another_namespace(olm_runtime::scope::Scope::Namespaces(vec!["ns".into()]), "etcd.other", false)]
#[case::a_namespace_that_only_ends_like_a_watched_one(olm_runtime::scope::Scope::Namespaces(vec!["ns".into()]), "etcd.xns", false)]
#[case::a_name_that_is_only_the_namespace(olm_runtime::scope::Scope::Namespaces(vec!["ns".into()]), ".ns", false)]
fn operators_in_scope(
    #[case] scope: olm_runtime::scope::Scope,
    #[case] operator: &str,
    #[case] expected: bool,
) {
    assert_eq!(in_scope(&scope, operator), expected);
}
