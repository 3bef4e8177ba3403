//! Which member CSVs the OperatorGroup annotates itself (`olm.operatorGroup`, `olm.operatorNamespace`,
//! `olm.targetNamespaces`). A CSV its own actor has not reconciled yet (phase none) is left to that actor, whose
//! first decision annotates it before anything else (`csv::machine`, `AnnotateGroup`): both wrote the same
//! annotations on every new CSV, one patch each (issue 19: requests per install). Every CSV past its first
//! reconcile, e.g. when the group's targets change, is still annotated by the group, as OLM's `annotateCSVs`
//! does. Pure.

use messages::crd::csv::{ClusterServiceVersion, CsvPhase};

/// Whether the group annotates `csv` itself (it is past its first reconcile).
pub fn group_annotates(csv: &ClusterServiceVersion) -> bool {
    csv.phase() != CsvPhase::None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_new_csv_is_left_to_its_actor(None, false)]
    #[case::a_pending_csv_is_annotated(Some("Pending"), true)]
    #[case::a_succeeded_csv_is_annotated(Some("Succeeded"), true)]
    #[case::a_failed_csv_is_annotated(Some("Failed"), true)]
    fn only_reconciled_members_are_annotated_by_the_group(
        #[case] phase: Option<&str>,
        #[case] expected: bool,
    ) {
        let mut csv = ClusterServiceVersion::new("a.v1", Default::default());
        csv.status =
            phase.and_then(|p| serde_json::from_value(serde_json::json!({"phase": p})).ok());
        assert_eq!(group_annotates(&csv), expected);
    }
}
