//! Whether an OperatorGroup's own namespace still stands. A group in a namespace being deleted, or already gone,
//! serves no one: the control plane can leave objects of a deleted namespace listed (an apiserver or etcd restart
//! during the deletion), and a group actor that kept syncing such a leftover would write its provided-API
//! ClusterRoles again after the janitor's sweep deleted them (`crate::janitor`: a namespace gone orphans them).
//! Pure.

use k8s_openapi::api::core::v1::Namespace;

/// The group's namespace as the Namespace store shows it: `listed` says whether the store has listed once, `ns`
/// is its entry. A namespace the store has not listed yet, or not seen yet (a group made right after its
/// namespace; the namespace's event syncs the group again), stands.
pub fn standing(listed: bool, ns: Option<&Namespace>) -> bool {
    match ns {
        Some(ns) => ns.metadata.deletion_timestamp.is_none(),
        None => !listed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use rstest::rstest;

    fn ns(terminating: bool) -> Namespace {
        let mut n = Namespace::default();
        n.metadata.name = Some("ns".into());
        n.metadata.deletion_timestamp = terminating.then(|| Time(Timestamp::UNIX_EPOCH));
        n
    }

    #[rstest]
    #[case::a_listed_namespace_stands(true, Some(false), true)]
    #[case::a_terminating_namespace_does_not(true, Some(true), false)]
    #[case::a_namespace_missing_from_a_listed_store_is_gone(true, None, false)]
    #[case::before_the_first_list_it_stands(false, None, true)]
    #[case::a_terminating_one_before_the_first_list_does_not(false, Some(true), false)]
    fn the_groups_namespace_stands(
        #[case] listed: bool,
        #[case] terminating: Option<bool>,
        #[case] want: bool,
    ) {
        let n = terminating.map(ns);
        assert_eq!(standing(listed, n.as_ref()), want);
    }
}
