//! Controller-style metrics of the object actors, under the names client-go's workqueue and controller-runtime
//! use (so dashboards written for controllers read them): per actor kind, the reconciles waiting to run
//! (`workqueue_depth{name}`: a run asked for and not started, i.e. behind other messages in the actor's
//! mailbox), the mailbox wait (`workqueue_queue_duration_seconds{name}`: first cause → run start), the handler
//! time (`workqueue_work_duration_seconds{name}`), the outcomes (`controller_runtime_reconcile_total{controller,
//! result}` with result `success|error|requeue|requeue_after`, `controller_runtime_reconcile_errors_total
//! {controller}`), `olm_rs_actor_restarts_total{kind}` (an actor found dead and started again by its
//! registry) and `olm_rs_watch_handler_panics_total{kind}` (a watch's change handler that panicked). The reconcile loop ([`crate::reconcile`]) and the registry report here through a process-wide
//! handle set by [`crate::metrics::Metrics::new`]: the loop has no other path to the registry of metrics.

use crate::outcome::{Next, Outcome};
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};
use std::sync::OnceLock;
use std::time::Duration;

/// Seconds: from 1 ms to about 2 minutes (reconciles hold the mailbox; a run is abandoned at its deadline).
const BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

#[derive(Clone)]
pub struct ActorMetrics {
    depth: IntGaugeVec,
    queue: HistogramVec,
    work: HistogramVec,
    reconciles: IntCounterVec,
    errors: IntCounterVec,
    restarts: IntCounterVec,
    handler_panics: IntCounterVec,
}

static GLOBAL: OnceLock<ActorMetrics> = OnceLock::new();

/// The `result` label of controller-runtime's reconcile counter for one outcome.
pub fn result_label(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Failed(_) => "error",
        Outcome::Done(Next::After(_)) => "requeue_after",
        Outcome::Done(Next::Backoff) => "requeue",
        Outcome::Done(Next::Idle) | Outcome::Finished => "success",
    }
}

impl ActorMetrics {
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let histogram = |name: &str, help: &str| {
            HistogramVec::new(
                HistogramOpts::new(name, help).buckets(BUCKETS.to_vec()),
                &["name"],
            )
        };
        let m = Self {
            depth: IntGaugeVec::new(
                Opts::new(
                    "workqueue_depth",
                    "Reconciles asked for and not started yet (waiting in actor mailboxes), by actor kind",
                ),
                &["name"],
            )?,
            queue: histogram(
                "workqueue_queue_duration_seconds",
                "How long a reconcile waited in its actor's mailbox before it ran, by actor kind",
            )?,
            work: histogram(
                "workqueue_work_duration_seconds",
                "How long a reconcile ran (observe, decide, apply), by actor kind",
            )?,
            reconciles: IntCounterVec::new(
                Opts::new(
                    "controller_runtime_reconcile_total",
                    "Reconciles by actor kind and result (success, error, requeue, requeue_after)",
                ),
                &["controller", "result"],
            )?,
            errors: IntCounterVec::new(
                Opts::new(
                    "controller_runtime_reconcile_errors_total",
                    "Reconciles that failed, by actor kind",
                ),
                &["controller"],
            )?,
            restarts: IntCounterVec::new(
                Opts::new(
                    "olm_rs_actor_restarts_total",
                    "Object actors found dead (a panic closes an actix mailbox) and started again by their registry",
                ),
                &["kind"],
            )?,
            handler_panics: IntCounterVec::new(
                Opts::new(
                    "olm_rs_watch_handler_panics_total",
                    "Panics caught in a watch's change handler (the watch and its store went on), by kind watched",
                ),
                &["kind"],
            )?,
        };
        registry.register(Box::new(m.depth.clone()))?;
        registry.register(Box::new(m.queue.clone()))?;
        registry.register(Box::new(m.work.clone()))?;
        registry.register(Box::new(m.reconciles.clone()))?;
        registry.register(Box::new(m.errors.clone()))?;
        registry.register(Box::new(m.restarts.clone()))?;
        registry.register(Box::new(m.handler_panics.clone()))?;
        Ok(m)
    }

    /// Publish every series of `kind` at zero, so a kind shows (and alerts can read it) before it is busy.
    pub fn zero(&self, kind: &str) {
        self.depth.with_label_values(&[kind]);
        self.errors.with_label_values(&[kind]);
        self.restarts.with_label_values(&[kind]);
        for result in ["success", "error", "requeue", "requeue_after"] {
            self.reconciles.with_label_values(&[kind, result]);
        }
    }

    pub fn queued(&self, kind: &str) {
        self.depth.with_label_values(&[kind]).inc();
    }

    /// A queued run that will not start (its loop holds, `crate::reconcile::hold`).
    pub fn unqueued(&self, kind: &str) {
        self.depth.with_label_values(&[kind]).dec();
    }

    pub fn started(&self, kind: &str, waited: Duration) {
        self.depth.with_label_values(&[kind]).dec();
        self.queue
            .with_label_values(&[kind])
            .observe(waited.as_secs_f64());
    }

    pub fn finished(&self, kind: &str, ran: Duration, outcome: &Outcome) {
        self.work
            .with_label_values(&[kind])
            .observe(ran.as_secs_f64());
        self.reconciles
            .with_label_values(&[kind, result_label(outcome)])
            .inc();
        if matches!(outcome, Outcome::Failed(_)) {
            self.errors.with_label_values(&[kind]).inc();
        }
    }

    pub fn restarted(&self, kind: &str) {
        self.restarts.with_label_values(&[kind]).inc();
    }
}

/// Count a panic caught in the change handler of a watch of `kind` (`crate::watch::spawn_store`).
pub fn handler_panicked(kind: &str) {
    if let Some(m) = global() {
        m.handler_panics.with_label_values(&[kind]).inc();
    }
}

/// Make `metrics` the process's actor metrics (the first call wins: one registry per process).
pub fn install(metrics: ActorMetrics) {
    let _ = GLOBAL.set(metrics);
}

/// The process's actor metrics, once [`install`]ed (unit tests of actors run without).
pub fn global() -> Option<&'static ActorMetrics> {
    GLOBAL.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{ErrorClass, Failure};
    use rstest::rstest;

    #[rstest]
    #[case::idle(Outcome::Done(Next::Idle), "success")]
    #[case::finished(Outcome::Finished, "success")]
    #[case::after(Outcome::Done(Next::After(Duration::from_secs(1))), "requeue_after")]
    #[case::backoff(Outcome::Done(Next::Backoff), "requeue")]
    #[case::failed(Outcome::Failed(Failure { class: ErrorClass::Transient, message: "x".into() }), "error")]
    fn outcomes_map_to_controller_runtime_results(#[case] outcome: Outcome, #[case] want: &str) {
        assert_eq!(result_label(&outcome), want);
    }

    #[test]
    fn a_run_moves_the_depth_and_counts_its_result_and_an_error() {
        let registry = Registry::new();
        let m = ActorMetrics::register(&registry).expect("register");
        m.zero("Widget");
        let text = || {
            prometheus::TextEncoder::new()
                .encode_to_string(&registry.gather())
                .expect("encode")
        };
        let t = text();
        assert!(t.contains(r#"workqueue_depth{name="Widget"} 0"#), "{t}");
        assert!(
            t.contains(r#"controller_runtime_reconcile_errors_total{controller="Widget"} 0"#),
            "zero values are published: {t}"
        );
        m.queued("Widget");
        assert!(text().contains(r#"workqueue_depth{name="Widget"} 1"#));
        m.started("Widget", Duration::from_millis(20));
        m.finished(
            "Widget",
            Duration::from_millis(5),
            &Outcome::Failed(Failure {
                class: ErrorClass::Conflict,
                message: "409".into(),
            }),
        );
        let t = text();
        assert!(t.contains(r#"workqueue_depth{name="Widget"} 0"#), "{t}");
        assert!(
            t.contains(
                r#"controller_runtime_reconcile_total{controller="Widget",result="error"} 1"#
            ),
            "{t}"
        );
        assert!(
            t.contains(r#"controller_runtime_reconcile_errors_total{controller="Widget"} 1"#),
            "{t}"
        );
        assert!(
            t.contains(r#"workqueue_queue_duration_seconds_bucket{name="Widget",le="0.025"} 1"#),
            "{t}"
        );
        m.restarted("Widget");
        assert!(text().contains(r#"olm_rs_actor_restarts_total{kind="Widget"} 1"#));
    }
}
