//! The interim OperatorGroup check of a CSV (until the OperatorGroup issue lands): a CSV in a namespace with
//! exactly one OperatorGroup whose install mode it supports may proceed. Pure; the result is a [`GroupFit`]
//! for `machine::decide`, so issue 4 can replace this file without touching the machine.

use super::facts::GroupFit;
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, InstallMode, supports};
use messages::crd::operator_group::OperatorGroup;
use std::collections::{BTreeMap, BTreeSet};

/// Classify how `csv` fits the OperatorGroups `groups` of its namespace.
pub fn classify(csv: &ClusterServiceVersion, groups: &[&OperatorGroup]) -> GroupFit {
    let group = match groups {
        [] => return GroupFit::NoOperatorGroup,
        [one] => *one,
        _ => return GroupFit::TooManyOperatorGroups,
    };
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let Some(targets) = targets_of(group) else {
        return GroupFit::NoTargetNamespaces;
    };
    let modes = csv.spec.install_modes.as_deref().unwrap_or_default();
    if let Some(duplicate) = duplicate_mode(modes) {
        return GroupFit::InvalidInstallModes(format!(
            "install modes of the csv contain {duplicate} more than once"
        ));
    }
    if let Err(error) = supports(modes, namespace, &targets) {
        return GroupFit::Unsupported(error.to_string());
    }
    GroupFit::Fits {
        annotate: missing_annotations(csv, group, namespace, &targets),
    }
}

/// The group's target namespaces: `status.namespaces` once the group controller wrote it, else
/// `spec.targetNamespaces`, else all namespaces (`[""]`) when there is no selector. `None` when the targets
/// resolve to nothing we can know here (a selector without a computed status, or an empty list).
pub fn targets_of(group: &OperatorGroup) -> Option<Vec<String>> {
    let from_status = group.status.as_ref().and_then(|s| s.namespaces.clone());
    let from_spec = group
        .spec
        .target_namespaces
        .clone()
        .filter(|t| !t.is_empty());
    let selector_empty = group.spec.selector.as_ref().is_none_or(|s| {
        s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
    });
    let targets = match (from_status, from_spec) {
        (Some(status), _) => status,
        (None, Some(spec)) => spec,
        (None, None) if selector_empty => vec![String::new()],
        (None, None) => return None,
    };
    (!targets.is_empty()).then_some(targets)
}

fn duplicate_mode(modes: &[InstallMode]) -> Option<String> {
    let mut seen = BTreeSet::new();
    modes
        .iter()
        .find(|m| !seen.insert(m.type_.clone()))
        .map(|m| m.type_.to_string())
}

/// The group annotations the CSV should carry, when they differ from the ones it has.
fn missing_annotations(
    csv: &ClusterServiceVersion,
    group: &OperatorGroup,
    namespace: &str,
    targets: &[String],
) -> Option<BTreeMap<String, String>> {
    let mut sorted = targets.to_vec();
    sorted.sort();
    let wanted = BTreeMap::from([
        (
            annotations::OPERATOR_GROUP.to_string(),
            group.metadata.name.clone().unwrap_or_default(),
        ),
        (
            annotations::OPERATOR_NAMESPACE.to_string(),
            namespace.to_string(),
        ),
        (annotations::TARGET_NAMESPACES.to_string(), sorted.join(",")),
    ]);
    let have = csv.metadata.annotations.clone().unwrap_or_default();
    let differs = wanted.iter().any(|(k, v)| have.get(k) != Some(v));
    differs.then_some(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use messages::crd::csv::{ClusterServiceVersionSpec, InstallModeType};
    use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
    use rstest::rstest;

    fn csv(modes: &[(InstallModeType, bool)]) -> ClusterServiceVersion {
        let mut c = ClusterServiceVersion::new("a.v1", ClusterServiceVersionSpec::default());
        c.metadata.namespace = Some("ns".into());
        c.spec.install_modes = Some(
            modes
                .iter()
                .map(|(t, s)| InstallMode {
                    type_: t.clone(),
                    supported: *s,
                })
                .collect(),
        );
        c
    }

    fn group(targets: Option<&[&str]>, status: Option<&[&str]>, selector: bool) -> OperatorGroup {
        let mut og = OperatorGroup::new("og", OperatorGroupSpec::default());
        og.metadata.namespace = Some("ns".into());
        og.spec.target_namespaces = targets.map(|t| t.iter().map(|s| s.to_string()).collect());
        if selector {
            og.spec.selector = Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("team".into(), "a".into())])),
                ..Default::default()
            });
        }
        og.status = status.map(|n| OperatorGroupStatus {
            namespaces: Some(n.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        });
        og
    }

    use InstallModeType::{AllNamespaces, MultiNamespace, OwnNamespace, SingleNamespace};

    #[rstest]
    #[case::an_own_namespace_group_fits_an_own_namespace_csv(&[(OwnNamespace, true)], Some(&["ns"][..]), None, false, "fits")]
    #[case::a_global_group_fits_an_all_namespaces_csv(&[(AllNamespaces, true)], None, None, false, "fits")]
    #[case::a_global_group_does_not_fit_an_own_namespace_only_csv(&[(OwnNamespace, true)], None, None, false, "unsupported")]
    #[case::a_single_other_namespace_needs_single_namespace(&[(OwnNamespace, true), (SingleNamespace, false)], Some(&["other"][..]), None, false, "unsupported")]
    #[case::two_namespaces_need_multi_namespace(&[(MultiNamespace, true), (OwnNamespace, true)], Some(&["ns", "b"][..]), None, false, "fits")]
    #[case::the_written_status_wins_over_the_spec(&[(OwnNamespace, true)], Some(&["b"][..]), Some(&["ns"][..]), false, "fits")]
    #[case::a_selector_without_a_computed_status_has_no_targets(&[(AllNamespaces, true)], None, None, true, "no targets")]
    #[case::an_empty_status_has_no_targets(&[(AllNamespaces, true)], None, Some(&[][..]), false, "no targets")]
    #[case::a_duplicated_install_mode_is_invalid(&[(OwnNamespace, true), (OwnNamespace, false)], Some(&["ns"][..]), None, false, "invalid modes")]
    #[case::a_csv_without_install_modes_supports_nothing(&[], Some(&["ns"][..]), None, false, "unsupported")]
    fn one_group_fits_when_the_csv_supports_its_targets(
        #[case] modes: &[(InstallModeType, bool)],
        #[case] targets: Option<&[&str]>,
        #[case] status: Option<&[&str]>,
        #[case] selector: bool,
        #[case] expected: &str,
    ) {
        let og = group(targets, status, selector);
        let fit = classify(&csv(modes), &[&og]);
        let got = match fit {
            GroupFit::Fits { .. } => "fits",
            GroupFit::Unsupported(_) => "unsupported",
            GroupFit::ChangeProvidedApis(..) => "change apis",
            GroupFit::ApiFailure { .. } => "api failure",
            GroupFit::NoTargetNamespaces => "no targets",
            GroupFit::InvalidInstallModes(_) => "invalid modes",
            GroupFit::NoOperatorGroup => "no group",
            GroupFit::TooManyOperatorGroups => "too many",
        };
        assert_eq!(got, expected);
    }

    #[test]
    fn no_group_and_two_groups_are_classified() {
        let c = csv(&[(OwnNamespace, true)]);
        assert_eq!(classify(&c, &[]), GroupFit::NoOperatorGroup);
        let (a, b) = (group(None, None, false), group(None, None, false));
        assert_eq!(classify(&c, &[&a, &b]), GroupFit::TooManyOperatorGroups);
    }

    #[test]
    fn unsupported_carries_olms_supports_text() {
        let og = group(None, None, false);
        assert_eq!(classify(&csv(&[(OwnNamespace, true)]), &[&og]), GroupFit::Unsupported("AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces".into()));
    }

    #[test]
    fn a_fitting_csv_is_annotated_once() {
        let og = group(Some(&["ns"]), None, false);
        let mut c = csv(&[(OwnNamespace, true)]);
        let GroupFit::Fits {
            annotate: Some(wanted),
        } = classify(&c, &[&og])
        else {
            panic!("annotations expected")
        };
        assert_eq!(
            wanted.get("olm.targetNamespaces").map(String::as_str),
            Some("ns")
        );
        assert_eq!(
            wanted.get("olm.operatorGroup").map(String::as_str),
            Some("og")
        );
        c.metadata.annotations = Some(wanted);
        assert_eq!(classify(&c, &[&og]), GroupFit::Fits { annotate: None });
    }
}
