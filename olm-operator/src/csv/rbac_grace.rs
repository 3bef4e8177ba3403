//! How long a Pending CSV whose RBAC is missing waits before olm-operator writes that RBAC itself. An InstallPlan
//! creates the CSV first and its ServiceAccount, Roles and bindings right after; a CSV run that came between the
//! two wrote the same objects as catalog-operator (create, 409, read, update each, on both sides: issue 19,
//! requests per install). Within [`GRACE`] of entering Pending the CSV stays as it is and looks again when the
//! grace ends (the plan's objects requeue it sooner: they are owned by it); a CSV made by hand, with no plan
//! writing its RBAC, gets it from olm-operator [`GRACE`] later than before. Pure.

use std::time::Duration;

/// The wait for a plan's RBAC after the CSV entered Pending.
pub const GRACE: Duration = Duration::from_secs(2);

/// What is left of the grace, `since_transition` after the CSV entered Pending (`None` once it is over, or when
/// the time is unknown).
pub fn left(since_transition: Option<Duration>) -> Option<Duration> {
    since_transition
        .and_then(|since| GRACE.checked_sub(since))
        .filter(|left| !left.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::just_pending_waits_the_whole_grace(Some(0), Some(2000))]
    #[case::half_way_waits_the_rest(Some(1500), Some(500))]
    #[case::at_the_end_waits_no_more(Some(2000), None)]
    #[case::after_the_grace_writes_rbac(Some(5000), None)]
    #[case::an_unknown_time_writes_rbac(None, None)]
    fn the_grace_counts_from_entering_pending(
        #[case] since_ms: Option<u64>,
        #[case] left_ms: Option<u64>,
    ) {
        assert_eq!(
            left(since_ms.map(Duration::from_millis)),
            left_ms.map(Duration::from_millis)
        );
    }
}
