//! The injector's tables (parsing, decisions, replay) and, under paused time, a registry of actors on the
//! reconcile loop surviving each fault kind.

use super::*;
use crate::children::KeyedActor;
use crate::journal::SharedJournal;
use crate::metrics::Metrics;
use crate::outcome::{Next, Outcome, Policy};
use crate::reconcile::{self, Cause, Loop, Reconciler};
use crate::registry::{Broadcast, Filter, Forward, ObjectActor, Registry, Watched};
use actix::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher;
use messages::msg::{Journal, ObjectEvent, Requeue, RequeueReason};
use rstest::rstest;
use std::time::Duration;

// ---- parsing ----

#[rstest]
#[case::seed_only("seed=7", Ok(ChaosConfig::new(7)))]
#[case::rates_and_delay(
    "seed=42, panic=0.01, drop=0.02, max_delay_ms=250",
    Ok(ChaosConfig { max_delay: Duration::from_millis(250), ..ChaosConfig::new(42).with_rate(FaultKind::Panic, 0.01).with_rate(FaultKind::Drop, 0.02) })
)]
#[case::duplicate_alias("seed=1,duplicate=0.5", Ok(ChaosConfig::new(1).with_rate(FaultKind::Duplicate, 0.5)))]
#[case::only_kinds(
    "seed=1,only=Subscription|ClusterServiceVersion",
    Ok(ChaosConfig { only: Some(vec!["Subscription".into(), "ClusterServiceVersion".into()]), ..ChaosConfig::new(1) })
)]
#[case::all_then_override("seed=3,all=0.1,panic=0", Ok({
    let mut c = ChaosConfig::new(3);
    for k in FaultKind::ALL { c = c.with_rate(k, 0.1); }
    c.with_rate(FaultKind::Panic, 0.0)
}))]
#[case::no_seed("panic=0.1", Err(ConfigError::NoSeed))]
#[case::not_key_value("seed=1,panic", Err(ConfigError::NotKeyValue("panic".into())))]
#[case::unknown_key("seed=1,explode=0.1", Err(ConfigError::UnknownKey("explode".into())))]
#[case::bad_number("seed=x", Err(ConfigError::NotANumber { key: "seed".into(), value: "x".into() }))]
#[case::rate_above_one("seed=1,drop=1.5", Err(ConfigError::RateOutOfRange { key: "drop".into(), value: "1.5".into() }))]
#[case::negative_rate("seed=1,drop=-0.1", Err(ConfigError::RateOutOfRange { key: "drop".into(), value: "-0.1".into() }))]
#[case::site_over_one("seed=1,panic=0.6,stop=0.6", Err(ConfigError::SiteOverOne("run")))]
#[case::given_twice("seed=1,seed=2", Err(ConfigError::Duplicate("seed".into())))]
fn parses_olm_rs_chaos(#[case] text: &str, #[case] want: Result<ChaosConfig, ConfigError>) {
    assert_eq!(ChaosConfig::parse(text), want);
}

#[test]
fn the_canonical_text_parses_back() {
    let config = ChaosConfig::parse("seed=9,all=0.05,max_delay_ms=300,only=A|B").expect("parse");
    assert_eq!(ChaosConfig::parse(&config.to_text()), Ok(config));
}

// ---- decisions ----

fn key() -> String {
    "ns/a".to_string()
}

#[rstest]
#[case::nothing_at_rate_zero(ChaosConfig::new(1), Site::Run, None)]
#[case::panic_at_rate_one(ChaosConfig::new(1).with_rate(FaultKind::Panic, 1.0), Site::Run, Some(FaultKind::Panic))]
#[case::stop_at_rate_one(ChaosConfig::new(1).with_rate(FaultKind::Stop, 1.0), Site::Run, Some(FaultKind::Stop))]
#[case::fail_at_rate_one(ChaosConfig::new(1).with_rate(FaultKind::FailEffect, 1.0), Site::Run, Some(FaultKind::FailEffect))]
#[case::slow_at_rate_one(ChaosConfig::new(1).with_rate(FaultKind::SlowEffect, 1.0), Site::Run, Some(FaultKind::SlowEffect))]
#[case::message_kinds_never_at_a_run(ChaosConfig::new(1).with_rate(FaultKind::Drop, 1.0), Site::Run, None)]
#[case::drop_at_deliver(ChaosConfig::new(1).with_rate(FaultKind::Drop, 1.0), Site::Deliver, Some(FaultKind::Drop))]
#[case::dup_at_deliver(ChaosConfig::new(1).with_rate(FaultKind::Duplicate, 1.0), Site::Deliver, Some(FaultKind::Duplicate))]
#[case::no_dup_at_forward(ChaosConfig::new(1).with_rate(FaultKind::Duplicate, 1.0), Site::Forward, None)]
#[case::reorder_at_forward(ChaosConfig::new(1).with_rate(FaultKind::Reorder, 1.0), Site::Forward, Some(FaultKind::Reorder))]
#[case::kind_not_covered(
    ChaosConfig { only: Some(vec!["Other".into()]), ..ChaosConfig::new(1).with_rate(FaultKind::Panic, 1.0) },
    Site::Run,
    None
)]
fn decides_the_kind_the_rates_allow(
    #[case] config: ChaosConfig,
    #[case] site: Site,
    #[case] want: Option<FaultKind>,
) {
    for n in 0..50 {
        assert_eq!(
            decide(&config, "Kind", &key(), site, n).map(|f| f.kind),
            want,
            "decision {n}"
        );
    }
}

#[rstest]
#[case::delay(FaultKind::Delay, Site::Deliver, Duration::from_millis(400))]
#[case::slow(FaultKind::SlowEffect, Site::Run, Duration::from_millis(400))]
#[case::reorder(FaultKind::Reorder, Site::Deliver, Duration::from_millis(40))]
fn delays_stay_within_their_bound(
    #[case] kind: FaultKind,
    #[case] site: Site,
    #[case] bound: Duration,
) {
    let config = ChaosConfig {
        max_delay: Duration::from_millis(400),
        ..ChaosConfig::new(5).with_rate(kind, 1.0)
    };
    let delays: Vec<Duration> = (0..200)
        .filter_map(|n| decide(&config, "Kind", &key(), site, n)?.delay)
        .collect();
    assert_eq!(delays.len(), 200);
    assert!(delays.iter().all(|d| *d <= bound), "{delays:?}");
    let distinct: std::collections::HashSet<_> = delays.iter().collect();
    assert!(distinct.len() > 100, "delays are spread, not constant");
}

#[test]
fn the_rate_is_the_frequency() {
    let config = ChaosConfig::new(11)
        .with_rate(FaultKind::Drop, 0.1)
        .with_rate(FaultKind::Delay, 0.3);
    let draws: Vec<Option<FaultKind>> = (0..20_000)
        .map(|n| decide(&config, "Kind", &key(), Site::Deliver, n).map(|f| f.kind))
        .collect();
    let share = |k| draws.iter().filter(|d| **d == Some(k)).count() as f64 / 20_000.0;
    assert!((share(FaultKind::Drop) - 0.1).abs() < 0.01);
    assert!((share(FaultKind::Delay) - 0.3).abs() < 0.015);
    assert_eq!(share(FaultKind::Duplicate), 0.0);
}

#[test]
fn the_same_seed_decides_the_same_and_another_seed_differently() {
    let sequence = |seed| -> Vec<Option<Fault>> {
        let config = ChaosConfig::new(seed)
            .with_rate(FaultKind::Panic, 0.2)
            .with_rate(FaultKind::SlowEffect, 0.2);
        (0..100)
            .map(|n| decide(&config, "Kind", &key(), Site::Run, n))
            .collect()
    };
    assert_eq!(sequence(1), sequence(1));
    assert_ne!(sequence(1), sequence(2));
}

#[test]
fn each_object_has_its_own_sequence() {
    let injector = Injector::new(ChaosConfig::new(4).with_rate(FaultKind::Drop, 0.5));
    let a = ObjectKey::new("ns", "a");
    let b = ObjectKey::new("ns", "b");
    // Interleaving decisions of another object does not change an object's sequence.
    let alone: Vec<_> = (0..30)
        .map(|n| decide(injector.config(), "Kind", "ns/a", Site::Forward, n))
        .collect();
    let mut interleaved = Vec::new();
    for _ in 0..30 {
        let _ = injector.next("Kind", &b, Site::Forward);
        interleaved.push(injector.next("Kind", &a, Site::Forward).map(|d| d.fault));
    }
    assert_eq!(alone, interleaved);
    let made: u64 = injector.made().values().sum();
    assert!(made > 10, "about half of 60 decisions make a fault: {made}");
}

// ---- replay ----

fn journal_of(injector: &Injector, keys: &[ObjectKey], rounds: usize) -> Journal {
    let mut journal = Journal::with_capacity(10_000);
    for _ in 0..rounds {
        for key in keys {
            for site in [Site::Run, Site::Deliver, Site::Forward] {
                if let Some(d) = injector.next("Kind", key, site) {
                    journal.record(JournalEntry {
                        at_ms: 0,
                        kind: "Kind".into(),
                        key: key.clone(),
                        event: d.event(injector.config().seed),
                    });
                }
            }
        }
    }
    journal
}

#[test]
fn a_journal_replays_from_its_seed_and_config_only() {
    let config = ChaosConfig::parse("seed=42,all=0.05").expect("parse");
    let keys: Vec<ObjectKey> = (0..5)
        .map(|i| ObjectKey::new("ns", format!("o{i}")))
        .collect();
    let journal = journal_of(&Injector::new(config.clone()), &keys, 40);
    assert!(journal.len() > 20, "the run made faults: {}", journal.len());
    let bytes = journal.to_msgpack().expect("encode");
    let read = Journal::from_msgpack(&bytes).expect("decode");
    assert_eq!(replay(&config, read.entries()), vec![]);
    let other = ChaosConfig::parse("seed=43,all=0.05").expect("parse");
    assert_eq!(
        replay(&other, read.entries()).len(),
        read.len(),
        "another seed replays none of it"
    );
}

// ---- the loop and the registry under each fault (paused time) ----

#[derive(Clone)]
struct Shared {
    injector: Option<Arc<Injector>>,
    /// Runs that reached the actor's `run` (a `fail` or a `panic` never does).
    runs: Arc<AtomicU64>,
    requeues: Arc<AtomicU64>,
}

struct LoopActor {
    lp: Loop,
    shared: Shared,
}

impl Actor for LoopActor {
    type Context = Context<Self>;
}

impl ObjectActor for LoopActor {
    type Object = ConfigMap;
}

impl KeyedActor for LoopActor {
    type Shared = Shared;
    const KIND: &'static str = "ConfigMap";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        let lp = Loop::new(Self::KIND, key, Policy::default()).with_chaos(shared.injector.clone());
        Self { lp, shared }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.lp.attach(journal);
    }
}

impl Reconciler for LoopActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.lp
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        self.shared.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(actix::fut::ready(Outcome::Done(Next::Idle)))
    }
}

impl Handler<ObjectEvent<ConfigMap>> for LoopActor {
    type Result = ();
    fn handle(&mut self, msg: ObjectEvent<ConfigMap>, ctx: &mut Context<Self>) {
        match msg {
            ObjectEvent::Observed(_) => reconcile::trigger(self, ctx, Cause::Observed),
            ObjectEvent::Deleted => ctx.stop(),
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

impl Handler<Requeue> for LoopActor {
    type Result = ();
    fn handle(&mut self, _msg: Requeue, _ctx: &mut Context<Self>) {
        self.shared.requeues.fetch_add(1, Ordering::SeqCst);
    }
}

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    cm
}

/// A seed whose first decision for `ns/x` at `site` makes `kind` and whose next nine make none (so the test
/// sees exactly one fault, then recovery).
fn seed_for(kind: FaultKind, site: Site) -> ChaosConfig {
    (0..100_000)
        .map(|seed| ChaosConfig::new(seed).with_rate(kind, 0.3))
        .find(|c| {
            decide(c, "ConfigMap", "ns/x", site, 0).map(|f| f.kind) == Some(kind)
                && (1..10).all(|n| decide(c, "ConfigMap", "ns/x", site, n).is_none())
        })
        .expect("a seed exists")
}

fn start(config: ChaosConfig) -> (Addr<Registry<LoopActor>>, Shared, SharedJournal) {
    let shared = Shared {
        injector: Some(Arc::new(Injector::new(config))),
        runs: Arc::default(),
        requeues: Arc::default(),
    };
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(1000)));
    let registry = Registry::<LoopActor>::new(
        shared.clone(),
        Metrics::new().expect("metrics"),
        journal.clone(),
    )
    .with_chaos(shared.injector.clone())
    .start();
    (registry, shared, journal)
}

fn events(journal: &SharedJournal) -> Vec<JournalEvent> {
    journal
        .lock()
        .expect("lock")
        .entries()
        .map(|e| e.event.clone())
        .collect()
}

fn has_fault(events: &[JournalEvent], kind: FaultKind) -> bool {
    events
        .iter()
        .any(|e| matches!(e, JournalEvent::Fault { fault, .. } if fault == kind.as_str()))
}

#[rstest]
#[case::panic(FaultKind::Panic, true)]
#[case::stop(FaultKind::Stop, true)]
#[case::fail(FaultKind::FailEffect, false)]
#[case::slow(FaultKind::SlowEffect, false)]
#[actix_rt::test]
async fn the_loop_survives_a_run_fault(#[case] kind: FaultKind, #[case] respawns: bool) {
    tokio::time::pause();
    let (registry, shared, journal) = start(seed_for(kind, Site::Run));
    registry
        .send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    // Within the supervision period (panic, stop), the error retry (fail) or the delay (slow): a run completes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = events(&journal);
    assert!(has_fault(&events, kind), "{events:?}");
    assert!(shared.runs.load(Ordering::SeqCst) >= 1, "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, JournalEvent::Reconciled { error: None, .. })),
        "a run ended well after the fault: {events:?}"
    );
    assert_eq!(
        events.contains(&JournalEvent::Respawned),
        respawns,
        "{events:?}"
    );
}

#[rstest]
#[case::drop(FaultKind::Drop, 0)]
#[case::delay(FaultKind::Delay, 1)]
#[case::reorder(FaultKind::Reorder, 1)]
#[case::duplicate(FaultKind::Duplicate, 2)]
#[actix_rt::test]
async fn a_broadcast_message_is_faulted(#[case] kind: FaultKind, #[case] delivered: u64) {
    tokio::time::pause();
    let (registry, shared, journal) = start(seed_for(kind, Site::Deliver));
    registry
        .send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    let msg = Requeue {
        reason: RequeueReason::DependencyChanged,
    };
    registry
        .send(Broadcast {
            filter: Filter::All,
            msg,
        })
        .await
        .expect("send");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(shared.requeues.load(Ordering::SeqCst), delivered);
    assert!(has_fault(&events(&journal), kind));
}

#[rstest]
#[case::drop(FaultKind::Drop, 0)]
#[case::delay(FaultKind::Delay, 1)]
#[actix_rt::test]
async fn a_forwarded_message_is_faulted(#[case] kind: FaultKind, #[case] delivered: u64) {
    tokio::time::pause();
    let (registry, shared, journal) = start(seed_for(kind, Site::Forward));
    registry
        .send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    let msg = Requeue {
        reason: RequeueReason::DependencyChanged,
    };
    registry
        .send(Forward(ObjectKey::new("ns", "x"), msg))
        .await
        .expect("send");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(shared.requeues.load(Ordering::SeqCst), delivered);
    assert!(has_fault(&events(&journal), kind));
}

#[actix_rt::test]
async fn without_chaos_nothing_is_faulted() {
    tokio::time::pause();
    let (registry, shared, journal) = start(ChaosConfig::new(1));
    registry
        .send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    for _ in 0..20 {
        let msg = Requeue {
            reason: RequeueReason::DependencyChanged,
        };
        registry
            .send(Broadcast {
                filter: Filter::All,
                msg,
            })
            .await
            .expect("send");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(shared.requeues.load(Ordering::SeqCst), 20);
    let events = events(&journal);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, JournalEvent::Fault { .. })),
        "{events:?}"
    );
}
