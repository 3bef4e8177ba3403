//! The InstallPlan phase machine (OLM `transitionInstallPlanState`, spec §4.4). Pure: the actor gathers the
//! facts, this decides the next status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;
use messages::crd::install_plan::{
    InstallPlanCondition, InstallPlanConditionReason, InstallPlanConditionType, InstallPlanPhase,
    InstallPlanStatus,
};
use std::time::Duration;

/// What to do on a sync, before executing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// No plan yet, or a terminal phase: nothing to do.
    Ignore,
    /// `RequiresApproval` and approved: move to `Installing` (then execute).
    Approve,
    /// Waiting for `spec.approved`.
    AwaitApproval,
    /// `Installing`: execute the steps.
    Execute,
}

pub fn action(status: Option<&InstallPlanStatus>, approved: bool) -> Action {
    let Some(s) = status else {
        return Action::Ignore;
    };
    if s.plan.is_empty() && s.bundle_lookups.is_empty() {
        return Action::Ignore;
    }
    match s.phase {
        InstallPlanPhase::Complete | InstallPlanPhase::Failed => Action::Ignore,
        InstallPlanPhase::RequiresApproval if approved => Action::Approve,
        InstallPlanPhase::RequiresApproval => Action::AwaitApproval,
        InstallPlanPhase::None
        | InstallPlanPhase::Planning
        | InstallPlanPhase::Installing
        | InstallPlanPhase::Other(_) => Action::Execute,
    }
}

/// How an execution pass ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executed {
    /// Every step is Created or Present.
    Done,
    /// Some step waits (a CRD not yet Established).
    Waiting,
    /// A step failed; `forbidden` errors are retried without a deadline.
    Error { message: String, forbidden: bool },
    /// The namespace's OperatorGroup check failed (zero or several groups).
    CheckFailed { message: String },
}

fn installed(
    status: bool,
    reason: InstallPlanConditionReason,
    message: &str,
    now: &Time,
) -> InstallPlanCondition {
    InstallPlanCondition {
        type_: InstallPlanConditionType::Installed,
        status: if status { "True" } else { "False" }.into(),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
        reason,
        message: message.into(),
    }
}

/// A passed OperatorGroup check no longer shows its old failure (OLM resets the `Installed` condition to
/// `False` with reason `Unknown`, so a fixed group does not look broken while steps are still retried).
fn clear_check_failure(s: &mut InstallPlanStatus, now: &Time) {
    let failed_check = s.conditions.iter().any(|c| {
        c.type_ == InstallPlanConditionType::Installed
            && c.reason == InstallPlanConditionReason::InstallCheckFailed
    });
    if failed_check {
        s.set_condition(installed(
            false,
            InstallPlanConditionReason::Other("Unknown".into()),
            "",
            now,
        ));
    }
}

/// The status after an execution pass, and when to look again.
pub fn after(
    status: &InstallPlanStatus,
    result: &Executed,
    now: &Time,
    retry_timeout: Duration,
) -> (InstallPlanStatus, Option<Duration>) {
    let mut s = status.clone();
    s.phase = InstallPlanPhase::Installing;
    let started = s.start_time.clone().unwrap_or_else(|| now.clone());
    s.start_time = Some(started.clone());
    if !matches!(result, Executed::CheckFailed { .. }) {
        clear_check_failure(&mut s, now);
    }
    match result {
        Executed::Done => {
            s.phase = InstallPlanPhase::Complete;
            s.message.clear();
            s.set_condition(installed(true, InstallPlanConditionReason::None, "", now));
            (s, None)
        }
        Executed::Waiting => {
            s.message.clear();
            (s, Some(Duration::from_millis(500)))
        }
        Executed::CheckFailed { message } => {
            s.set_condition(installed(
                false,
                InstallPlanConditionReason::InstallCheckFailed,
                message,
                now,
            ));
            (s, Some(Duration::from_secs(2)))
        }
        Executed::Error { message, forbidden } => {
            let elapsed = now.0.duration_since(started.0);
            let window = SignedDuration::try_from(retry_timeout).unwrap_or(SignedDuration::MAX);
            if *forbidden || elapsed < window {
                s.message = format!("retrying execution due to error: {message}");
                (s, Some(Duration::from_secs(1)))
            } else {
                s.phase = InstallPlanPhase::Failed;
                s.message = message.clone();
                s.set_condition(installed(
                    false,
                    InstallPlanConditionReason::InstallComponentFailed,
                    message,
                    now,
                ));
                (s, None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use messages::crd::install_plan::{Step, StepResource, StepStatus};
    use rstest::rstest;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).expect("ts"))
    }

    fn with_plan(phase: InstallPlanPhase) -> InstallPlanStatus {
        let step = Step {
            resolving: "a.v1".into(),
            resource: StepResource {
                kind: "Role".into(),
                ..Default::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        };
        InstallPlanStatus {
            phase,
            plan: vec![step],
            ..Default::default()
        }
    }

    #[rstest]
    #[case::a_plan_without_steps_is_ignored(
        Some(InstallPlanStatus::default()),
        true,
        Action::Ignore
    )]
    #[case::a_complete_plan_is_terminal(
        Some(with_plan(InstallPlanPhase::Complete)),
        true,
        Action::Ignore
    )]
    #[case::a_failed_plan_is_terminal(
        Some(with_plan(InstallPlanPhase::Failed)),
        true,
        Action::Ignore
    )]
    #[case::an_unapproved_manual_plan_waits(
        Some(with_plan(InstallPlanPhase::RequiresApproval)),
        false,
        Action::AwaitApproval
    )]
    #[case::an_approved_manual_plan_starts_installing(
        Some(with_plan(InstallPlanPhase::RequiresApproval)),
        true,
        Action::Approve
    )]
    #[case::an_installing_plan_executes(
        Some(with_plan(InstallPlanPhase::Installing)),
        true,
        Action::Execute
    )]
    fn the_phase_and_approval_decide_what_happens(
        #[case] status: Option<InstallPlanStatus>,
        #[case] approved: bool,
        #[case] want: Action,
    ) {
        assert_eq!(action(status.as_ref(), approved), want);
    }

    #[rstest]
    #[case::success_completes_the_plan(Executed::Done, InstallPlanPhase::Complete, Some(("True", InstallPlanConditionReason::None)))]
    #[case::an_error_within_the_window_is_retried(Executed::Error { message: "boom".into(), forbidden: false }, InstallPlanPhase::Installing, None)]
    #[case::a_waiting_crd_keeps_installing(Executed::Waiting, InstallPlanPhase::Installing, None)]
    #[case::a_missing_operator_group_is_an_install_check_failure(Executed::CheckFailed { message: "no operator group found that is managing this namespace".into() }, InstallPlanPhase::Installing, Some(("False", InstallPlanConditionReason::InstallCheckFailed)))]
    fn an_execution_within_the_retry_window(
        #[case] r: Executed,
        #[case] phase: InstallPlanPhase,
        #[case] cond: Option<(&str, InstallPlanConditionReason)>,
    ) {
        let mut s = with_plan(InstallPlanPhase::Installing);
        s.start_time = Some(at(100));
        let (next, _) = after(&s, &r, &at(110), Duration::from_secs(60));
        assert_eq!(next.phase, phase);
        let got = next
            .conditions
            .iter()
            .find(|c| c.type_ == InstallPlanConditionType::Installed)
            .map(|c| (c.status.as_str(), c.reason.clone()));
        assert_eq!(got, cond);
    }

    #[rstest]
    #[case::a_forbidden_step_after_a_passed_check(Executed::Error { message: "forbidden".into(), forbidden: true }, Some(("False", "Unknown")))]
    #[case::a_waiting_crd_after_a_passed_check(Executed::Waiting, Some(("False", "Unknown")))]
    #[case::success_after_a_passed_check(Executed::Done, Some(("True", "")))]
    #[case::the_check_failing_again_keeps_its_reason(Executed::CheckFailed { message: "please make sure the service account exists. sa=a operatorgroup=ns/og".into() }, Some(("False", "InstallCheckFailed")))]
    fn a_passed_group_check_clears_its_old_failure(
        #[case] r: Executed,
        #[case] want: Option<(&str, &str)>,
    ) {
        let mut s = with_plan(InstallPlanPhase::Installing);
        s.start_time = Some(at(100));
        s.set_condition(installed(
            false,
            InstallPlanConditionReason::InstallCheckFailed,
            "please make sure the service account exists. sa=a operatorgroup=ns/og",
            &at(100),
        ));
        let (next, _) = after(&s, &r, &at(110), Duration::from_secs(60));
        let got = next
            .conditions
            .iter()
            .find(|c| c.type_ == InstallPlanConditionType::Installed)
            .map(|c| (c.status.as_str(), c.reason.as_str()));
        assert_eq!(got, want);
    }

    #[test]
    fn an_error_past_the_window_fails_the_plan_with_install_component_failed() {
        let mut s = with_plan(InstallPlanPhase::Installing);
        s.start_time = Some(at(100));
        let (next, requeue) = after(
            &s,
            &Executed::Error {
                message: "boom".into(),
                forbidden: false,
            },
            &at(161),
            Duration::from_secs(60),
        );
        assert_eq!(
            (next.phase, next.message.as_str(), requeue),
            (InstallPlanPhase::Failed, "boom", None)
        );
        assert_eq!(
            next.conditions[0].reason,
            InstallPlanConditionReason::InstallComponentFailed
        );
    }

    #[test]
    fn a_forbidden_error_is_retried_past_the_window() {
        let mut s = with_plan(InstallPlanPhase::Installing);
        s.start_time = Some(at(100));
        let (next, _) = after(
            &s,
            &Executed::Error {
                message: "forbidden".into(),
                forbidden: true,
            },
            &at(500),
            Duration::from_secs(60),
        );
        assert_eq!(next.phase, InstallPlanPhase::Installing);
        assert!(
            next.message
                .starts_with("retrying execution due to error: ")
        );
    }
}
