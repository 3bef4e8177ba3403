//! Kubernetes Events on CSV phase changes (OLM `SetPhaseWithEvent`): type `Warning` iff the new phase is
//! `Failed`, Event reason = the CSV reason, note = the status message.

use crate::csv::machine::Transition;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use messages::crd::csv::CsvPhase;

/// The controller name on our Events.
pub const REPORTER: &str = "olm-operator";

pub fn recorder(client: kube::Client) -> Recorder {
    Recorder::new(
        client,
        Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        },
    )
}

/// The Event announcing `t`.
pub fn phase_event(t: &Transition) -> Event {
    let type_ = if t.phase == CsvPhase::Failed {
        EventType::Warning
    } else {
        EventType::Normal
    };
    // Event notes are limited to 1 kB.
    let note: String = t.message.chars().take(1000).collect();
    Event {
        type_,
        reason: t.reason.as_str().to_string(),
        note: Some(note),
        action: format!("Phase{}", t.phase.as_str()),
        secondary: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::CsvReason;
    use rstest::rstest;

    #[rstest]
    #[case::a_failure_is_a_warning(
        CsvPhase::Failed,
        CsvReason::InvalidInstallStrategy,
        EventType::Warning
    )]
    #[case::progress_is_normal(CsvPhase::Succeeded, CsvReason::InstallSucceeded, EventType::Normal)]
    fn the_event_type_follows_the_phase(
        #[case] phase: CsvPhase,
        #[case] reason: CsvReason,
        #[case] type_: EventType,
    ) {
        let e = phase_event(&Transition::new(phase, reason.clone(), "m"));
        assert_eq!(e.type_, type_);
        assert_eq!(e.reason, reason.as_str());
        assert_eq!(e.note.as_deref(), Some("m"));
    }
}
