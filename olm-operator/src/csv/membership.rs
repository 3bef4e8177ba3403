//! Whether and how a CSV belongs to the OperatorGroup of its namespace (spec §3.2-3.4), for the CSV machine:
//! exactly one group, install modes that support its targets (`csv::group_fit`), then the provided-API
//! intersection with every other group of the cluster. Pure.

use super::facts::GroupFit;
use super::group_fit;
use crate::operator_group::intersection::{self, ApiVerdict};
use crate::operator_group::provided_apis;
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
pub fn classify<'a>(
    csv: &ClusterServiceVersion,
    namespace_groups: &[&OperatorGroup],
    all_groups: impl IntoIterator<Item = &'a OperatorGroup>,
) -> Membership {
    let fit = group_fit::classify(csv, namespace_groups);
    let apis = match (&fit, namespace_groups) {
        (GroupFit::Fits { .. }, [group]) if !csv.is_copied() => intersection::check(
            &provided_apis::of_csv(csv),
            &csv.reason(),
            group,
            all_groups,
        ),
        _ => ApiVerdict::Proceed,
    };
    Membership { fit, apis }
}

/// [`classify`] folded into the [`GroupFit`] the CSV machine reads.
pub fn fit<'a>(
    csv: &ClusterServiceVersion,
    namespace_groups: &[&OperatorGroup],
    all_groups: impl IntoIterator<Item = &'a OperatorGroup>,
) -> GroupFit {
    let Membership { fit, apis } = classify(csv, namespace_groups, all_groups);
    match apis {
        ApiVerdict::Proceed => fit,
        ApiVerdict::Change(change, set) => GroupFit::ChangeProvidedApis(change, set),
        ApiVerdict::Fail {
            reason,
            message,
            write,
        } => GroupFit::ApiFailure {
            reason,
            message: message.to_string(),
            write,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::{
        ClusterServiceVersionSpec, CrdDescription, CsvReason, CustomResourceDefinitions,
        InstallMode, InstallModeType,
    };
    use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
    use messages::msg::ApiChange;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn csv(ns: &str) -> ClusterServiceVersion {
        let mut c = ClusterServiceVersion::new("goose.v1", ClusterServiceVersionSpec::default());
        c.metadata.namespace = Some(ns.into());
        c.spec.install_modes = Some(
            InstallModeType::KNOWN
                .iter()
                .map(|t| InstallMode {
                    type_: t.clone(),
                    supported: true,
                })
                .collect(),
        );
        let crd: CrdDescription = serde_json::from_value(
            serde_json::json!({"name": "geese.birds.com", "version": "v1alpha1", "kind": "Goose"}),
        )
        .expect("crd");
        c.spec.custom_resource_definitions = Some(CustomResourceDefinitions {
            owned: Some(vec![crd]),
            required: None,
        });
        c
    }

    fn group(
        ns: &str,
        name: &str,
        targets: &[&str],
        provided: Option<&str>,
        is_static: bool,
    ) -> OperatorGroup {
        let mut og = OperatorGroup::new(
            name,
            OperatorGroupSpec {
                target_namespaces: Some(targets.iter().map(|s| s.to_string()).collect()),
                static_provided_apis: Some(is_static),
                ..Default::default()
            },
        );
        og.metadata.namespace = Some(ns.into());
        og.status = Some(OperatorGroupStatus {
            namespaces: Some(targets.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        });
        og.metadata.annotations =
            provided.map(|p| BTreeMap::from([("olm.providedAPIs".to_string(), p.to_string())]));
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
    fn membership_adds_the_intersection_rules(
        #[case] mine: Option<&str>,
        #[case] other: Option<(&[&str], &str)>,
        #[case] expected: &str,
    ) {
        let a = group("a", "og-a", &["a", "shared"], mine, false);
        let b = other.map(|(targets, apis)| group("b", "og-b", targets, Some(apis), false));
        let all: Vec<&OperatorGroup> = std::iter::once(&a).chain(b.as_ref()).collect();
        let got = classify(&csv("a"), &[&a], all);
        assert!(matches!(got.fit, GroupFit::Fits { .. }), "{got:?}");
        let label = match got.apis {
            ApiVerdict::Proceed => "proceed",
            ApiVerdict::Change(ApiChange::Add, _) => "add",
            ApiVerdict::Change(ApiChange::Remove, _) => "remove",
            ApiVerdict::Fail {
                reason: CsvReason::InterOperatorGroupOwnerConflict,
                ..
            } => "conflict",
            ApiVerdict::Fail { .. } => "static",
        };
        assert_eq!(label, expected);
    }

    #[test]
    fn no_group_means_no_api_check() {
        let got = classify(&csv("a"), &[], []);
        assert_eq!(
            got,
            Membership {
                fit: GroupFit::NoOperatorGroup,
                apis: ApiVerdict::Proceed
            }
        );
    }

    #[test]
    fn a_static_group_protects_its_api() {
        let a = group("a", "og-a", &["a"], Some("Duck.v1.birds.com"), true);
        let got = classify(&csv("a"), &[&a], [&a]);
        assert!(
            matches!(
                got.apis,
                ApiVerdict::Fail {
                    reason: CsvReason::CannotModifyStaticOperatorGroupProvidedApis,
                    ..
                }
            ),
            "{got:?}"
        );
    }
}

/// How the CSV machine acts on the provided-API outcomes (scenarios 3-5): table over `csv::machine::decide`.
#[cfg(test)]
mod machine_tests {
    use crate::csv::facts::{GroupFit, InstallStatus, Observed, Requirements, SpecCheck};
    use crate::csv::machine::{Effect, Step, decide};
    use messages::crd::csv::{CsvPhase as P, CsvReason as R};
    use messages::msg::ApiChange;
    use rstest::rstest;
    use std::collections::BTreeSet;
    use std::time::Duration;

    fn observed(phase: P, reason: R, group: GroupFit) -> Observed {
        Observed {
            phase,
            reason,
            copied: false,
            since_transition: Some(Duration::from_secs(10)),
            cluster_changed: false,
            operator_condition_stale: false,
            not_upgradeable: None,
            spec: SpecCheck::Valid,
            group,
            requirements: Requirements::met(),
            owner_conflict: None,
            replaces: None,
            replaced_by: None,
            fail_forward: false,
            chain_head: None,
            older_not_handed_over: None,
            install: InstallStatus::Healthy,
            served: Default::default(),
        }
    }

    fn goose() -> BTreeSet<String> {
        BTreeSet::from(["Goose.v1alpha1.birds.com".to_string()])
    }

    fn conflict(write: bool) -> GroupFit {
        GroupFit::ApiFailure {
            reason: R::InterOperatorGroupOwnerConflict,
            message: "intersecting operatorgroups provide the same apis".into(),
            write,
        }
    }

    #[rstest]
    #[case::a_new_csv_adding_apis_stays_none_and_asks_its_group(
        P::None,
        R::None,
        GroupFit::ChangeProvidedApis(ApiChange::Add, goose()),
        None,
        Effect::ChangeProvidedApis(ApiChange::Add, goose())
    )]
    #[case::a_succeeded_csv_removing_apis_stays_and_asks_its_group(
        P::Succeeded,
        R::InstallSucceeded,
        GroupFit::ChangeProvidedApis(ApiChange::Remove, goose()),
        None,
        Effect::ChangeProvidedApis(ApiChange::Remove, goose())
    )]
    #[case::a_new_csv_in_conflict_fails_and_cleans_up(P::None, R::None, conflict(true), Some((P::Failed, R::InterOperatorGroupOwnerConflict)), Effect::CleanupDeployments)]
    #[case::a_csv_already_in_conflict_is_not_rewritten(
        P::Failed,
        R::InterOperatorGroupOwnerConflict,
        conflict(false),
        None,
        Effect::CleanupDeployments
    )]
    #[case::a_static_group_refusal_fails_the_csv(P::Pending, R::RequirementsUnknown, GroupFit::ApiFailure { reason: R::CannotModifyStaticOperatorGroupProvidedApis, message: "static provided api operatorgroup cannot be modified by these apis".into(), write: true }, Some((P::Failed, R::CannotModifyStaticOperatorGroupProvidedApis)), Effect::CleanupDeployments)]
    fn provided_api_outcomes_drive_the_csv(
        #[case] phase: P,
        #[case] reason: R,
        #[case] group: GroupFit,
        #[case] to: Option<(P, R)>,
        #[case] effect: Effect,
    ) {
        let decision = decide(&observed(phase, reason, group));
        let got = match &decision.step {
            Step::Stay => None,
            Step::To(t) => Some((t.phase.clone(), t.reason.clone())),
        };
        assert_eq!(got, to);
        assert_eq!(decision.effects, vec![effect]);
    }

    #[rstest]
    #[case::a_resolved_conflict_returns_to_pending(R::InterOperatorGroupOwnerConflict)]
    #[case::a_resolved_static_refusal_returns_to_pending(
        R::CannotModifyStaticOperatorGroupProvidedApis
    )]
    fn failures_recover_once_the_apis_fit(#[case] reason: R) {
        let decision = decide(&observed(
            P::Failed,
            reason,
            GroupFit::Fits { annotate: None },
        ));
        let Step::To(t) = decision.step else {
            panic!("a transition expected")
        };
        assert_eq!((t.phase, t.reason), (P::Pending, R::RequirementsUnknown));
    }
}
