//! The one reconcile contract of every object actor, in kube-runtime's spirit (`Controller` + `Action` +
//! `error_policy`), shaped for actix actors.
//!
//! An actor owns one object and implements [`Reconciler`]: `run` is one pass of observe (stores and the
//! data its messages carried) → pure decide → apply effects, ending in an [`Outcome`]: what to do next
//! ([`Next`]) or one classified error ([`ErrorClass`]). The actor never schedules itself: it calls
//! [`trigger`] for every cause (watch event, message, timer) and the [`Loop`] it embeds owns the rest:
//!
//! - **serialisation**: one `run` at a time per object, holding the mailbox (`ctx.wait`), so nothing changes
//!   the actor's state under a run;
//! - **coalescing**: a run starts behind the messages already queued; every cause until it starts joins it;
//! - **one timer**: each outcome replaces the pending timer (a cause that triggers a run cancels it);
//! - **backoff with jitter**: errors (per class) and `Next::Backoff` waits grow exponentially up to a cap,
//!   each delay drawn in `[d/2, d]` so that many objects failing together do not retry together; a run
//!   that ends well resets the counters;
//! - **a deadline**: a run taking longer is abandoned (level-triggered: the next run redoes what is missing);
//! - **the journal**: every run's outcome (and every coalesced cause) is recorded in the kind's journal;
//! - **a hold**: while the object's current version does not decode ([`hold`]), no run starts and the pending
//!   timer is dropped: the actor would act on a stale version. Causes are journaled as held; the next
//!   `Cause::Observed` (a version that decodes) lifts the hold and runs.
//!
//! ```text
//!  cause (event, message, timer) ─▶ trigger ─┬─ run already asked for? ─▶ coalesced into it
//!                                            └─ else: kick behind the queued messages ─▶ run (observe →
//!                                               decide → apply, mailbox held) ─▶ Outcome
//!  Outcome ─▶ journal; one timer (Next::After / backoff / error policy), replaced by the next run
//! ```

use crate::chaos::{self, FaultKind, Injector, Site};
use crate::journal::SharedJournal;
use crate::outcome::{ErrorClass, Failure, Next, Outcome, Policy, jitter};
use actix::prelude::*;
use messages::key::ObjectKey;
use messages::msg::{JournalEvent, Requeue, RequeueReason};
use std::sync::Arc;
use std::time::Duration;

/// Why a run was asked for (journaled; logs name it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The watch delivered a new version of the object.
    Observed,
    /// A message carrying data for this object (what changed elsewhere).
    Message(&'static str),
    /// The loop's own timer (a `Next::After`, a backoff, an error retry).
    Timer,
    /// The registry's periodic resync.
    Resync,
}

/// The state of the loop, embedded in each object actor.
pub struct Loop {
    kind: &'static str,
    key: ObjectKey,
    policy: Policy,
    journal: Option<SharedJournal>,
    running: bool,
    /// A run is about to start (spawned behind the messages already queued).
    kick_pending: bool,
    /// A cause arrived after the kick (journaled once per run).
    dirty: bool,
    timer: Option<SpawnHandle>,
    /// Consecutive failed runs, and consecutive `Next::Backoff` waits.
    failures: u32,
    waits: u32,
    runs: u64,
    /// The delay of the pending timer (tests and the journal read it).
    scheduled: Option<Duration>,
    /// The fault injector when chaos is on (`OLM_RS_CHAOS`).
    chaos: Option<Arc<Injector>>,
    /// Why the loop holds: the decoding error of the object's current version ([`hold`]).
    held: Option<String>,
    /// Mailbox wait vs handler time ([`crate::actor_metrics`]): when the pending run was asked for, when the
    /// current run started, and how long the last run waited.
    kicked_at: Option<std::time::Instant>,
    started_at: Option<std::time::Instant>,
    queue_wait: Duration,
}

impl Loop {
    pub fn new(kind: &'static str, key: ObjectKey, policy: Policy) -> Self {
        Self {
            kind,
            key,
            policy,
            journal: None,
            running: false,
            kick_pending: false,
            dirty: false,
            timer: None,
            failures: 0,
            waits: 0,
            runs: 0,
            scheduled: None,
            chaos: None,
            held: None,
            kicked_at: None,
            started_at: None,
            queue_wait: Duration::ZERO,
        }
    }

    /// Make faults at each run's start with this injector (the process's, `crate::chaos::from_env`; none: no
    /// faults).
    pub fn with_chaos(mut self, injector: Option<Arc<Injector>>) -> Self {
        self.chaos = injector;
        self
    }

    /// The fault of this run's start, if chaos is on and decides one (journaled here).
    fn inject(&self) -> Option<chaos::Decision> {
        let injector = self.chaos.as_ref()?;
        let decision = injector.next(self.kind, &self.key, Site::Run)?;
        self.record(decision.event(injector.config().seed));
        Some(decision)
    }

    /// Record outcomes in this journal (the kind's registry journal).
    pub fn attach(&mut self, journal: SharedJournal) {
        self.journal = Some(journal);
    }

    /// How long the current (or last) run waited in the mailbox before it started (span attribute).
    pub fn queue_wait(&self) -> Duration {
        self.queue_wait
    }

    pub fn runs(&self) -> u64 {
        self.runs
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The decoding error the loop holds on, while the object's current version does not decode.
    pub fn held(&self) -> Option<&str> {
        self.held.as_deref()
    }

    /// The delay of the pending timer, if one is set.
    pub fn scheduled(&self) -> Option<Duration> {
        self.scheduled
    }

    /// Forget progress counters (e.g. the object changed phase: a new wait starts from the base delay).
    pub fn reset_backoff(&mut self) {
        self.failures = 0;
        self.waits = 0;
    }

    fn record(&self, event: JournalEvent) {
        if let Some(journal) = self.journal.as_ref() {
            crate::journal::record(journal, self.kind, &self.key, event);
        }
    }

    /// The delay the outcome asks for, updating the counters (pure but for the jitter draw `unit`).
    pub fn delay_for(&mut self, outcome: &Outcome, unit: f64) -> Option<Duration> {
        match outcome {
            Outcome::Finished => None,
            Outcome::Failed(failure) => {
                let attempt = self.failures;
                self.failures = self.failures.saturating_add(1);
                Some(jitter(
                    self.policy.error_delay(failure.class, attempt),
                    unit,
                ))
            }
            Outcome::Done(next) => {
                self.failures = 0;
                match next {
                    Next::Idle => {
                        self.waits = 0;
                        None
                    }
                    Next::After(d) => {
                        self.waits = 0;
                        Some(*d)
                    }
                    Next::Backoff => {
                        let attempt = self.waits;
                        self.waits = self.waits.saturating_add(1);
                        Some(jitter(self.policy.backoff(attempt), unit))
                    }
                }
            }
        }
    }
}

/// An object actor on the contract.
pub trait Reconciler: Actor<Context = Context<Self>> {
    fn control(&mut self) -> &mut Loop;

    /// One pass: observe → decide → apply. The loop runs one at a time and bounds it by its deadline.
    fn run(&mut self, ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome>;

    /// The registry's periodic resync is about to run: refresh what the actor observed from the store (an
    /// actor keeping its own writes, `crate::own_writes`, takes the store's version). Nothing by default.
    fn resynced(&mut self) {}
}

/// A run that ends at once with `outcome` (an early return of [`Reconciler::run`]).
pub fn now<A: Reconciler>(outcome: Outcome) -> ResponseActFuture<A, Outcome> {
    Box::pin(actix::fut::ready(outcome))
}

/// The cause a [`Requeue`] stands for.
pub fn cause_of(reason: RequeueReason) -> Cause {
    match reason {
        RequeueReason::Resync => Cause::Resync,
        RequeueReason::DependencyChanged => Cause::Message("dependency changed"),
    }
}

/// The contract's `Handler<Requeue>`: a resync lets the actor refresh what it observed
/// ([`Reconciler::resynced`]) first; then a run is asked for. Every object actor's handler is this call.
pub fn requeue<A: Reconciler>(act: &mut A, ctx: &mut Context<A>, msg: Requeue) {
    if msg.reason == RequeueReason::Resync {
        act.resynced();
    }
    trigger(act, ctx, cause_of(msg.reason));
}

/// Writes the contract's `Handler<Requeue>` ([`requeue`]) for an actor on it: `requeue_handler!(CsvActor);`.
/// A blanket `impl<A: Reconciler> Handler<Requeue> for A` is refused by Rust's coherence rules (actix's
/// `Handler` is foreign to the operator crates), so the one impl is written by this macro instead.
#[macro_export]
macro_rules! requeue_handler {
    ($actor:ty) => {
        impl ::actix::Handler<::messages::msg::Requeue> for $actor {
            type Result = ();

            fn handle(&mut self, msg: ::messages::msg::Requeue, ctx: &mut Self::Context) {
                $crate::reconcile::requeue(self, ctx, msg);
            }
        }
    };
}

/// Hold the loop: the object's current version does not decode (`error`), so the version the actor holds is
/// stale and acting on it (writing its status, installing what it asked for) would undo what its author meant.
/// The pending timer is dropped and no run starts until a `Cause::Observed` trigger (a version that decodes);
/// causes meanwhile are journaled as [`JournalEvent::Held`]. A deletion is still the actor's to handle.
pub fn hold<A: Reconciler>(act: &mut A, ctx: &mut Context<A>, error: String) {
    let lp = act.control();
    tracing::warn!(kind = lp.kind, key = %lp.key, %error, "the object's current version does not decode; holding its reconciles until one does");
    if let Some(handle) = lp.timer.take() {
        ctx.cancel_future(handle);
    }
    lp.scheduled = None;
    lp.held = Some(error);
}

/// Ask for a run. The run starts once the messages already in the mailbox are handled (so a burst of causes
/// makes one run); causes arriving before it starts are coalesced into it. A run holds the actor's mailbox
/// (`ctx.wait`): runs of one object never overlap and nothing changes the actor's state under a run. A new run
/// cancels the pending timer.
pub fn trigger<A: Reconciler>(act: &mut A, ctx: &mut Context<A>, cause: Cause) {
    let lp = act.control();
    if lp.held.is_some() {
        if cause != Cause::Observed {
            lp.record(JournalEvent::Held {
                cause: format!("{cause:?}"),
            });
            return;
        }
        tracing::info!(kind = lp.kind, key = %lp.key, "the object decodes again; reconciling");
        lp.held = None;
    }
    if lp.kick_pending {
        if !lp.dirty {
            lp.record(JournalEvent::Coalesced {
                cause: format!("{cause:?}"),
            });
        }
        lp.dirty = true;
        return;
    }
    lp.kick_pending = true;
    lp.kicked_at = Some(std::time::Instant::now());
    if let Some(m) = crate::actor_metrics::global() {
        m.queued(lp.kind);
    }
    ctx.spawn(actix::fut::ready(()).map(|(), act: &mut A, ctx| start(act, ctx)));
}

fn start<A: Reconciler>(act: &mut A, ctx: &mut Context<A>) {
    let lp = act.control();
    lp.kick_pending = false;
    lp.dirty = false;
    if lp.held.is_some() {
        // Asked for before the hold: the version it would run on is stale.
        if let Some(m) = crate::actor_metrics::global() {
            m.unqueued(lp.kind);
        }
        lp.kicked_at = None;
        lp.record(JournalEvent::Held {
            cause: "run asked for before the hold".to_string(),
        });
        return;
    }
    if let Some(handle) = lp.timer.take() {
        ctx.cancel_future(handle);
    }
    lp.scheduled = None;
    lp.running = true;
    lp.runs += 1;
    let now = std::time::Instant::now();
    lp.queue_wait = lp.kicked_at.take().map(|t| now - t).unwrap_or_default();
    lp.started_at = Some(now);
    if let Some(m) = crate::actor_metrics::global() {
        m.started(lp.kind, lp.queue_wait);
    }
    let deadline = lp.policy.deadline;
    let mut slow = None;
    if let Some(decision) = lp.inject() {
        match decision.fault.kind {
            FaultKind::Panic => panic!(
                "chaos: injected panic in {} {} (run decision {})",
                lp.kind, lp.key, decision.n
            ),
            FaultKind::Stop => {
                lp.running = false;
                ctx.stop();
                return;
            }
            FaultKind::FailEffect => {
                let failure = Failure {
                    class: ErrorClass::Transient,
                    message: "chaos: injected failure of the run's writes".to_string(),
                };
                finish(act, ctx, Outcome::Failed(failure));
                return;
            }
            FaultKind::SlowEffect => slow = decision.fault.delay,
            FaultKind::Drop | FaultKind::Delay | FaultKind::Duplicate | FaultKind::Reorder => {}
        }
    }
    let run: ResponseActFuture<A, Outcome> = match slow {
        Some(delay) => Box::pin(
            actix::fut::wrap_future::<_, A>(tokio::time::sleep(delay))
                .then(|(), act: &mut A, ctx| act.run(ctx)),
        ),
        None => act.run(ctx),
    };
    let fut = run.timeout(deadline).map(move |result, act, ctx| {
        let outcome = result.unwrap_or_else(|()| {
            Outcome::Failed(Failure {
                class: ErrorClass::Deadline,
                message: format!("run abandoned after {deadline:?}"),
            })
        });
        finish(act, ctx, outcome);
    });
    ctx.wait(fut);
}

fn finish<A: Reconciler>(act: &mut A, ctx: &mut Context<A>, outcome: Outcome) {
    let lp = act.control();
    lp.running = false;
    if let (Some(m), Some(t)) = (crate::actor_metrics::global(), lp.started_at.take()) {
        m.finished(lp.kind, t.elapsed(), &outcome);
    }
    let delay = lp.delay_for(&outcome, rand::random::<f64>());
    if let Outcome::Failed(failure) = &outcome {
        tracing::warn!(kind = lp.kind, key = %lp.key, class = failure.class.as_str(), error = %failure.message, retry_in = ?delay, "reconcile failed");
    }
    lp.record(JournalEvent::Reconciled {
        error: match &outcome {
            Outcome::Failed(f) => Some(format!("{}: {}", f.class.as_str(), f.message)),
            _ => None,
        },
        requeue_ms: delay.map(|d| d.as_millis() as u64),
    });
    if outcome == Outcome::Finished || lp.kick_pending {
        return;
    }
    if let Some(delay) = delay {
        let handle = ctx.run_later(delay, |act, ctx| {
            act.control().timer = None;
            trigger(act, ctx, Cause::Timer);
        });
        let lp = act.control();
        lp.scheduled = Some(delay);
        lp.timer = Some(handle);
    }
}

#[cfg(test)]
mod tests;
