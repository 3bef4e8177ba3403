//! The CSV status a decision leads to, pure: (old status, step, requirement statuses, now) → the new status
//! when anything changed. Phase changes follow OLM's `SetPhaseWithEventIfChanged` (nothing is written when
//! phase, reason and message are unchanged); `lastTransitionTime` moves when the phase or the reason changes;
//! `status.conditions` keeps OLM's history (one entry per phase/reason change, newest 20).

use super::machine::Step;
use crate::transition::Transition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::csv::{ClusterServiceVersionStatus, CsvPhase, CsvReason, RequirementStatus};

/// A status to write, and the phase change to announce with an Event (if any).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusUpdate {
    pub status: ClusterServiceVersionStatus,
    pub announce: Option<Transition>,
}

/// The status after `step`; `None` when nothing would change (no write, no Event).
pub fn next_status(
    old: Option<&ClusterServiceVersionStatus>,
    step: &Step,
    requirements: &[RequirementStatus],
    now: &Time,
) -> Option<StatusUpdate> {
    let mut status = old.cloned().unwrap_or_default();
    let mut announce = None;
    if let Step::To(t) = step {
        let unchanged =
            (status.phase == t.phase && status.reason == t.reason && status.message == t.message)
                || settling_wait(&status, t, now);
        if !unchanged {
            if status.phase == t.phase && status.reason != t.reason {
                // `set_phase` moves lastTransitionTime on phase changes only; a new reason counts too here.
                status.last_transition_time = Some(now.clone());
            }
            status.set_phase(t.phase.clone(), t.reason.clone(), t.message.clone(), now);
            announce = Some(t.clone());
        }
    }
    let requirements_changed = status.requirement_status != requirements;
    if requirements_changed && !requirements.is_empty() {
        status.requirement_status = requirements.to_vec();
    }
    let changed = announce.is_some() || (requirements_changed && !requirements.is_empty());
    changed.then_some(StatusUpdate { status, announce })
}

/// How long a fresh `Installing`/`InstallWaiting` keeps its first message: a Deployment just created moves from
/// "spec update to be observed" to "0 of 1 updated replicas" within a second, one status write each where the
/// phase and reason say nothing new (issue 19: requests per install). A wait that lasts longer shows its
/// current message at the next run after this.
pub const WAIT_MESSAGE_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether `t` only rewords a wait that began less than [`WAIT_MESSAGE_SETTLE`] ago (not written).
fn settling_wait(status: &ClusterServiceVersionStatus, t: &Transition, now: &Time) -> bool {
    let waiting = t.phase == CsvPhase::Installing && t.reason == CsvReason::InstallWaiting;
    let since = status
        .last_transition_time
        .as_ref()
        .and_then(|at| std::time::Duration::try_from(now.0.duration_since(at.0)).ok());
    waiting
        && status.phase == t.phase
        && status.reason == t.reason
        && since.is_some_and(|s| s < WAIT_MESSAGE_SETTLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use messages::crd::csv::{CsvPhase, CsvReason, RequirementStatusReason};
    use rstest::rstest;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).expect("valid timestamp"))
    }

    fn status(
        phase: CsvPhase,
        reason: CsvReason,
        message: &str,
        transitioned: i64,
    ) -> ClusterServiceVersionStatus {
        let mut s = ClusterServiceVersionStatus::default();
        s.set_phase(phase, reason, message, &at(transitioned));
        s
    }

    fn to(phase: CsvPhase, reason: CsvReason, message: &str) -> Step {
        Step::To(Transition::new(phase, reason, message))
    }

    fn crd_requirement(status: RequirementStatusReason) -> RequirementStatus {
        RequirementStatus {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            name: "widgets.example.com".into(),
            status,
            message: String::new(),
            uuid: String::new(),
            dependents: Vec::new(),
        }
    }

    #[rstest]
    #[case::a_fresh_wait_keeps_its_first_message(
        CsvPhase::Installing,
        CsvReason::InstallWaiting,
        101,
        false
    )]
    #[case::a_lasting_wait_shows_its_new_message(
        CsvPhase::Installing,
        CsvReason::InstallWaiting,
        103,
        true
    )]
    #[case::a_new_message_elsewhere_is_written(
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        101,
        true
    )]
    fn a_wait_is_reworded_only_once_it_lasts(
        #[case] phase: CsvPhase,
        #[case] reason: CsvReason,
        #[case] now: i64,
        #[case] written: bool,
    ) {
        let old = status(
            phase.clone(),
            reason.clone(),
            "waiting: spec update to be observed",
            100,
        );
        let update = next_status(
            Some(&old),
            &to(
                phase,
                reason,
                "waiting: 0 of 1 updated replicas are available",
            ),
            &[],
            &at(now),
        );
        assert_eq!(update.is_some(), written);
    }

    #[test]
    fn a_new_reason_is_written_at_once() {
        let old = status(
            CsvPhase::Installing,
            CsvReason::InstallSucceeded,
            "waiting for install components",
            100,
        );
        let update = next_status(
            Some(&old),
            &to(
                CsvPhase::Installing,
                CsvReason::InstallWaiting,
                "waiting for deployment",
            ),
            &[],
            &at(100),
        );
        assert!(update.is_some_and(|u| u.status.reason == CsvReason::InstallWaiting));
    }

    #[rstest]
    #[case::a_new_phase_moves_the_transition_time(
        CsvPhase::Installing,
        CsvReason::InstallSucceeded,
        "waiting",
        Some(200)
    )]
    #[case::a_new_reason_in_the_same_phase_moves_the_transition_time(
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        "not met",
        Some(200)
    )]
    #[case::a_new_message_alone_keeps_the_transition_time(
        CsvPhase::Pending,
        CsvReason::RequirementsUnknown,
        "other text",
        Some(100)
    )]
    #[case::the_same_phase_reason_and_message_write_nothing(
        CsvPhase::Pending,
        CsvReason::RequirementsUnknown,
        "requirements not yet checked",
        None
    )]
    fn last_transition_time_moves_only_when_phase_or_reason_change(
        #[case] phase: CsvPhase,
        #[case] reason: CsvReason,
        #[case] message: &str,
        #[case] transition_at: Option<i64>,
    ) {
        let old = status(
            CsvPhase::Pending,
            CsvReason::RequirementsUnknown,
            "requirements not yet checked",
            100,
        );
        let update = next_status(
            Some(&old),
            &to(phase.clone(), reason.clone(), message),
            &[],
            &at(200),
        );
        match transition_at {
            None => assert_eq!(update, None),
            Some(t) => {
                let update = update.expect("a change");
                assert_eq!(update.status.phase, phase);
                assert_eq!(update.status.reason, reason);
                assert_eq!(update.status.last_transition_time, Some(at(t)));
                assert_eq!(update.status.last_update_time, Some(at(200)));
                assert_eq!(
                    update.announce,
                    Some(Transition::new(phase, reason, message))
                );
            }
        }
    }

    #[test]
    fn conditions_keep_one_entry_per_phase_or_reason_change() {
        let mut old = status(CsvPhase::Pending, CsvReason::RequirementsUnknown, "a", 1);
        for (i, (phase, reason)) in [
            (CsvPhase::Pending, CsvReason::RequirementsNotMet),
            (CsvPhase::Pending, CsvReason::RequirementsNotMet),
            (CsvPhase::InstallReady, CsvReason::AllRequirementsMet),
            (CsvPhase::Installing, CsvReason::InstallSucceeded),
        ]
        .into_iter()
        .enumerate()
        {
            let message = format!("m{i}");
            if let Some(u) = next_status(
                Some(&old),
                &to(phase, reason, &message),
                &[],
                &at(10 + i as i64),
            ) {
                old = u.status;
            }
        }
        let history: Vec<(&str, &str)> = old
            .conditions
            .iter()
            .map(|c| (c.phase.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            history,
            vec![
                ("Pending", "RequirementsUnknown"),
                ("Pending", "RequirementsNotMet"),
                ("InstallReady", "AllRequirementsMet"),
                ("Installing", "InstallSucceeded")
            ]
        );
    }

    #[test]
    fn new_requirement_statuses_are_written_without_an_event() {
        let old = status(CsvPhase::Pending, CsvReason::RequirementsNotMet, "x", 1);
        let update = next_status(
            Some(&old),
            &Step::Stay,
            &[crd_requirement(RequirementStatusReason::NotPresent)],
            &at(5),
        )
        .expect("a change");
        assert_eq!(update.announce, None);
        assert_eq!(
            update.status.requirement_status,
            vec![crd_requirement(RequirementStatusReason::NotPresent)]
        );
        assert_eq!(update.status.last_update_time, Some(at(1)));
        let again = next_status(
            Some(&update.status),
            &Step::Stay,
            &[crd_requirement(RequirementStatusReason::NotPresent)],
            &at(6),
        );
        assert_eq!(again, None, "unchanged requirements are not rewritten");
    }

    #[test]
    fn a_first_status_starts_the_history() {
        let update = next_status(
            None,
            &to(
                CsvPhase::Pending,
                CsvReason::RequirementsUnknown,
                "requirements not yet checked",
            ),
            &[],
            &at(7),
        )
        .expect("a change");
        assert_eq!(update.status.conditions.len(), 1);
        assert_eq!(update.status.last_transition_time, Some(at(7)));
    }
}
