//! The OperatorGroup annotations (`olm.operatorGroup`, `olm.operatorNamespace`, `olm.targetNamespaces`) a CSV
//! step's CSV is created with, read from the namespace's one group and the targets olm-operator synced into its
//! status. olm-operator's CSV actor writes the same three before anything else (`csv::group_fit`): a CSV created
//! with them is not patched again (one request less per install). Where they cannot be known here (no group,
//! several, targets not synced yet) the CSV is created as the bundle has it and olm-operator annotates it, as
//! OLM does; olm-operator also corrects any value that no longer fits. Pure.

use crate::group_view::GroupView;
use messages::crd::annotations;
use std::sync::Arc;

/// The three annotations for a CSV created in `namespace`, when its one OperatorGroup has synced targets.
pub fn of(groups: &[Arc<GroupView>], namespace: &str) -> Option<[(&'static str, String); 3]> {
    let mut here = groups
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(namespace));
    let (Some(group), None) = (here.next(), here.next()) else {
        return None;
    };
    let name = group.metadata.name.clone().filter(|n| !n.is_empty())?;
    let mut targets = group.status.namespaces.clone().filter(|t| !t.is_empty())?;
    targets.sort();
    Some([
        (annotations::OPERATOR_GROUP, name),
        (annotations::OPERATOR_NAMESPACE, namespace.to_string()),
        (annotations::TARGET_NAMESPACES, targets.join(",")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_view::GroupViewStatus;
    use rstest::rstest;

    fn group(namespace: &str, name: &str, targets: Option<&[&str]>) -> Arc<GroupView> {
        let mut g = GroupView::default();
        g.metadata.namespace = Some(namespace.into());
        g.metadata.name = Some(name.into());
        g.status = GroupViewStatus {
            namespaces: targets.map(|t| t.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        Arc::new(g)
    }

    #[rstest]
    #[case::own_namespace(vec![group("ns", "og", Some(&["ns"]))], Some(("og", "ns")))]
    #[case::all_namespaces(vec![group("ns", "og", Some(&[""]))], Some(("og", "")))]
    #[case::targets_sorted(vec![group("ns", "og", Some(&["b", "a"]))], Some(("og", "a,b")))]
    #[case::a_group_of_another_namespace_does_not_count(vec![group("ns", "og", Some(&["ns"])), group("other", "og2", Some(&["other"]))], Some(("og", "ns")))]
    #[case::targets_not_synced_yet(vec![group("ns", "og", None)], None)]
    #[case::empty_targets(vec![group("ns", "og", Some(&[]))], None)]
    #[case::two_groups(vec![group("ns", "og", Some(&["ns"])), group("ns", "og2", Some(&["ns"]))], None)]
    #[case::no_group(vec![group("other", "og", Some(&["other"]))], None)]
    fn a_csv_is_created_with_its_groups_annotations_when_they_are_known(
        #[case] groups: Vec<Arc<GroupView>>,
        #[case] expected: Option<(&str, &str)>,
    ) {
        let got = of(&groups, "ns");
        let expected = expected.map(|(group, targets)| {
            [
                ("olm.operatorGroup", group.to_string()),
                ("olm.operatorNamespace", "ns".to_string()),
                ("olm.targetNamespaces", targets.to_string()),
            ]
        });
        assert_eq!(got, expected);
    }

    #[test]
    fn targets_that_do_not_decode_read_as_not_synced() {
        let g: GroupView = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "og", "namespace": "ns"},
            "status": {"namespaces": "ns", "serviceAccountRef": {"name": "sa"}}
        }))
        .expect("group");
        assert_eq!(g.status.namespaces, None);
        assert!(g.status.service_account_ref.is_some());
        assert_eq!(of(&[Arc::new(g)], "ns"), None);
    }
}
