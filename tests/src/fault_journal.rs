//! The faults the operators of a chaos run journaled (`JournalEvent::Fault`) as decisions, and the comparison of
//! two runs of one seed in the same namespaces ([`compare`]): a decision is named by (actor kind, object key,
//! site, n), and the same seed must make the same fault (kind and delay) for every decision both runs made. How
//! many decisions a run makes depends on timing, so a decision only one run made is counted, not compared. The
//! check runs the shipped binaries twice and needs no model of how they decide: a binary that drew its faults
//! from anything but the seed and the decision (a clock, a process-wide random source, another counter) fails it.

use messages::msg::{JournalEntry, JournalEvent};
use std::collections::BTreeMap;

/// (actor kind, object key, site, n)
type Decision = (String, String, String, u64);
/// (seed, fault, delay in ms)
type Made = (u64, String, Option<u64>);

/// Each journaled fault by its decision; a decision journaled twice with different faults (two replicas of one
/// run disagreeing) is a difference of its own.
fn decisions<'a>(
    entries: impl IntoIterator<Item = &'a JournalEntry>,
    run: &str,
    differ: &mut Vec<String>,
) -> BTreeMap<Decision, Made> {
    let mut out: BTreeMap<Decision, Made> = BTreeMap::new();
    for entry in entries {
        let JournalEvent::Fault {
            seed,
            site,
            n,
            fault,
            delay_ms,
        } = &entry.event
        else {
            continue;
        };
        let decision = (entry.kind.clone(), entry.key.to_string(), site.clone(), *n);
        let made = (*seed, fault.clone(), *delay_ms);
        if let Some(seen) = out.get(&decision)
            && *seen != made
        {
            differ.push(format!(
                "{run}: {decision:?} journaled as {seen:?} and {made:?}"
            ));
        }
        out.insert(decision, made);
    }
    out
}

/// What two runs of one seed share and where they differ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rerun {
    /// Decisions both runs journaled (each compared).
    pub common: usize,
    pub only_first: usize,
    pub only_second: usize,
    /// Decisions journaled with different faults (by the two runs, or within one).
    pub differ: Vec<String>,
}

/// Compare the fault journals of two runs of one seed.
pub fn compare(first: &[JournalEntry], second: &[JournalEntry]) -> Rerun {
    let mut differ = Vec::new();
    let a = decisions(first, "first run", &mut differ);
    let b = decisions(second, "rerun", &mut differ);
    let mut out = Rerun::default();
    for (decision, made) in &a {
        match b.get(decision) {
            Some(again) if again == made => out.common += 1,
            Some(again) => {
                out.common += 1;
                differ.push(format!("{decision:?}: {made:?}, then {again:?}"));
            }
            None => out.only_first += 1,
        }
    }
    out.only_second = b.keys().filter(|d| !a.contains_key(*d)).count();
    out.differ = differ;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::key::ObjectKey;
    use rstest::rstest;

    fn fault(key: &str, n: u64, fault: &str, delay_ms: Option<u64>) -> JournalEntry {
        JournalEntry {
            at_ms: n,
            kind: "Subscription".into(),
            key: ObjectKey::new("ns", key),
            event: JournalEvent::Fault {
                seed: 7,
                site: "run".into(),
                n,
                fault: fault.into(),
                delay_ms,
            },
        }
    }

    fn observed() -> JournalEntry {
        JournalEntry {
            at_ms: 0,
            kind: "Subscription".into(),
            key: ObjectKey::new("ns", "a"),
            event: JournalEvent::Observed {
                resource_version: Some("1".into()),
            },
        }
    }

    #[rstest]
    #[case::the_same_faults(
        vec![fault("a", 0, "panic", None), fault("a", 3, "slow", Some(20))],
        vec![fault("a", 0, "panic", None), fault("a", 3, "slow", Some(20))],
        (2, 0, 0, 0)
    )]
    #[case::fewer_decisions_in_the_rerun(
        vec![fault("a", 0, "panic", None), fault("a", 9, "fail", None)],
        vec![fault("a", 0, "panic", None), observed()],
        (1, 1, 0, 0)
    )]
    #[case::another_fault_for_one_decision(
        vec![fault("a", 0, "panic", None)],
        vec![fault("a", 0, "stop", None)],
        (1, 0, 0, 1)
    )]
    #[case::another_delay_for_one_decision(
        vec![fault("a", 1, "slow", Some(20))],
        vec![fault("a", 1, "slow", Some(300))],
        (1, 0, 0, 1)
    )]
    #[case::two_replicas_of_one_run_disagree(
        vec![fault("a", 0, "panic", None), fault("a", 0, "stop", None)],
        vec![],
        (0, 1, 0, 1)
    )]
    #[case::another_object(
        vec![fault("a", 0, "panic", None)],
        vec![fault("b", 0, "panic", None)],
        (0, 1, 1, 0)
    )]
    fn a_rerun_is_compared_decision_by_decision(
        #[case] first: Vec<JournalEntry>,
        #[case] second: Vec<JournalEntry>,
        #[case] want: (usize, usize, usize, usize),
    ) {
        let r = compare(&first, &second);
        assert_eq!(
            (r.common, r.only_first, r.only_second, r.differ.len()),
            want,
            "{r:?}"
        );
    }
}
