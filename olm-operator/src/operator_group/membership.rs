//! Whether and how a CSV belongs to the OperatorGroup of its namespace (spec §3.2-3.4), for the CSV machine:
//! exactly one group, install modes that support its targets (`csv::group_fit`), then the provided-API
//! intersection with every other group of the cluster. Pure.

use super::intersection::{self, ApiVerdict};
use super::provided_apis;
use crate::csv::facts::GroupFit;
use crate::csv::group_fit;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;

/// The CSV's place in its group.
#[derive(Debug, Clone, PartialEq)]
pub struct Membership {
    pub fit: GroupFit,
    /// Only meaningful when `fit` is `Fits`; `Proceed` otherwise.
    pub apis: ApiVerdict,
}

/// Classify `csv` given the groups of its namespace and every group of the cluster. Copies are never checked.
pub fn classify<'a>(csv: &ClusterServiceVersion, namespace_groups: &[&OperatorGroup], all_groups: impl IntoIterator<Item = &'a OperatorGroup>) -> Membership {
    let fit = group_fit::classify(csv, namespace_groups);
    let apis = match (&fit, namespace_groups) {
        (GroupFit::Fits { .. }, [group]) if !csv.is_copied() => intersection::check(&provided_apis::of_csv(csv), &csv.reason(), group, all_groups),
        _ => ApiVerdict::Proceed,
    };
    Membership { fit, apis }
}

/// [`classify`] folded into the [`GroupFit`] the CSV machine reads.
pub fn fit<'a>(csv: &ClusterServiceVersion, namespace_groups: &[&OperatorGroup], all_groups: impl IntoIterator<Item = &'a OperatorGroup>) -> GroupFit {
    let Membership { fit, apis } = classify(csv, namespace_groups, all_groups);
    match apis {
        ApiVerdict::Proceed => fit,
        ApiVerdict::Change(change, set) => GroupFit::ChangeProvidedApis(change, set),
        ApiVerdict::Fail { reason, message, write } => GroupFit::ApiFailure { reason, message: message.to_string(), write },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::{ClusterServiceVersionSpec, CrdDescription, CsvReason, CustomResourceDefinitions, InstallMode, InstallModeType};
    use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
    use messages::msg::ApiChange;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn csv(ns: &str) -> ClusterServiceVersion {
        let mut c = ClusterServiceVersion::new("goose.v1", ClusterServiceVersionSpec::default());
        c.metadata.namespace = Some(ns.into());
        c.spec.install_modes = Some(InstallModeType::KNOWN.iter().map(|t| InstallMode { type_: t.clone(), supported: true }).collect());
        let crd: CrdDescription = serde_json::from_value(serde_json::json!({"name": "geese.birds.com", "version": "v1alpha1", "kind": "Goose"})).expect("crd");
        c.spec.custom_resource_definitions = Some(CustomResourceDefinitions { owned: Some(vec![crd]), required: None });
        c
    }

    fn group(ns: &str, name: &str, targets: &[&str], provided: Option<&str>, is_static: bool) -> OperatorGroup {
        let mut og = OperatorGroup::new(name, OperatorGroupSpec { target_namespaces: Some(targets.iter().map(|s| s.to_string()).collect()), static_provided_apis: Some(is_static), ..Default::default() });
        og.metadata.namespace = Some(ns.into());
        og.status = Some(OperatorGroupStatus { namespaces: Some(targets.iter().map(|s| s.to_string()).collect()), ..Default::default() });
        og.metadata.annotations = provided.map(|p| BTreeMap::from([("olm.providedAPIs".to_string(), p.to_string())]));
        og
    }

    const GOOSE: &str = "Goose.v1alpha1.birds.com";

    #[rstest]
    #[case::a_lone_group_gets_the_api_added(None, None, "add")]
    #[case::a_group_already_providing_it_proceeds(Some(GOOSE), None, "proceed")]
    #[case::two_groups_whose_targets_overlap_with_the_same_api_conflict(None, Some((&["shared"][..], GOOSE)), "conflict")]
    #[case::two_groups_whose_targets_overlap_with_different_apis_do_not(None, Some((&["shared"][..], "Duck.v1.birds.com")), "add")]
    #[case::two_groups_with_disjoint_targets_do_not_conflict(None, Some((&["elsewhere"][..], GOOSE)), "add")]
    #[case::a_group_whose_own_namespace_we_target_intersects(None, Some((&["elsewhere"][..], GOOSE)), "add")]
    fn membership_adds_the_intersection_rules(#[case] mine: Option<&str>, #[case] other: Option<(&[&str], &str)>, #[case] expected: &str) {
        let a = group("a", "og-a", &["a", "shared"], mine, false);
        let b = other.map(|(targets, apis)| group("b", "og-b", targets, Some(apis), false));
        let all: Vec<&OperatorGroup> = std::iter::once(&a).chain(b.as_ref()).collect();
        let got = classify(&csv("a"), &[&a], all);
        assert!(matches!(got.fit, GroupFit::Fits { .. }), "{got:?}");
        let label = match got.apis {
            ApiVerdict::Proceed => "proceed",
            ApiVerdict::Change(ApiChange::Add, _) => "add",
            ApiVerdict::Change(ApiChange::Remove, _) => "remove",
            ApiVerdict::Fail { reason: CsvReason::InterOperatorGroupOwnerConflict, .. } => "conflict",
            ApiVerdict::Fail { .. } => "static",
        };
        assert_eq!(label, expected);
    }

    #[test]
    fn no_group_means_no_api_check() {
        let got = classify(&csv("a"), &[], []);
        assert_eq!(got, Membership { fit: GroupFit::NoOperatorGroup, apis: ApiVerdict::Proceed });
    }

    #[test]
    fn a_static_group_protects_its_api() {
        let a = group("a", "og-a", &["a"], Some("Duck.v1.birds.com"), true);
        let got = classify(&csv("a"), &[&a], [&a]);
        assert!(matches!(got.apis, ApiVerdict::Fail { reason: CsvReason::CannotModifyStaticOperatorGroupProvidedApis, .. }), "{got:?}");
    }
}
