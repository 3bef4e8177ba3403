//! Kubernetes Events on CSV phase changes (OLM `SetPhaseWithEvent`): type `Warning` iff the new phase is
//! `Failed`, Event reason = the CSV reason, note = the status message.
//!
//! Fewer Events than OLM (issue 19: an install cost one Event per phase, a third of its requests): the phases a
//! CSV passes through on its way to `Succeeded` (`Pending`, `InstallReady`, `Installing`) get their Event only
//! when the CSV stays in them for [`SETTLE`] (a CSV waiting for its requirements or its Deployment still says
//! so); a newer phase change cancels the pending one. Every other phase (`Succeeded`, `Failed`, `Replacing`,
//! `Deleting`, ...) is announced at once. So the last phase a CSV reached always has its Event.

use crate::transition::Transition;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use messages::crd::csv::CsvPhase;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a passing phase must last before its Event is published.
pub const SETTLE: Duration = Duration::from_secs(2);

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

/// Whether `phase` is one a CSV normally passes through on its way to `Succeeded` (its Event waits [`SETTLE`]).
pub fn passing(phase: &CsvPhase) -> bool {
    matches!(
        phase,
        CsvPhase::Pending | CsvPhase::InstallReady | CsvPhase::Installing
    )
}

/// Publishes at most the latest of an object's passing announcements once it settled; announcements that are
/// not passing go out at once and cancel the pending one.
#[derive(Default)]
pub struct Debouncer {
    latest: Arc<Mutex<HashMap<String, u64>>>,
    next: AtomicU64,
}

impl Debouncer {
    /// Announce for `key` (one object): run `publish` now when not `passing`, else after [`SETTLE`] unless
    /// another announcement for `key` came meanwhile.
    pub async fn announce<F>(&self, key: String, passing: bool, publish: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let generation = self.next.fetch_add(1, Ordering::Relaxed);
        if !passing {
            self.lock().remove(&key);
            publish.await;
            return;
        }
        self.lock().insert(key.clone(), generation);
        let latest = self.latest.clone();
        tokio::spawn(async move {
            tokio::time::sleep(SETTLE).await;
            let current = {
                let mut latest = latest.lock().unwrap_or_else(PoisonError::into_inner);
                let current = latest.get(&key) == Some(&generation);
                if current {
                    latest.remove(&key);
                }
                current
            };
            if current {
                publish.await;
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.latest.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Publish the Event announcing `t` on the CSV `reference`, debounced as the module docs say.
pub async fn announce_phase(
    debouncer: &Debouncer,
    recorder: Recorder,
    reference: ObjectReference,
    t: &Transition,
) {
    let key = format!(
        "{}/{}/{}",
        reference.namespace.as_deref().unwrap_or_default(),
        reference.name.as_deref().unwrap_or_default(),
        reference.uid.as_deref().unwrap_or_default()
    );
    let event = phase_event(t);
    debouncer
        .announce(key.clone(), passing(&t.phase), async move {
            if let Err(error) = recorder.publish(&event, &reference).await {
                tracing::debug!(csv = %key, error = &error as &dyn std::error::Error, "cannot publish the phase Event");
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::CsvReason;
    use rstest::rstest;
    use std::sync::Arc;

    #[rstest]
    #[case::pending(CsvPhase::Pending, true)]
    #[case::install_ready(CsvPhase::InstallReady, true)]
    #[case::installing(CsvPhase::Installing, true)]
    #[case::succeeded(CsvPhase::Succeeded, false)]
    #[case::failed(CsvPhase::Failed, false)]
    #[case::replacing(CsvPhase::Replacing, false)]
    #[case::deleting(CsvPhase::Deleting, false)]
    fn only_the_way_to_succeeded_is_passing(#[case] phase: CsvPhase, #[case] want: bool) {
        assert_eq!(passing(&phase), want);
    }

    /// Announce `steps` (label, passing) for one object, `gap` apart, and return the labels published.
    async fn published(steps: &[(&'static str, bool)], gap: Duration) -> Vec<&'static str> {
        let debouncer = Debouncer::default();
        let out = Arc::new(Mutex::new(Vec::new()));
        for (label, is_passing) in steps {
            let out = out.clone();
            let label = *label;
            debouncer
                .announce("ns/csv/uid".into(), *is_passing, async move {
                    out.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(label);
                })
                .await;
            tokio::time::sleep(gap).await;
        }
        tokio::time::sleep(SETTLE * 2).await;
        out.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    #[rstest]
    #[case::a_fast_install_announces_succeeded_only(&[("Pending", true), ("InstallReady", true), ("Installing", true), ("Succeeded", false)], Duration::from_millis(100), &["Succeeded"])]
    #[case::a_csv_stuck_in_pending_announces_it(&[("Pending", true)], Duration::ZERO, &["Pending"])]
    #[case::only_the_last_passing_phase_of_a_burst(&[("Pending", true), ("InstallReady", true), ("Installing", true)], Duration::from_millis(100), &["Installing"])]
    #[case::slow_phases_each_announced(&[("Pending", true), ("Installing", true), ("Succeeded", false)], SETTLE * 2, &["Pending", "Installing", "Succeeded"])]
    #[case::failures_go_out_at_once(&[("Failed", false), ("Pending", true)], Duration::ZERO, &["Failed", "Pending"])]
    #[tokio::test(start_paused = true)]
    async fn passing_phases_wait_to_settle(
        #[case] steps: &[(&'static str, bool)],
        #[case] gap: Duration,
        #[case] want: &[&str],
    ) {
        assert_eq!(published(steps, gap).await, want);
    }

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
