//! One run's row of the chaos table ([`Row`]): its faults by kind, whether and how fast it converged, what it
//! set apart, and what its journals held; the kinds every seeded run must make ([`missing_kinds`]).

use super::plan::{Fault, Which};
use crate::api_faults::ApiFault;
use crate::converge::Snapshot;
use messages::msg::JournalEntry;
use olm_runtime::chaos::FaultKind;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Row {
    pub seed: Option<u64>,
    /// A second run of a seed in the same namespaces (compared with the first's journal).
    pub rerun: bool,
    /// Faults made, by kind: the actors' (`panic`, `drop`...), the proxies' (`api-5xx`...), the processes'.
    pub faults: BTreeMap<String, u64>,
    /// Faults the actors made, by operator (each binary must make its own).
    pub actor_faults: BTreeMap<Which, u64>,
    pub converged: bool,
    /// From the end of the last process fault (the fault-free run: from the workload's start) to the end state
    /// equal to the fault-free run's.
    pub converge_time: Duration,
    pub snapshot: Snapshot,
    pub broken: Vec<String>,
    /// Journaled faults the configuration does not reproduce (`olm_runtime::chaos::replay`).
    pub unreplayed: usize,
    /// Journal entries the operators dropped (past a journal's capacity): the journals are partial when not 0.
    pub dropped: u64,
    /// Replicas that exited on their own and were started again.
    pub exits: u64,
    /// Objects listed in the deleted namespace after it was gone, set apart (`converge::may_set_apart`).
    pub set_apart: Vec<String>,
    /// Every fault entry of every replica's journal.
    pub journal: Vec<JournalEntry>,
}

/// Every kind a seeded run must make at least once: each actor fault, each API fault, each process fault.
pub fn required_kinds() -> Vec<String> {
    let mut all: Vec<String> = FaultKind::ALL
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    all.extend(ApiFault::ALL.iter().map(|f| format!("api-{}", f.as_str())));
    all.extend(Fault::KINDS.iter().map(|k| k.to_string()));
    all
}

/// The required kinds a row's counts lack (counted 0 or not at all).
pub fn missing_kinds(required: &[String], faults: &BTreeMap<String, u64>) -> Vec<String> {
    required
        .iter()
        .filter(|k| faults.get(*k).copied().unwrap_or(0) == 0)
        .cloned()
        .collect()
}

pub fn row_line(r: &Row) -> String {
    let faults: Vec<String> = r.faults.iter().map(|(k, n)| format!("{k}={n}")).collect();
    let seed = match (r.seed, r.rerun) {
        (None, _) => "baseline".to_string(),
        (Some(s), false) => s.to_string(),
        (Some(s), true) => format!("{s} (rerun)"),
    };
    format!(
        "{seed} | {} | {} | {:.1}s | {} | {}",
        if faults.is_empty() {
            "-".to_string()
        } else {
            faults.join(" ")
        },
        if r.converged { "yes" } else { "NO" },
        r.converge_time.as_secs_f64(),
        r.exits,
        if r.set_apart.is_empty() {
            "-".to_string()
        } else {
            r.set_apart.join(", ")
        },
    )
}

pub fn print_table(rows: &[Row]) {
    println!(
        "seed | faults by kind | converged (faults on) | time to converge after the last process fault | replica exits | set apart"
    );
    for r in rows {
        println!("{}", row_line(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::all_made(&[("panic", 2), ("api-lost", 1)], &[])]
    #[case::one_zero(&[("panic", 0), ("api-lost", 1)], &["panic"])]
    #[case::one_absent(&[("panic", 3)], &["api-lost"])]
    fn a_kind_counted_zero_or_absent_is_missing(
        #[case] counts: &[(&str, u64)],
        #[case] want: &[&str],
    ) {
        let required = vec!["panic".to_string(), "api-lost".to_string()];
        let faults = counts.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(missing_kinds(&required, &faults), want);
    }

    #[test]
    fn every_layer_has_required_kinds() {
        let all = required_kinds();
        for kind in [
            "panic",
            "reorder",
            "api-lost",
            "api-410",
            "kill-olm-leader",
            "etcd-restart",
        ] {
            assert!(all.iter().any(|k| k == kind), "{kind} in {all:?}");
        }
        assert_eq!(all.len(), 8 + 8 + 6);
    }
}
