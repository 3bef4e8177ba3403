//! Replacement relations between the CSVs of one namespace, pure: which existing CSV this one replaces,
//! which CSV replaces it, whether `spec.replaces` loops back, the replacement chain (OLM
//! `getReplacementChain`) and CRD owner conflicts outside that chain.

use super::facts::Neighbour;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use std::collections::BTreeSet;

/// What the chain logic needs of one CSV of the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    pub replaces: Option<String>,
    pub phase: CsvPhase,
    pub copied: bool,
    pub owned_crds: Vec<String>,
}

impl Peer {
    pub fn of(csv: &ClusterServiceVersion) -> Self {
        let owned_crds = csv
            .spec
            .custom_resource_definitions
            .as_ref()
            .and_then(|d| d.owned.as_ref())
            .map(|o| o.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default();
        Self {
            name: csv.metadata.name.clone().unwrap_or_default(),
            replaces: csv.spec.replaces.clone().filter(|r| !r.is_empty()),
            phase: csv.phase(),
            copied: csv.is_copied(),
            owned_crds,
        }
    }
}

fn find<'a>(peers: &'a [Peer], name: &str) -> Option<&'a Peer> {
    peers.iter().find(|p| p.name == name)
}

/// The existing CSV `me.replaces` names (never `me` itself).
pub fn replaces(me: &Peer, peers: &[Peer]) -> Option<Neighbour> {
    let target = me.replaces.as_deref().filter(|r| *r != me.name)?;
    find(peers, target).map(|p| Neighbour::new(p.name.clone(), p.phase.clone()))
}

/// A non-copied CSV whose `spec.replaces` names `me` (the first by name when several do).
pub fn replaced_by(me: &Peer, peers: &[Peer]) -> Option<Neighbour> {
    let mut candidates: Vec<&Peer> = peers
        .iter()
        .filter(|p| {
            p.name != me.name && !p.copied && p.replaces.as_deref() == Some(me.name.as_str())
        })
        .collect();
    candidates.sort_by(|a, b| a.name.cmp(&b.name));
    candidates
        .first()
        .map(|p| Neighbour::new(p.name.clone(), p.phase.clone()))
}

/// The newest CSV of the chain replacing `me`: follow `replaced_by` until a CSV nobody replaces (stopping
/// on cycles). `None` when nothing replaces `me`.
pub fn head(me: &Peer, peers: &[Peer]) -> Option<Neighbour> {
    let mut seen = BTreeSet::from([me.name.clone()]);
    let mut current = replaced_by(me, peers)?;
    loop {
        if !seen.insert(current.name.clone()) {
            return Some(current);
        }
        let Some(peer) = find(peers, &current.name) else {
            return Some(current);
        };
        match replaced_by(peer, peers) {
            Some(next) if !seen.contains(&next.name) => current = next,
            _ => return Some(current),
        }
    }
}

/// The first CSV older than the one `me` replaces, following `spec.replaces` over existing non-copied CSVs
/// (stopping on cycles), that is neither Replacing nor Deleting: it has not handed over yet.
pub fn older_not_handed_over(me: &Peer, peers: &[Peer]) -> Option<Neighbour> {
    let mut seen = BTreeSet::from([me.name.clone()]);
    let mut current = find(peers, me.replaces.as_deref()?)?;
    loop {
        if !seen.insert(current.name.clone()) {
            return None;
        }
        let older = find(peers, current.replaces.as_deref()?)?;
        if older.copied || seen.contains(&older.name) {
            return None;
        }
        if !matches!(older.phase, CsvPhase::Replacing | CsvPhase::Deleting) {
            return Some(Neighbour::new(older.name.clone(), older.phase.clone()));
        }
        current = older;
    }
}

/// The names around a `spec.replaces` loop through `me` (`a -> b -> a`), if following `replaces` over
/// existing CSVs comes back to `me`. A CSV naming itself is ignored, as OLM does.
pub fn cycle(me: &Peer, peers: &[Peer]) -> Option<Vec<String>> {
    let mut path = vec![me.name.clone()];
    let mut seen = BTreeSet::from([me.name.clone()]);
    let mut current = me;
    while let Some(next_name) = current.replaces.as_deref().filter(|r| *r != current.name) {
        if next_name == me.name {
            path.push(me.name.clone());
            return Some(path);
        }
        if !seen.insert(next_name.to_string()) {
            return None; // a loop that does not pass through `me`: not ours to report
        }
        current = find(peers, next_name)?;
        path.push(current.name.clone());
    }
    None
}

/// OLM `getReplacementChain`: forward through CSVs replacing the current one, backward through
/// `spec.replaces`, stopping on cycles.
pub fn chain(me: &Peer, peers: &[Peer]) -> BTreeSet<String> {
    let mut names = BTreeSet::from([me.name.clone()]);
    let mut current = me.name.clone();
    while let Some(next) = peers
        .iter()
        .find(|p| p.replaces.as_deref() == Some(current.as_str()) && !names.contains(&p.name))
    {
        names.insert(next.name.clone());
        current = next.name.clone();
    }
    let mut back = me.replaces.clone();
    while let Some(name) = back {
        if !names.insert(name.clone()) {
            break;
        }
        back = find(peers, &name).and_then(|p| p.replaces.clone());
    }
    names
}

/// A CSV outside `me`'s replacement chain that owns one of `me`'s owned CRDs.
pub fn owner_conflict(me: &Peer, peers: &[Peer]) -> Option<String> {
    if me.owned_crds.is_empty() {
        return None;
    }
    let chain = chain(me, peers);
    peers
        .iter()
        .filter(|p| !chain.contains(&p.name) && !p.copied)
        .find_map(|p| {
            p.owned_crds
                .iter()
                .find(|c| me.owned_crds.contains(c))
                .map(|crd| format!("{} also owns {crd}", p.name))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn peer(name: &str, replaces: Option<&str>, phase: CsvPhase) -> Peer {
        Peer {
            name: name.into(),
            replaces: replaces.map(Into::into),
            phase,
            copied: false,
            owned_crds: vec!["widgets.example.com".into()],
        }
    }

    fn abc() -> Vec<Peer> {
        vec![
            peer("a", None, CsvPhase::Succeeded),
            peer("b", Some("a"), CsvPhase::Pending),
            peer("c", Some("b"), CsvPhase::Pending),
        ]
    }

    #[rstest]
    #[case::the_middle_of_a_chain_sees_both_neighbours("b", Some("a"), Some("c"))]
    #[case::the_head_is_replaced_but_replaces_nothing("a", None, Some("b"))]
    #[case::the_tail_replaces_but_is_not_replaced("c", Some("b"), None)]
    fn neighbours_follow_spec_replaces(
        #[case] name: &str,
        #[case] old: Option<&str>,
        #[case] new: Option<&str>,
    ) {
        let peers = abc();
        let me = find(&peers, name).expect("peer");
        assert_eq!(replaces(me, &peers).map(|n| n.name), old.map(String::from));
        assert_eq!(
            replaced_by(me, &peers).map(|n| n.name),
            new.map(String::from)
        );
    }

    #[rstest]
    #[case::the_oldest_sees_the_newest("a", Some("c"))]
    #[case::the_middle_sees_the_newest("b", Some("c"))]
    #[case::the_newest_has_no_head("c", None)]
    fn the_head_is_the_end_of_the_chain(#[case] name: &str, #[case] expected: Option<&str>) {
        let peers = abc();
        let me = find(&peers, name).expect("peer");
        assert_eq!(head(me, &peers).map(|n| n.name), expected.map(String::from));
    }

    #[rstest]
    #[case::the_direct_predecessor_is_not_checked_here(&[("a", None, CsvPhase::Succeeded), ("b", Some("a"), CsvPhase::Pending)], "b", None)]
    #[case::an_older_csv_still_installing_has_not_handed_over(&[("a", None, CsvPhase::Installing), ("b", Some("a"), CsvPhase::Replacing), ("c", Some("b"), CsvPhase::Pending)], "c", Some("a"))]
    #[case::an_older_chain_all_replacing_or_deleting_has_handed_over(&[("a", None, CsvPhase::Deleting), ("b", Some("a"), CsvPhase::Replacing), ("c", Some("b"), CsvPhase::Replacing), ("d", Some("c"), CsvPhase::Pending)], "d", None)]
    #[case::the_walk_stops_at_a_missing_csv(&[("a", None, CsvPhase::Succeeded), ("c", Some("b"), CsvPhase::Replacing), ("d", Some("c"), CsvPhase::Pending)], "d", None)]
    #[case::the_walk_stops_on_a_cycle(&[("a", Some("c"), CsvPhase::Replacing), ("b", Some("a"), CsvPhase::Replacing), ("c", Some("b"), CsvPhase::Pending)], "c", None)]
    fn older_csvs_must_all_hand_over(
        #[case] csvs: &[(&str, Option<&str>, CsvPhase)],
        #[case] me: &str,
        #[case] expected: Option<&str>,
    ) {
        let peers: Vec<Peer> = csvs
            .iter()
            .map(|(n, r, p)| peer(n, *r, p.clone()))
            .collect();
        let me = find(&peers, me).expect("peer");
        assert_eq!(
            older_not_handed_over(me, &peers).map(|n| n.name),
            expected.map(String::from)
        );
    }

    #[test]
    fn a_head_in_a_cycle_stops() {
        let peers = vec![
            peer("a", Some("b"), CsvPhase::Pending),
            peer("b", Some("a"), CsvPhase::Pending),
        ];
        assert_eq!(
            head(&peers[0], &peers).map(|n| n.name),
            Some("b".to_string())
        );
    }

    #[test]
    fn a_replaced_csv_that_is_gone_is_no_neighbour() {
        let peers = vec![peer("b", Some("a"), CsvPhase::Pending)];
        assert_eq!(replaces(&peers[0], &peers), None);
    }

    #[rstest]
    #[case::two_csvs_replacing_each_other_form_a_cycle(vec![peer("a", Some("b"), CsvPhase::Pending), peer("b", Some("a"), CsvPhase::Pending)], Some(vec!["a", "b", "a"]))]
    #[case::three_csvs_in_a_ring_form_a_cycle(vec![peer("a", Some("c"), CsvPhase::Pending), peer("b", Some("a"), CsvPhase::Pending), peer("c", Some("b"), CsvPhase::Pending)], Some(vec!["a", "c", "b", "a"]))]
    #[case::a_csv_replacing_itself_is_ignored(vec![peer("a", Some("a"), CsvPhase::Pending)], None)]
    #[case::a_straight_chain_has_no_cycle(abc(), None)]
    #[case::a_cycle_elsewhere_is_not_ours(vec![peer("a", Some("b"), CsvPhase::Pending), peer("b", Some("c"), CsvPhase::Pending), peer("c", Some("b"), CsvPhase::Pending)], None)]
    fn cycles_are_found_through_the_csv_itself(
        #[case] peers: Vec<Peer>,
        #[case] expected: Option<Vec<&str>>,
    ) {
        let me = &peers[0];
        assert_eq!(
            cycle(me, &peers),
            expected.map(|v| v.into_iter().map(String::from).collect())
        );
    }

    #[test]
    fn members_of_the_chain_may_own_the_same_crd() {
        let peers = abc();
        assert_eq!(owner_conflict(&peers[1], &peers), None);
        assert_eq!(
            chain(&peers[0], &peers),
            BTreeSet::from(["a".to_string(), "b".to_string(), "c".to_string()])
        );
    }

    #[test]
    fn an_unrelated_owner_of_the_same_crd_conflicts() {
        let mut peers = abc();
        peers.push(peer("other", None, CsvPhase::Succeeded));
        assert_eq!(
            owner_conflict(&peers[1], &peers),
            Some("other also owns widgets.example.com".into())
        );
    }
}
