//! Annotation and label keys OLM reads and writes (spec §1-3), in one place.

/// Annotation on a CSV (and its pods): the namespace of the OperatorGroup the operator runs in.
pub const OPERATOR_NAMESPACE: &str = "olm.operatorNamespace";
/// Annotation on a CSV: the name of its OperatorGroup.
pub const OPERATOR_GROUP: &str = "olm.operatorGroup";
/// Annotation on a CSV: the OperatorGroup's target namespaces joined with `,` (`""` = all).
pub const TARGET_NAMESPACES: &str = "olm.targetNamespaces";
/// Annotation on an OperatorGroup: the APIs its members provide (`Kind.version.group,...`).
pub const PROVIDED_APIS: &str = "olm.providedAPIs";
/// Annotation on a CSV: the semver range of versions it replaces.
pub const SKIP_RANGE: &str = "olm.skipRange";
/// Label on a copied CSV (and copied Roles): the namespace of the parent.
pub const COPIED_FROM: &str = "olm.copiedFrom";
/// Prefix of the namespace label `olm.operatorgroup.uid/<og-uid>` (value `""`).
pub const OPERATOR_GROUP_UID_PREFIX: &str = "olm.operatorgroup.uid/";
/// Label on objects OLM manages (`"true"`).
pub const MANAGED: &str = "olm.managed";
/// Owner label: name of the owning CSV or OperatorGroup.
pub const OWNER: &str = "olm.owner";
/// Owner label: namespace of the owner.
pub const OWNER_NAMESPACE: &str = "olm.owner.namespace";
/// Owner label: kind of the owner (`ClusterServiceVersion` or `OperatorGroup`).
pub const OWNER_KIND: &str = "olm.owner.kind";
/// olm-rs only (not OLM v0): marks a CSV's Role/RoleBinding lifted to a ClusterRole/ClusterRoleBinding for an
/// all-namespaces group, so the lifted copy can be removed when the group stops targeting all namespaces.
pub const LIFTED: &str = "olm-rs/lifted";
/// Label on a Deployment: hash of the spec OLM installed.
pub const DEPLOYMENT_SPEC_HASH: &str = "olm.deployment-spec-hash";
/// Label on OLM-created (Cluster)Roles: hash of the permissions.
pub const PERMISSIONS_HASH: &str = "olm.permissions.hash";
/// Annotation prefix on CRDs recording the CSVs installed alongside (`<ns>/<csv>` values).
pub const INSTALLED_ALONGSIDE_PREFIX: &str = "operatorframework.io/installed-alongside-";
/// Pod-template annotation carrying the CA hash of API service / webhook certs.
pub const CA_HASH: &str = "olmcahash";
/// Annotation kubectl writes; dropped from copied CSVs.
pub const LAST_APPLIED_CONFIGURATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Prefix of labels tying objects to an Operator (`operators.coreos.com/<name>`); dropped from copies.
pub const OPERATOR_LABEL_PREFIX: &str = "operators.coreos.com/";
/// Finalizer OLM puts on CSVs.
pub const CSV_CLEANUP_FINALIZER: &str = "operators.coreos.com/csv-cleanup";
/// Environment variable OLM injects in every operator container.
pub const OPERATOR_CONDITION_NAME_ENV: &str = "OPERATOR_CONDITION_NAME";

/// The namespace label that marks a namespace as targeted by the OperatorGroup with `uid`.
pub fn operator_group_uid_label(uid: &str) -> String {
    format!("{OPERATOR_GROUP_UID_PREFIX}{uid}")
}

/// The label key tying an object to the Operator named `name`: the name part is cut to 63
/// characters and trailing `.`, `_`, `-` removed, as OLM's `ComponentLabelKey` does.
pub fn operator_component_label(name: &str) -> String {
    let cut = match name.char_indices().nth(63) {
        Some((end, _)) => &name[..end],
        None => name,
    };
    let cut = if cut.len() < name.len() {
        cut.trim_end_matches(['.', '_', '-'])
    } else {
        cut
    };
    format!("{OPERATOR_LABEL_PREFIX}{cut}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_short_name_is_kept("etcd.operators", "operators.coreos.com/etcd.operators")]
    #[case::a_long_name_is_cut_to_63_characters(
        &"a".repeat(70), &format!("operators.coreos.com/{}", "a".repeat(63)))]
    #[case::trailing_separators_after_the_cut_are_removed(
        &format!("{}.-_tail", "b".repeat(60)), &format!("operators.coreos.com/{}", "b".repeat(60)))]
    fn operator_component_label_follows_olm(#[case] name: &str, #[case] expected: &str) {
        assert_eq!(operator_component_label(name), expected);
    }
}
