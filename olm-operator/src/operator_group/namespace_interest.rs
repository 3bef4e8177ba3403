//! Which namespace events a group syncs for. Every change of a namespace reaches every group's actor, and a sync
//! reads every namespace of the cluster: with 1,000 groups beside 10,000 namespaces, one new namespace cost ten
//! million label reads (a new install 1.9 s instead of 0.2 s). A group syncs only for a namespace that can change
//! what it decides: its own (sibling groups, deletion), any namespace when it selects by labels or targets all
//! namespaces (targets and copies), a namespace its spec names, and one its status lists (its labels on its
//! targets). A group not observed yet syncs for everything. Pure.

use messages::crd::operator_group::OperatorGroup;

/// Whether a change of `namespace` can change what `group` decides.
pub fn cares(group: &OperatorGroup, namespace: &str) -> bool {
    let own = group.metadata.namespace.as_deref() == Some(namespace);
    let named = group
        .spec
        .target_namespaces
        .as_ref()
        .is_some_and(|t| t.iter().any(|n| n == namespace));
    let selects = group.spec.selector.as_ref().is_some_and(|s| {
        s.match_labels.as_ref().is_some_and(|l| !l.is_empty())
            || s.match_expressions.as_ref().is_some_and(|e| !e.is_empty())
    });
    let all = !selects
        && group
            .spec
            .target_namespaces
            .as_ref()
            .is_none_or(|t| t.is_empty());
    let listed = group
        .status
        .as_ref()
        .and_then(|s| s.namespaces.as_ref())
        .is_some_and(|n| n.iter().any(|t| t == namespace || t.is_empty()));
    own || named || selects || all || listed
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn group(targets: Option<&[&str]>, selector: bool, status: Option<&[&str]>) -> OperatorGroup {
        let mut og = OperatorGroup::new("og", OperatorGroupSpec::default());
        og.metadata.namespace = Some("home".into());
        og.spec.target_namespaces = targets.map(|t| t.iter().map(|s| s.to_string()).collect());
        og.spec.selector = selector.then(|| LabelSelector {
            match_labels: Some(BTreeMap::from([("team".to_string(), "a".to_string())])),
            ..Default::default()
        });
        og.status = status.map(|n| OperatorGroupStatus {
            namespaces: Some(n.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        });
        og
    }

    #[rstest]
    #[case::own_namespace_group_and_another_namespace(group(Some(&["home"]), false, Some(&["home"])), "new", false)]
    #[case::own_namespace_group_and_its_namespace(group(Some(&["home"]), false, Some(&["home"])), "home", true)]
    #[case::a_named_target_created_later(group(Some(&["home", "later"]), false, Some(&["home"])), "later", true)]
    #[case::a_listed_target_whose_label_changed(group(Some(&["home"]), false, Some(&["home", "old"])), "old", true)]
    #[case::all_namespaces_copies_into_a_new_one(group(None, false, Some(&[""])), "new", true)]
    #[case::all_namespaces_before_its_status(group(Some(&[]), false, None), "new", true)]
    #[case::a_selector_may_select_it(group(None, true, Some(&["home"])), "new", true)]
    fn a_group_syncs_only_for_namespaces_that_can_change_its_decision(
        #[case] og: OperatorGroup,
        #[case] namespace: &str,
        #[case] expected: bool,
    ) {
        assert_eq!(cares(&og, namespace), expected);
    }
}
