//! The ClusterServiceVersion actor: one per CSV, on the reconcile contract (`olm_runtime::reconcile`). Each
//! run is level-triggered: `observe::gather` (stores → classified facts) → `machine::decide` (pure) →
//! `effects::apply` (I/O) → an `Outcome` (the decision's `Next`, or the effects' one classified error); the
//! loop serialises runs, coalesces causes, keeps one timer and backs off with jitter.
//!
//! ```text
//! CSV watch ─▶ Registry ─▶ CsvActor ──status/Events──▶ API server
//! Deployment/SA/Role/ClusterRole/CRD stores (watches.rs) ──Requeue──▶ CsvActor of the owner / users
//! CsvActor ──Requeue on phase change──▶ CsvActors it replaces / replacing it
//! ```

pub mod account_view;
pub mod adopt;
pub mod apply_object;
pub mod chain;
pub mod durations;
pub mod effects;
pub mod facts;
pub mod group_fit;
pub mod health;
pub mod machine;
pub mod membership;
pub mod observe;
mod orphan;
pub mod rbac_grace;
pub mod requirements;
pub mod scoped;
pub mod served;
pub mod stale;
pub mod status;
pub mod watches;

use crate::error;
use crate::metrics::Series;
use crate::routes::{CsvGone, JanitorMsg};
use crate::shared::Shared;
use actix::prelude::*;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::Recorder;
use machine::Effect;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, RequirementStatusReason};
use messages::key::ObjectKey;
use messages::msg::ObjectEvent;
/// Pure renderers used beside the CSV actor (by OperatorGroups too), kept at the top of the crate.
use olm_runtime::children::KeyedActor;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{ErrorClass, Next, Outcome};
use olm_runtime::own_writes::OwnWrites;
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::ObjectActor;
use olm_runtime::trace_context::Join;
use tracing::Instrument;

pub struct CsvActor {
    pub key: ObjectKey,
    pub shared: Shared,
    /// The CSV as last observed or written (`olm_runtime::own_writes`).
    own: OwnWrites<ClusterServiceVersion>,
    recorder: Recorder,
    control: Loop,
    /// The metric series last published for this CSV.
    series: Option<Series>,
    /// The group's state (`observe::Gathered::group_state`) when this CSV failed for good; a change of it is a
    /// cluster change that lets the CSV try again (OLM's `DetectedClusterChange`).
    no_retry_baseline: Option<String>,
}

impl Actor for CsvActor {
    type Context = Context<Self>;
}

impl ObjectActor for CsvActor {
    type Object = ClusterServiceVersion;
}

impl KeyedActor for CsvActor {
    type Shared = Shared;
    const KIND: &'static str = "ClusterServiceVersion";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        let recorder = crate::events::recorder(shared.client.clone());
        Self {
            control: Loop::new(Self::KIND, key.clone(), error::policy())
                .with_chaos(shared.process.chaos.clone()),
            key,
            shared,
            own: OwnWrites::default(),
            recorder,
            series: None,
            no_retry_baseline: None,
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

/// Reconciles that install the CSV continue the trace of the resolution that created it (the
/// `tracing.olm.operatorframework.io/traceparent` annotation written by the catalog-operator); later ones
/// (resyncs, health checks, replacement) start their own trace linked to it.
fn trace_join(phase: &CsvPhase) -> Join {
    match phase {
        CsvPhase::None | CsvPhase::Pending | CsvPhase::InstallReady | CsvPhase::Installing => {
            Join::Child
        }
        CsvPhase::Succeeded
        | CsvPhase::Failed
        | CsvPhase::Unknown
        | CsvPhase::Replacing
        | CsvPhase::Deleting
        | CsvPhase::Other(_) => Join::Link,
    }
}

impl Reconciler for CsvActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    /// Gather → decide → apply; [`CsvActor::settle`] records what the effects left.
    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let Some(csv) = self.own.latest().cloned() else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        if !self.shared.stores.csv.ready.is_open() {
            // No decision before every store listed once; `watches::mark_ready` then requeues every CSV.
            return reconcile::now(Outcome::Done(Next::Idle));
        }
        if let Some(collect) = self.collect_if_orphaned(&csv) {
            return collect;
        }
        let mut gathered = observe::gather(&self.shared, &csv, Timestamp::now());
        self.compare_with_no_retry_baseline(&mut gathered);
        let decision = machine::decide(&gathered.observed);
        let ran = Ran {
            before: gathered.observed.phase.clone(),
            neighbours: gathered.chain.clone(),
            group_state: gathered.group_state.clone(),
            counts_upgrade: decision.effects.contains(&Effect::CountUpgrade),
            next: decision.next,
        };
        let span = tracing::info_span!("csv.reconcile", csv.namespace = %self.key.namespace_or_empty(), csv.name = %self.key.name, phase = %ran.before, mailbox.wait_ms = self.control.queue_wait().as_millis() as u64);
        if let Some(annotations) = csv.metadata.annotations.as_ref() {
            olm_runtime::trace_context::join(&span, annotations, trace_join(&ran.before));
        }
        tracing::debug!(parent: &span, step = ?decision.step, effects = ?decision.effects, next = ?decision.next, "decided");
        let plan = self.plan(csv, decision, gathered);
        let fut = effects::apply(self.shared.client.clone(), self.recorder.clone(), plan)
            .instrument(span);
        Box::pin(
            fut.into_actor(self)
                .map(move |applied, act, _ctx| act.settle(applied, ran)),
        )
    }

    fn resynced(&mut self) {
        self.own.resync(&self.shared.stores.csvs, &self.key);
    }
}

/// What a run keeps from its decision for the moment its effects end.
struct Ran {
    /// The phase decided from.
    before: CsvPhase,
    /// The CSVs of its replacement chain, requeued when the phase changes.
    neighbours: Vec<String>,
    group_state: String,
    counts_upgrade: bool,
    next: Next,
}

impl CsvActor {
    /// A CSV failed for good (`InstallComponentFailedNoRetry`) tries again when its group's state changed since
    /// the failure; without a baseline (the operator restarted since) the group as it is now is it.
    fn compare_with_no_retry_baseline(&mut self, gathered: &mut observe::Gathered) {
        let no_retry = gathered.observed.phase == messages::crd::csv::CsvPhase::Failed
            && gathered.observed.reason
                == messages::crd::csv::CsvReason::InstallComponentFailedNoRetry;
        if no_retry {
            let baseline = self
                .no_retry_baseline
                .get_or_insert_with(|| gathered.group_state.clone());
            gathered.observed.cluster_changed = *baseline != gathered.group_state;
        } else {
            self.no_retry_baseline = None;
        }
    }

    /// The effects' input for `decision`.
    fn plan(
        &self,
        csv: std::sync::Arc<ClusterServiceVersion>,
        decision: machine::Decision,
        gathered: observe::Gathered,
    ) -> effects::Plan {
        let rbac_in_place = gathered
            .requirement_statuses
            .iter()
            .filter(|s| s.kind == "ServiceAccount")
            .all(|s| s.status == RequirementStatusReason::Present);
        effects::Plan {
            key: self.key.clone(),
            csv,
            decision,
            requirement_statuses: if gathered.observed.copied {
                Vec::new()
            } else {
                gathered.requirement_statuses
            },
            rendered: gathered.rendered,
            rbac_in_place,
            shared: self.shared.clone(),
            operator_condition: gathered.operator_condition,
        }
    }

    /// Record what the effects wrote, publish the metrics, requeue the chain on a phase change, and say how the
    /// run ended.
    fn settle(&mut self, applied: effects::Applied, ran: Ran) -> Outcome {
        if let Some(written) = applied.written {
            // Failed for good now: remember the group as it was when deciding to install.
            if written.reason() == messages::crd::csv::CsvReason::InstallComponentFailedNoRetry
                && self.no_retry_baseline.is_none()
            {
                self.no_retry_baseline = Some(ran.group_state);
            }
            self.own.wrote(written);
        }
        if ran.counts_upgrade && applied.announced {
            self.shared.stores.csv.metrics.count_upgrade();
        }
        self.publish_metrics();
        let after = self.own.latest().map(|c| c.phase()).unwrap_or_default();
        if after != ran.before {
            self.control.reset_backoff();
            let namespace = self.key.namespace_or_empty().to_string();
            for name in &ran.neighbours {
                watches::requeue(
                    &self.shared,
                    ObjectKey::new(namespace.clone(), name.clone()),
                );
            }
        }
        if applied.deleted {
            return Outcome::Finished;
        }
        match &applied.error {
            Some(e) => {
                if error::class(e.kind()) == ErrorClass::Conflict {
                    self.own.conflicted(&self.shared.stores.csvs, &self.key);
                }
                Outcome::failed(error::class(e.kind()), e)
            }
            None => Outcome::Done(ran.next),
        }
    }

    fn publish_metrics(&mut self) {
        let metrics = &self.shared.stores.csv.metrics;
        metrics.set_count(self.shared.stores.csvs.state().len());
        let Some(csv) = self.own.latest() else {
            return;
        };
        let series = Series {
            namespace: self.key.namespace_or_empty().to_string(),
            name: self.key.name.clone(),
            version: csv.spec.version.clone().unwrap_or_default(),
            phase: csv.phase().as_str().to_string(),
            reason: csv.reason().as_str().to_string(),
        };
        if self.series.as_ref() != Some(&series) {
            let started = durations::started(
                csv,
                self.shared
                    .stores
                    .csv
                    .subscriptions
                    .state()
                    .iter()
                    .map(|s| s.as_ref()),
            );
            let at = k8s_openapi::jiff::Timestamp::now();
            let replaces = csv.spec.replaces.is_some();
            if let Some((kind, seconds)) =
                durations::to_observe(self.series.as_ref(), &series, replaces, started, at)
            {
                metrics.observe_duration(kind, seconds);
            }
            metrics.record(
                &mut self.series,
                series,
                csv.reason() == messages::crd::csv::CsvReason::Copied,
            );
        }
    }

    /// The CSV is gone: its namespaced objects go with it through owner references (garbage collector);
    /// cluster-scoped objects cannot carry an owner reference to a namespaced CSV: the janitor deletes them by
    /// owner labels (`crate::janitor`).
    fn cleanup(&mut self) {
        let mut series = self.series.take();
        let metrics = &self.shared.stores.csv.metrics;
        metrics.forget(&mut series);
        metrics.set_count(self.shared.stores.csvs.state().len());
        // The CSVs replacing this one may be waiting for it to be gone.
        let namespace = self.key.namespace_or_empty().to_string();
        watches::requeue_where(&self.shared, |c| {
            c.metadata.namespace.as_deref() == Some(namespace.as_str())
                && c.spec.replaces.as_deref() == Some(self.key.name.as_str())
        });
        // What it served and its cluster RBAC: deleted by the janitor, the one writer of those, with retries.
        let csv = self.own.latest().cloned();
        self.shared
            .registries
            .janitor
            .do_send(JanitorMsg::CsvGone(CsvGone {
                key: self.key.clone(),
                uid: csv.as_ref().and_then(|c| c.metadata.uid.clone()),
                csv,
            }));
    }
}

impl Handler<ObjectEvent<ClusterServiceVersion>> for CsvActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<ClusterServiceVersion>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(csv) => {
                crate::operator_group::notify::member_changed(&self.shared, &self.key, Some(&csv));
                crate::operator_view::touch_labelled(&self.shared, csv.metadata.labels.as_ref());
                self.own.observe(csv);
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => {
                crate::operator_group::notify::member_changed(
                    &self.shared,
                    &self.key,
                    self.own.latest().map(|c| c.as_ref()),
                );
                self.cleanup();
                ctx.stop();
            }
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

olm_runtime::requeue_handler!(CsvActor);

#[cfg(test)]
mod tests;
