//! A copied CSV whose parent is gone collects itself, in its own CSV actor (OLM's `removeDanglingChildCSVs`
//! on copy events). Normally the parent's group removes its copies; this covers a parent deleted with no
//! group left to do it, and a copy whose group is gone. Pure: the actor does the delete.

use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use olm_runtime::scope::Scope;

/// Where the parent of `copy` lives (`olm.operatorNamespace`), if the copy names it.
pub fn parent_namespace(copy: &ClusterServiceVersion) -> Option<&str> {
    copy.metadata
        .annotations
        .as_ref()?
        .get(annotations::OPERATOR_NAMESPACE)
        .map(String::as_str)
}

/// Whether the CSV store would hold the parent's namespace: a cluster watch, or several watched namespaces
/// including it (one watched namespace is watched alone, so "missing" would be a guess).
pub fn parent_visible(scope: &Scope, parent_ns: &str) -> bool {
    match scope {
        Scope::Namespaces(list) => list.len() > 1 && list.iter().any(|n| n == parent_ns),
        Scope::Cluster => true,
    }
}

/// Whether `copy` must delete itself: a copy whose parent is visible to us and missing.
pub fn orphaned(
    copy: &ClusterServiceVersion,
    parent: Option<&ClusterServiceVersion>,
    scope: &Scope,
) -> bool {
    copy.is_copied()
        && parent_namespace(copy).is_some_and(|ns| parent_visible(scope, ns))
        && super::dangling(copy, parent, true) == Some(super::Dangling::ParentMissing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::ClusterServiceVersionSpec;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn copy(parent_ns: Option<&str>) -> ClusterServiceVersion {
        let mut c = ClusterServiceVersion::new("op.v1", ClusterServiceVersionSpec::default());
        c.metadata.namespace = Some("target".into());
        c.metadata.labels = Some(BTreeMap::from([(
            annotations::COPIED_FROM.to_string(),
            parent_ns.unwrap_or("ops").to_string(),
        )]));
        c.metadata.annotations = parent_ns.map(|ns| {
            BTreeMap::from([(annotations::OPERATOR_NAMESPACE.to_string(), ns.to_string())])
        });
        c
    }

    fn parent() -> ClusterServiceVersion {
        let mut c = ClusterServiceVersion::new("op.v1", ClusterServiceVersionSpec::default());
        c.metadata.namespace = Some("ops".into());
        c
    }

    fn namespaces(list: &[&str]) -> Scope {
        Scope::Namespaces(list.iter().map(|s| s.to_string()).collect())
    }

    #[rstest]
    #[case::a_copy_without_its_parent_goes(copy(Some("ops")), None, Scope::Cluster, true)]
    #[case::a_copy_with_its_parent_stays(copy(Some("ops")), Some(parent()), Scope::Cluster, false)]
    #[case::a_parent_outside_the_watched_namespaces_is_not_known_missing(copy(Some("ops")), None, namespaces(&["target", "x"]), false)]
    #[case::one_watched_namespace_cannot_tell(copy(Some("ops")), None, namespaces(&["ops"]), false)]
    #[case::several_watched_namespaces_including_the_parents(copy(Some("ops")), None, namespaces(&["ops", "target"]), true)]
    #[case::a_copy_naming_no_parent_namespace_is_left_to_its_group(
        copy(None),
        None,
        Scope::Cluster,
        false
    )]
    fn a_copy_collects_itself_only_when_its_parent_is_known_missing(
        #[case] copy: ClusterServiceVersion,
        #[case] parent: Option<ClusterServiceVersion>,
        #[case] scope: Scope,
        #[case] expected: bool,
    ) {
        assert_eq!(orphaned(&copy, parent.as_ref(), &scope), expected);
    }
}
