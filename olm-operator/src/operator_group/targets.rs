//! Target namespaces of an OperatorGroup (spec §3.1) and the surface used by the intersection rules (§3.4).
//! Pure: the namespaces are passed in as (name, labels) pairs from the Namespace store.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Selector, SelectorExt};
use messages::crd::operator_group::OperatorGroup;
use std::collections::{BTreeMap, BTreeSet};

/// Why a group's targets cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("spec.targetNamespaces contains the empty namespace (all namespaces)")]
    EmptyNamespaceListed,
    #[error("spec.selector is invalid: {0}")]
    BadSelector(String),
}

/// What a group targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// Every namespace (`status.namespaces: [""]`).
    All,
    /// These namespaces (may be empty: a selector that matches nothing).
    Some(BTreeSet<String>),
}

impl Targets {
    /// The `status.namespaces` value (sorted; `[""]` for all).
    pub fn to_status(&self) -> Vec<String> {
        match self {
            Targets::All => vec![String::new()],
            Targets::Some(set) => set.iter().cloned().collect(),
        }
    }

    /// Read back a `status.namespaces` value.
    pub fn from_status(namespaces: &[String]) -> Self {
        if namespaces.iter().any(String::is_empty) {
            Targets::All
        } else {
            Targets::Some(namespaces.iter().cloned().collect())
        }
    }

    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Targets::All => true,
            Targets::Some(set) => set.contains(namespace),
        }
    }

    pub fn is_all(&self) -> bool {
        matches!(self, Targets::All)
    }
}

/// OLM's target computation: `spec.targetNamespaces` when non-empty (listed namespaces are kept even if they
/// do not exist yet, as OLM does), else all namespaces when the selector is nil or empty, else the namespaces
/// whose labels match the selector.
pub fn select<'a>(
    group: &OperatorGroup,
    namespaces: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
) -> Result<Targets, TargetError> {
    if let Some(listed) = group
        .spec
        .target_namespaces
        .as_ref()
        .filter(|t| !t.is_empty())
    {
        if listed.iter().any(String::is_empty) {
            return Err(TargetError::EmptyNamespaceListed);
        }
        return Ok(Targets::Some(listed.iter().cloned().collect()));
    }
    let Some(selector) = group
        .spec
        .selector
        .as_ref()
        .filter(|s| !selector_is_empty(s))
    else {
        return Ok(Targets::All);
    };
    let selector = Selector::try_from(selector.clone())
        .map_err(|e| TargetError::BadSelector(e.to_string()))?;
    Ok(Targets::Some(
        namespaces
            .into_iter()
            .filter(|(_, labels)| selector.matches(labels))
            .map(|(name, _)| name.to_string())
            .collect(),
    ))
}

fn selector_is_empty(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// The group's surface for the intersection rules: its `status.namespaces` plus its own namespace, unless it
/// targets all namespaces. `None` when the group has no computed status yet.
pub fn surface(group: &OperatorGroup) -> Option<Targets> {
    let namespaces = group.status.as_ref()?.namespaces.as_ref()?;
    match Targets::from_status(namespaces) {
        Targets::All => Some(Targets::All),
        Targets::Some(mut set) => {
            if let Some(own) = group.metadata.namespace.as_ref() {
                set.insert(own.clone());
            }
            Some(Targets::Some(set))
        }
    }
}

/// Whether `other`'s surface intersects `mine`: `intersect(mine, surface(other))`, read in place (every CSV sync
/// asks it of every group, so it allocates nothing). A group without a computed status has no surface.
pub fn surface_intersects(mine: &Targets, other: &OperatorGroup) -> bool {
    let Some(namespaces) = other.status.as_ref().and_then(|s| s.namespaces.as_ref()) else {
        return false;
    };
    let own = other.metadata.namespace.as_deref();
    if namespaces.iter().any(String::is_empty) {
        return match mine {
            Targets::All => true,
            Targets::Some(set) => !set.is_empty(),
        };
    }
    match mine {
        Targets::All => !namespaces.is_empty() || own.is_some(),
        Targets::Some(set) => {
            namespaces.iter().any(|n| set.contains(n)) || own.is_some_and(|n| set.contains(n))
        }
    }
}

/// Two surfaces intersect when they share a namespace; all namespaces intersects any non-empty set.
pub fn intersect(a: &Targets, b: &Targets) -> bool {
    match (a, b) {
        (Targets::All, Targets::All) => true,
        (Targets::All, Targets::Some(set)) | (Targets::Some(set), Targets::All) => !set.is_empty(),
        (Targets::Some(x), Targets::Some(y)) => x.intersection(y).next().is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
    use rstest::rstest;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn set(names: &[&str]) -> Targets {
        Targets::Some(names.iter().map(|s| s.to_string()).collect())
    }

    fn group(spec: OperatorGroupSpec) -> OperatorGroup {
        let mut og = OperatorGroup::new("og", spec);
        og.metadata.namespace = Some("op".into());
        og
    }

    fn by_labels(pairs: &[(&str, &str)]) -> Option<LabelSelector> {
        Some(LabelSelector {
            match_labels: Some(labels(pairs)),
            match_expressions: None,
        })
    }

    #[rstest]
    #[case::listed_target_namespaces_win_over_the_selector(OperatorGroupSpec { target_namespaces: Some(vec!["a".into(), "zz".into()]), selector: by_labels(&[("team", "x")]), ..Default::default() }, Ok(set(&["a", "zz"])))]
    #[case::no_targets_and_no_selector_means_all_namespaces(
        OperatorGroupSpec::default(),
        Ok(Targets::All)
    )]
    #[case::an_empty_target_list_and_no_selector_means_all_namespaces(OperatorGroupSpec { target_namespaces: Some(vec![]), ..Default::default() }, Ok(Targets::All))]
    #[case::an_empty_selector_means_all_namespaces(OperatorGroupSpec { selector: Some(LabelSelector::default()), ..Default::default() }, Ok(Targets::All))]
    #[case::a_selector_picks_the_namespaces_whose_labels_match(OperatorGroupSpec { selector: by_labels(&[("team", "x")]), ..Default::default() }, Ok(set(&["a", "b"])))]
    #[case::a_selector_matching_nothing_selects_no_namespace(OperatorGroupSpec { selector: by_labels(&[("team", "nobody")]), ..Default::default() }, Ok(set(&[])))]
    #[case::a_selector_expression_is_honoured(OperatorGroupSpec { selector: Some(LabelSelector { match_labels: None, match_expressions: Some(vec![LabelSelectorRequirement { key: "team".into(), operator: "NotIn".into(), values: Some(vec!["x".into()]) }]) }), ..Default::default() }, Ok(set(&["c", "op"])))]
    #[case::listing_the_empty_namespace_is_an_error(OperatorGroupSpec { target_namespaces: Some(vec!["a".into(), "".into()]), ..Default::default() }, Err(TargetError::EmptyNamespaceListed))]
    fn targets_are_selected_like_olm(
        #[case] spec: OperatorGroupSpec,
        #[case] expected: Result<Targets, TargetError>,
    ) {
        let namespaces = [
            ("a", labels(&[("team", "x")])),
            ("b", labels(&[("team", "x"), ("env", "dev")])),
            ("c", labels(&[("team", "y")])),
            ("op", labels(&[])),
        ];
        let got = select(&group(spec), namespaces.iter().map(|(n, l)| (*n, l)));
        assert_eq!(got, expected);
    }

    #[rstest]
    #[case::the_own_namespace_is_added_to_the_targets(&["ns-1"], Some(set(&["ns-1", "op"])))]
    #[case::all_namespaces_stay_all(&[""], Some(Targets::All))]
    #[case::an_empty_status_still_covers_the_own_namespace(&[], Some(set(&["op"])))]
    fn the_surface_includes_the_operator_namespace(
        #[case] status: &[&str],
        #[case] expected: Option<Targets>,
    ) {
        let mut og = group(OperatorGroupSpec::default());
        og.status = Some(OperatorGroupStatus {
            namespaces: Some(status.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        });
        assert_eq!(surface(&og), expected);
    }

    #[test]
    fn a_group_without_status_has_no_surface_yet() {
        assert_eq!(surface(&group(OperatorGroupSpec::default())), None);
    }

    #[test]
    fn surface_intersects_reads_what_surface_and_intersect_compute() {
        let with_status = |ns: Option<&str>, namespaces: Option<Vec<&str>>| {
            let mut og = group(OperatorGroupSpec::default());
            og.metadata.namespace = ns.map(str::to_string);
            og.status = namespaces.map(|n| OperatorGroupStatus {
                namespaces: Some(n.into_iter().map(str::to_string).collect()),
                ..Default::default()
            });
            og
        };
        let groups = [
            with_status(Some("a"), None),
            with_status(Some("a"), Some(vec![])),
            with_status(None, Some(vec![])),
            with_status(Some("a"), Some(vec![""])),
            with_status(Some("a"), Some(vec!["b", "c"])),
            with_status(None, Some(vec!["c"])),
        ];
        let mines = [
            Targets::All,
            set(&[]),
            set(&["a"]),
            set(&["b"]),
            set(&["x"]),
        ];
        for other in &groups {
            for mine in &mines {
                let want = surface(other).is_some_and(|theirs| intersect(mine, &theirs));
                assert_eq!(
                    surface_intersects(mine, other),
                    want,
                    "{mine:?} against {:?} in {:?}",
                    other.status,
                    other.metadata.namespace
                );
            }
        }
    }

    #[rstest]
    #[case::all_namespaces_intersect_all_namespaces(Targets::All, Targets::All, true)]
    #[case::all_namespaces_intersect_any_namespace(Targets::All, set(&["x"]), true)]
    #[case::all_namespaces_do_not_intersect_nothing(set(&[]), Targets::All, false)]
    #[case::sets_sharing_a_namespace_intersect(set(&["ns", "ns-1"]), set(&["ns-2", "ns"]), true)]
    #[case::disjoint_sets_do_not_intersect(set(&["ns", "ns-1"]), set(&["ns-2"]), false)]
    fn surfaces_intersect_when_they_share_a_namespace(
        #[case] a: Targets,
        #[case] b: Targets,
        #[case] expected: bool,
    ) {
        assert_eq!(intersect(&a, &b), expected);
        assert_eq!(intersect(&b, &a), expected);
    }
}
