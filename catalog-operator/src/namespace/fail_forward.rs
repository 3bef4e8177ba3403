//! Replacement chains of a namespace's CSVs as fail-forward reads them (OLM `ReplacementMapping`,
//! `WalkReplacementChain`, `isReplacementChainThatEndsInFailure` in `resolver/fail_forward.go`). Pure.
//!
//! Whether the namespace fails forward at all is its OperatorGroup's `spec.upgradeStrategy`
//! ([`crate::group_view::GroupView::fail_forward`]); what changes then:
//! - resolution: a CSV replaced along a chain that ends in a `Failed` CSV no longer holds its package
//!   ([`super::input::installed`] keeps it, the resolver hides it when the chain is `Replacing` up to the
//!   failure), so the failed CSV can be upgraded to the next bundle;
//! - the Subscription: a failed InstallPlan makes it `UpgradeFailed` instead of `UpgradePending`
//!   ([`crate::status::before_resolution`]), so resolution runs again instead of waiting for that plan;
//! - olm-operator moves the `Failed` CSV to `Replacing` once its replacement exists.

use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use std::collections::HashSet;
use std::sync::Arc;

fn name(c: &ClusterServiceVersion) -> &str {
    c.metadata.name.as_deref().unwrap_or_default()
}

/// The CSV whose `spec.replaces` names `csv` (never `csv` itself).
fn replacer<'a>(
    csv: &str,
    csvs: &[&'a Arc<ClusterServiceVersion>],
) -> Option<&'a Arc<ClusterServiceVersion>> {
    csvs.iter()
        .find(|c| c.spec.replaces.as_deref() == Some(csv) && name(c) != csv)
        .copied()
}

/// Whether another CSV replaces `csv`.
pub fn replaced(csv: &str, csvs: &[&Arc<ClusterServiceVersion>]) -> bool {
    replacer(csv, csvs).is_some()
}

/// Whether the replacement chain that starts at `csv` (following each CSV's replacer) ends in a `Failed` CSV.
/// A chain that loops ends nowhere.
pub fn chain_ends_in_failure(csv: &str, csvs: &[&Arc<ClusterServiceVersion>]) -> bool {
    let mut seen = HashSet::from([csv.to_owned()]);
    let mut last = None;
    let mut current = csv.to_owned();
    while let Some(next) = replacer(&current, csvs) {
        current = name(next).to_owned();
        if !seen.insert(current.clone()) {
            return false;
        }
        last = Some(next);
    }
    last.is_some_and(|c| c.phase() == CsvPhase::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::ClusterServiceVersionStatus;
    use rstest::rstest;

    fn csv(name: &str, replaces: Option<&str>, phase: CsvPhase) -> Arc<ClusterServiceVersion> {
        let mut c = ClusterServiceVersion::new(name, Default::default());
        c.spec.replaces = replaces.map(str::to_owned);
        c.status = Some(ClusterServiceVersionStatus {
            phase,
            ..Default::default()
        });
        Arc::new(c)
    }

    use CsvPhase as P;

    #[rstest]
    #[case::a_lone_csv_is_not_replaced(vec![csv("a.v1", None, P::Failed)], "a.v1", false, false)]
    #[case::an_upgrade_in_progress(
        vec![csv("a.v1", None, P::Replacing), csv("a.v2", Some("a.v1"), P::Installing)], "a.v1", true, false)]
    #[case::an_upgrade_that_failed(
        vec![csv("a.v1", None, P::Replacing), csv("a.v2", Some("a.v1"), P::Failed)], "a.v1", true, true)]
    #[case::a_longer_chain_that_failed_at_its_end(
        vec![csv("a.v1", None, P::Replacing), csv("a.v2", Some("a.v1"), P::Replacing), csv("a.v3", Some("a.v2"), P::Failed)],
        "a.v1", true, true)]
    #[case::a_failure_in_the_middle_of_a_chain_moving_on(
        vec![csv("a.v1", None, P::Replacing), csv("a.v2", Some("a.v1"), P::Failed), csv("a.v3", Some("a.v2"), P::Installing)],
        "a.v1", true, false)]
    #[case::the_failed_csv_itself_is_not_replaced(
        vec![csv("a.v1", None, P::Replacing), csv("a.v2", Some("a.v1"), P::Failed)], "a.v2", false, false)]
    #[case::a_loop_ends_nowhere(
        vec![csv("a.v1", Some("a.v2"), P::Failed), csv("a.v2", Some("a.v1"), P::Failed)], "a.v1", true, false)]
    #[case::a_csv_replacing_itself_is_not_its_own_replacer(vec![csv("a.v1", Some("a.v1"), P::Failed)], "a.v1", false, false)]
    fn replacement_chains_are_walked_as_olm_walks_them(
        #[case] csvs: Vec<Arc<ClusterServiceVersion>>,
        #[case] start: &str,
        #[case] is_replaced: bool,
        #[case] ends_in_failure: bool,
    ) {
        let refs: Vec<&Arc<ClusterServiceVersion>> = csvs.iter().collect();
        assert_eq!(replaced(start, &refs), is_replaced);
        assert_eq!(chain_ends_in_failure(start, &refs), ends_in_failure);
    }
}
