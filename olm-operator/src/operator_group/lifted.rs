//! Which CSVs still have lifted RBAC (the ClusterRoles an all-namespaces group lifts from a CSV's Roles, label
//! `olm-rs/lifted=true`), read from olm-operator's store of CSV-owned ClusterRoles. A member of a group that is
//! not all-namespaces has its lifted RBAC deleted (two delete-collections); with this answer the deletes run only
//! where something is there to delete, not on every install (issue 19: requests per install).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::annotations;
use std::collections::BTreeSet;

/// (CSV name, CSV namespace) of every lifted ClusterRole among `roles`.
pub fn owners<'a>(roles: impl IntoIterator<Item = &'a ObjectMeta>) -> BTreeSet<(String, String)> {
    roles
        .into_iter()
        .filter_map(|m| {
            let labels = m.labels.as_ref()?;
            if labels.get(annotations::LIFTED).map(String::as_str) != Some("true") {
                return None;
            }
            Some((
                labels.get(annotations::OWNER)?.clone(),
                labels.get(annotations::OWNER_NAMESPACE)?.clone(),
            ))
        })
        .collect()
}

/// Whether the lifted RBAC of `csv` in `namespace` must be deleted: when the store says some is there.
pub fn must_unlift(lifted: &BTreeSet<(String, String)>, csv: &str, namespace: &str) -> bool {
    lifted.contains(&(csv.to_owned(), namespace.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn role(labels: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: Some("r".into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        }
    }

    const L: &str = annotations::LIFTED;
    const O: &str = annotations::OWNER;
    const N: &str = annotations::OWNER_NAMESPACE;

    #[rstest]
    #[case::a_lifted_role_names_its_csv(vec![role(&[(L, "true"), (O, "op.v1"), (N, "ns")])], &[("op.v1", "ns")])]
    #[case::an_owned_role_not_lifted_does_not(vec![role(&[(O, "op.v1"), (N, "ns")])], &[])]
    #[case::lifted_false_does_not(vec![role(&[(L, "false"), (O, "op.v1"), (N, "ns")])], &[])]
    #[case::no_owner_namespace_does_not(vec![role(&[(L, "true"), (O, "op.v1")])], &[])]
    #[case::two_roles_of_one_csv_name_it_once(
        vec![role(&[(L, "true"), (O, "op.v1"), (N, "ns")]), role(&[(L, "true"), (O, "op.v1"), (N, "ns")])],
        &[("op.v1", "ns")]
    )]
    fn lifted_owners(#[case] roles: Vec<ObjectMeta>, #[case] expected: &[(&str, &str)]) {
        let want: BTreeSet<(String, String)> = expected
            .iter()
            .map(|(c, n)| ((*c).to_owned(), (*n).to_owned()))
            .collect();
        assert_eq!(owners(&roles), want);
    }

    #[rstest]
    #[case::nothing_lifted_means_no_delete(vec![], false)]
    #[case::its_own_lifted_roles_mean_delete(vec![("op.v1", "ns")], true)]
    #[case::another_namespaces_lifted_roles_do_not(vec![("op.v1", "other")], false)]
    fn unlift_when(#[case] lifted: Vec<(&str, &str)>, #[case] expected: bool) {
        let set: BTreeSet<(String, String)> = lifted
            .iter()
            .map(|(c, n)| ((*c).to_owned(), (*n).to_owned()))
            .collect();
        assert_eq!(must_unlift(&set, "op.v1", "ns"), expected);
    }
}
