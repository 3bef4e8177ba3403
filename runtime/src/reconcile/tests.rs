//! The loop under paused tokio time, without a cluster: a probe actor whose runs take scripted time and end in
//! scripted outcomes, poked like the registry and messages poke real actors. Plus the pure policy tables.

use super::*;
use messages::msg::{Journal, JournalEntry};
use rstest::rstest;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

struct Probe {
    lp: Loop,
    /// Each run takes `.0` and ends in `.1`; past the script, runs end `Done(Idle)` at once.
    script: VecDeque<(Duration, Outcome)>,
    started: Vec<Duration>,
    t0: Instant,
    in_flight: u32,
    max_in_flight: u32,
    resyncs: u32,
}

impl Actor for Probe {
    type Context = Context<Self>;
}

impl Reconciler for Probe {
    fn control(&mut self) -> &mut Loop {
        &mut self.lp
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        self.started.push(self.t0.elapsed());
        self.in_flight += 1;
        self.max_in_flight = self.max_in_flight.max(self.in_flight);
        let (work, outcome) = self
            .script
            .pop_front()
            .unwrap_or((Duration::ZERO, Outcome::Done(Next::Idle)));
        Box::pin(
            async move {
                tokio::time::sleep(work).await;
                outcome
            }
            .into_actor(self)
            .map(|outcome, act, _| {
                act.in_flight -= 1;
                outcome
            }),
        )
    }

    fn resynced(&mut self) {
        self.resyncs += 1;
    }
}

crate::requeue_handler!(Probe);

#[derive(Message)]
#[rtype(result = "()")]
struct Poke;

impl Handler<Poke> for Probe {
    type Result = ();
    fn handle(&mut self, _: Poke, ctx: &mut Context<Self>) {
        trigger(self, ctx, Cause::Message("poke"));
    }
}

/// The object's current version does not decode (what the registry's `ObjectEvent::Undecodable` does).
#[derive(Message)]
#[rtype(result = "()")]
struct Undecodable;

impl Handler<Undecodable> for Probe {
    type Result = ();
    fn handle(&mut self, _: Undecodable, ctx: &mut Context<Self>) {
        hold(
            self,
            ctx,
            "invalid type: integer `7`, expected a string".into(),
        );
    }
}

/// A version that decodes was observed.
#[derive(Message)]
#[rtype(result = "()")]
struct Observe;

impl Handler<Observe> for Probe {
    type Result = ();
    fn handle(&mut self, _: Observe, ctx: &mut Context<Self>) {
        trigger(self, ctx, Cause::Observed);
    }
}

#[derive(Message)]
#[rtype(result = "Seen")]
struct Inspect;

#[derive(Debug, MessageResponse)]
struct Seen {
    runs: u64,
    started: Vec<Duration>,
    scheduled: Option<Duration>,
    max_in_flight: u32,
    held: Option<String>,
    resyncs: u32,
}

impl Handler<Inspect> for Probe {
    type Result = Seen;
    fn handle(&mut self, _: Inspect, _: &mut Context<Self>) -> Seen {
        Seen {
            runs: self.lp.runs(),
            started: self.started.clone(),
            scheduled: self.lp.scheduled(),
            max_in_flight: self.max_in_flight,
            held: self.lp.held().map(str::to_string),
            resyncs: self.resyncs,
        }
    }
}

fn policy() -> Policy {
    Policy {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(16),
        conflict: Duration::from_millis(100),
        permanent: Duration::from_secs(300),
        deadline: Duration::from_secs(60),
    }
}

fn probe(script: Vec<(Duration, Outcome)>, journal: Option<SharedJournal>) -> Addr<Probe> {
    let mut lp = Loop::new("Probe", ObjectKey::new("ns", "p"), policy());
    if let Some(j) = journal {
        lp.attach(j);
    }
    Probe {
        lp,
        script: script.into(),
        started: Vec::new(),
        t0: Instant::now(),
        in_flight: 0,
        max_in_flight: 0,
        resyncs: 0,
    }
    .start()
}

/// Paused time still rounds each timer up to the next millisecond.
fn near(got: Duration, want: Duration) -> bool {
    got >= want && got <= want + Duration::from_millis(10)
}

async fn wait(secs: u64) {
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

fn transient() -> Outcome {
    Outcome::Failed(Failure {
        class: ErrorClass::Transient,
        message: "503".into(),
    })
}

#[actix_rt::test]
async fn causes_during_a_run_coalesce_into_one_more_run() {
    tokio::time::pause();
    let p = probe(
        vec![(Duration::from_secs(5), Outcome::Done(Next::Idle))],
        None,
    );
    p.do_send(Poke);
    wait(1).await;
    for _ in 0..3 {
        p.do_send(Poke);
    }
    wait(30).await;
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 2, "{seen:?}");
    assert_eq!(seen.max_in_flight, 1, "runs never overlap");
    assert!(seen.started[0] < Duration::from_secs(1));
    assert!(
        near(seen.started[1], Duration::from_secs(5)),
        "the coalesced run follows at once: {seen:?}"
    );
}

#[actix_rt::test]
async fn a_new_cause_replaces_the_pending_timer() {
    tokio::time::pause();
    let after = Outcome::Done(Next::After(Duration::from_secs(10)));
    let p = probe(
        vec![(Duration::ZERO, after.clone()), (Duration::ZERO, after)],
        None,
    );
    p.do_send(Poke);
    wait(4).await;
    assert_eq!(
        p.send(Inspect).await.expect("probe").scheduled,
        Some(Duration::from_secs(10))
    );
    p.do_send(Poke); // runs at 4 s, sets a timer for 14 s; the one for 10 s is gone
    wait(7).await; // 11 s: the first timer would have fired at 10 s
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 2, "{seen:?}");
    wait(4).await; // 15 s: the second timer fired (third run ends Idle)
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 3, "{seen:?}");
    assert!(near(seen.started[2], Duration::from_secs(14)), "{seen:?}");
    assert_eq!(seen.scheduled, None);
}

#[actix_rt::test]
async fn errors_back_off_exponentially_with_jitter_and_progress_resets() {
    tokio::time::pause();
    let p = probe(
        vec![
            (Duration::ZERO, transient()),
            (Duration::ZERO, transient()),
            (Duration::ZERO, transient()),
            (Duration::ZERO, transient()),
            (Duration::ZERO, Outcome::Done(Next::Backoff)),
        ],
        None,
    );
    p.do_send(Poke);
    wait(60).await;
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 6, "{seen:?}");
    let gaps: Vec<Duration> = seen.started.windows(2).map(|w| w[1] - w[0]).collect();
    // Retries 1, 2, 4, 8 s (each jittered into [d/2, d]); then a first `Backoff` wait starts from 1 s again.
    for (gap, full) in gaps.iter().zip([1, 2, 4, 8, 1]) {
        let full = Duration::from_secs(full);
        assert!(
            *gap >= full / 2 && *gap <= full,
            "gap {gap:?} outside [{:?}, {full:?}] in {gaps:?}",
            full / 2
        );
    }
}

#[actix_rt::test]
async fn a_run_past_its_deadline_is_abandoned_and_retried() {
    tokio::time::pause();
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(10)));
    let p = probe(
        vec![(Duration::from_secs(600), Outcome::Done(Next::Idle))],
        Some(journal.clone()),
    );
    p.do_send(Poke);
    wait(62).await;
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 2, "retried after the deadline: {seen:?}");
    let entries: Vec<JournalEntry> = journal
        .lock()
        .expect("journal")
        .entries()
        .cloned()
        .collect();
    assert!(
        matches!(&entries[0].event, JournalEvent::Reconciled { error: Some(e), requeue_ms: Some(ms) } if e.starts_with("deadline") && *ms <= 1000),
        "{entries:?}"
    );
    assert!(matches!(
        &entries[1].event,
        JournalEvent::Reconciled {
            error: None,
            requeue_ms: None
        }
    ));
}

#[actix_rt::test]
async fn the_journal_records_coalesced_causes_once_per_run() {
    tokio::time::pause();
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(10)));
    let p = probe(
        vec![(Duration::from_secs(2), Outcome::Done(Next::Idle))],
        Some(journal.clone()),
    );
    p.do_send(Poke);
    wait(1).await;
    p.do_send(Poke);
    p.do_send(Poke);
    wait(5).await;
    let events: Vec<JournalEvent> = journal
        .lock()
        .expect("journal")
        .entries()
        .map(|e| e.event.clone())
        .collect();
    let coalesced = events
        .iter()
        .filter(|e| matches!(e, JournalEvent::Coalesced { .. }))
        .count();
    let runs = events
        .iter()
        .filter(|e| matches!(e, JournalEvent::Reconciled { .. }))
        .count();
    assert_eq!((coalesced, runs), (1, 2), "{events:?}");
}

#[actix_rt::test]
async fn a_held_loop_drops_its_timer_and_runs_nothing_until_a_version_that_decodes_is_observed() {
    tokio::time::pause();
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(20)));
    let after = Outcome::Done(Next::After(Duration::from_secs(10)));
    let p = probe(vec![(Duration::ZERO, after)], Some(journal.clone()));
    p.do_send(Poke);
    wait(1).await;
    assert_eq!(
        p.send(Inspect).await.expect("probe").scheduled,
        Some(Duration::from_secs(10))
    );
    p.do_send(Undecodable);
    p.do_send(Poke);
    wait(30).await; // past the 10 s timer the hold dropped
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 1, "nothing ran while held: {seen:?}");
    assert_eq!(seen.scheduled, None, "the timer went with the hold");
    assert!(seen.held.is_some_and(|e| e.contains("expected a string")));
    let held: Vec<JournalEvent> = journal
        .lock()
        .expect("journal")
        .entries()
        .filter(|e| matches!(e.event, JournalEvent::Held { .. }))
        .map(|e| e.event.clone())
        .collect();
    assert_eq!(
        held,
        vec![JournalEvent::Held {
            cause: "Message(\"poke\")".into()
        }]
    );
    p.do_send(Observe);
    wait(1).await;
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 2, "a version that decodes runs again: {seen:?}");
    assert_eq!(seen.held, None);
}

#[actix_rt::test]
async fn a_run_asked_for_just_before_the_hold_does_not_start() {
    tokio::time::pause();
    let p = probe(Vec::new(), None);
    // Both are in the mailbox before the kick the poke spawns can run.
    p.do_send(Poke);
    p.do_send(Undecodable);
    wait(5).await;
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!(seen.runs, 0, "{seen:?}");
    p.do_send(Observe);
    wait(1).await;
    assert_eq!(p.send(Inspect).await.expect("probe").runs, 1);
}

#[rstest]
#[case::the_first_retry_waits_the_base(0, 1)]
#[case::each_retry_doubles(3, 8)]
#[case::the_cap_bounds_it(10, 16)]
#[case::a_huge_attempt_does_not_overflow(u32::MAX, 16)]
fn backoff_doubles_up_to_the_cap(#[case] attempt: u32, #[case] secs: u64) {
    assert_eq!(policy().backoff(attempt), Duration::from_secs(secs));
}

#[rstest]
#[case::transient_errors_back_off(ErrorClass::Transient, 2, Duration::from_secs(4))]
#[case::a_deadline_backs_off(ErrorClass::Deadline, 1, Duration::from_secs(2))]
#[case::a_first_conflict_retries_soon(ErrorClass::Conflict, 0, Duration::from_millis(100))]
#[case::conflicts_in_a_row_back_off(ErrorClass::Conflict, 3, Duration::from_millis(800))]
#[case::conflicts_back_off_up_to_the_cap(ErrorClass::Conflict, 20, Duration::from_secs(16))]
#[case::a_permanent_error_waits_long(ErrorClass::Permanent, 0, Duration::from_secs(300))]
fn each_error_class_has_one_policy(
    #[case] class: ErrorClass,
    #[case] attempt: u32,
    #[case] delay: Duration,
) {
    assert_eq!(policy().error_delay(class, attempt), delay);
}

#[rstest]
#[case::the_lowest_draw_halves(0.0, 500)]
#[case::the_middle(0.5, 750)]
#[case::the_highest_draw_keeps_it(1.0, 1000)]
#[case::out_of_range_draws_are_clamped(7.0, 1000)]
fn jitter_draws_in_the_upper_half(#[case] unit: f64, #[case] millis: u64) {
    assert_eq!(
        jitter(Duration::from_secs(1), unit),
        Duration::from_millis(millis)
    );
}

#[rstest]
#[case::idle_sets_no_timer(Outcome::Done(Next::Idle), None)]
#[case::a_named_wait_is_exact(
    Outcome::Done(Next::After(Duration::from_secs(30))),
    Some(Duration::from_secs(30))
)]
#[case::finished_sets_no_timer(Outcome::Finished, None)]
#[case::an_error_backs_off(transient(), Some(Duration::from_secs(1)))]
fn outcomes_map_to_one_timer(#[case] outcome: Outcome, #[case] delay: Option<Duration>) {
    let mut lp = Loop::new("Probe", ObjectKey::new("ns", "p"), policy());
    assert_eq!(lp.delay_for(&outcome, 1.0), delay);
}

#[rstest]
#[case::a_resync_refreshes_then_runs(RequeueReason::Resync, 1)]
#[case::a_dependency_change_only_runs(RequeueReason::DependencyChanged, 0)]
#[actix_rt::test]
async fn a_requeue_asks_for_one_run_and_a_resync_refreshes_first(
    #[case] reason: RequeueReason,
    #[case] resyncs: u32,
) {
    tokio::time::pause();
    let p = probe(Vec::new(), None);
    p.do_send(Requeue { reason });
    wait(1).await;
    let seen = p.send(Inspect).await.expect("probe");
    assert_eq!((seen.runs, seen.resyncs), (1, resyncs), "{seen:?}");
}

#[rstest]
#[case::resync(RequeueReason::Resync, Cause::Resync)]
#[case::dependency(RequeueReason::DependencyChanged, Cause::Message("dependency changed"))]
fn each_requeue_reason_is_one_cause(#[case] reason: RequeueReason, #[case] cause: Cause) {
    assert_eq!(cause_of(reason), cause);
}

#[rstest]
#[case::classified(Some(ErrorClass::Conflict), Outcome::Failed(Failure { class: ErrorClass::Conflict, message: "409".into() }))]
#[case::gone(None, Outcome::Done(Next::Idle))]
fn an_error_ends_as_its_class_says(#[case] class: Option<ErrorClass>, #[case] want: Outcome) {
    let error = std::io::Error::other("409");
    assert_eq!(Outcome::from_error(class, &error), want);
}
