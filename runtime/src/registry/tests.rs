//! Actor tests of the registry: the count of actors follows the objects, deletions and relists stop actors,
//! a dead actor is started again on its next event, and an object that does not decode holds its actor (or, as a
//! deletion, stops it).

use super::*;
use crate::children::KeyedActor;
use k8s_openapi::api::core::v1::ConfigMap;
use messages::msg::Journal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Clone, Default)]
struct Probe {
    observed: Arc<AtomicUsize>,
    stopped: Arc<AtomicUsize>,
    resynced: Arc<AtomicUsize>,
    resync_seen: Arc<tokio::sync::Notify>,
    /// Keys of the actors that received a `DependencyChanged` requeue, in order.
    forwarded: Arc<Mutex<Vec<String>>>,
    /// The decoding errors the actors were told of, in order.
    undecodable: Arc<Mutex<Vec<String>>>,
}

struct CmActor {
    key: ObjectKey,
    probe: Probe,
}

impl Actor for CmActor {
    type Context = Context<Self>;
    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.probe.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler<ObjectEvent<ConfigMap>> for CmActor {
    type Result = ();
    fn handle(&mut self, msg: ObjectEvent<ConfigMap>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(cm) => {
                if cm
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("panic"))
                {
                    panic!("test actor told to panic");
                }
                self.probe.observed.fetch_add(1, Ordering::SeqCst);
            }
            ObjectEvent::Deleted => ctx.stop(),
            ObjectEvent::Undecodable(error) => {
                self.probe.undecodable.lock().expect("lock").push(error);
            }
        }
    }
}

impl Handler<Requeue> for CmActor {
    type Result = ();
    fn handle(&mut self, msg: Requeue, _ctx: &mut Self::Context) {
        if msg.reason == RequeueReason::DependencyChanged {
            self.probe
                .forwarded
                .lock()
                .expect("lock")
                .push(self.key.to_string());
        }
        if msg.reason == RequeueReason::Resync {
            self.probe.resynced.fetch_add(1, Ordering::SeqCst);
            self.probe.resync_seen.notify_one();
        }
    }
}

/// A question a test actor answers with its own key (and refuses for "refuse").
struct WhoAreYou;

impl Message for WhoAreYou {
    type Result = Result<String, String>;
}

impl Handler<WhoAreYou> for CmActor {
    type Result = Result<String, String>;
    fn handle(&mut self, _msg: WhoAreYou, _ctx: &mut Self::Context) -> Self::Result {
        if self.key.name == "refuse" {
            Err("refused".into())
        } else {
            Ok(self.key.to_string())
        }
    }
}

impl ObjectActor for CmActor {
    type Object = ConfigMap;
}

impl KeyedActor for CmActor {
    type Shared = Probe;
    const KIND: &'static str = "ConfigMap";
    fn new(key: ObjectKey, probe: Probe) -> Self {
        Self { key, probe }
    }
}

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.resource_version = Some("1".into());
    cm
}

fn registry(probe: &Probe) -> (Addr<Registry<CmActor>>, SharedJournal, Metrics) {
    let metrics = Metrics::new().expect("metrics");
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    let addr = Registry::<CmActor>::new(probe.clone(), metrics.clone(), journal.clone()).start();
    (addr, journal, metrics)
}

/// Let the spawned actors run their queued messages: the actor system is single-threaded here, so a
/// round-trip through the registry and a few yields drain every mailbox deterministically.
async fn settle(reg: &Addr<Registry<CmActor>>) -> usize {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    reg.send(ActorCount).await.expect("registry alive")
}

#[actix_rt::test]
async fn one_actor_is_started_per_object_and_stopped_on_delete() {
    let probe = Probe::default();
    let (reg, journal, metrics) = registry(&probe);
    for n in 0..5 {
        reg.send(Watched::from(watcher::Event::Apply(cm(&format!("c{n}")))))
            .await
            .expect("send");
    }
    reg.send(Watched::from(watcher::Event::Apply(cm("c0"))))
        .await
        .expect("send");
    assert_eq!(settle(&reg).await, 5);
    assert_eq!(metrics.actor_counts().get("ConfigMap"), Some(&5));
    reg.send(Watched::from(watcher::Event::Delete(cm("c1"))))
        .await
        .expect("send");
    reg.send(Watched::from(watcher::Event::Delete(cm("c2"))))
        .await
        .expect("send");
    assert_eq!(settle(&reg).await, 3);
    assert_eq!(probe.observed.load(Ordering::SeqCst), 6);
    assert_eq!(probe.stopped.load(Ordering::SeqCst), 2);
    let spawned = journal
        .lock()
        .expect("lock")
        .entries()
        .filter(|e| e.event == JournalEvent::Spawned)
        .count();
    assert_eq!(spawned, 5);
}

#[actix_rt::test]
async fn a_relist_stops_the_actors_of_objects_that_vanished_meanwhile() {
    let probe = Probe::default();
    let (reg, _journal, _metrics) = registry(&probe);
    for name in ["a", "b", "c"] {
        reg.send(Watched::from(watcher::Event::Apply(cm(name))))
            .await
            .expect("send");
    }
    reg.send(Watched::from(watcher::Event::<ConfigMap>::Init))
        .await
        .expect("send");
    reg.send(Watched::from(watcher::Event::InitApply(cm("b"))))
        .await
        .expect("send");
    reg.send(Watched::from(watcher::Event::<ConfigMap>::InitDone))
        .await
        .expect("send");
    assert_eq!(settle(&reg).await, 1);
    let left = reg
        .send(Lookup::<CmActor>::new(ObjectKey::new("ns", "b")))
        .await
        .expect("send");
    assert!(left.is_some());
}

#[actix_rt::test]
async fn an_actor_that_panicked_is_started_again_on_its_next_event() {
    let probe = Probe::default();
    let (reg, journal, _metrics) = registry(&probe);
    let mut bad = cm("x");
    bad.metadata.labels = Some([("panic".to_string(), "yes".to_string())].into());
    reg.send(Watched::from(watcher::Event::Apply(bad)))
        .await
        .expect("send");
    settle(&reg).await;
    reg.send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    assert_eq!(settle(&reg).await, 1);
    assert_eq!(probe.observed.load(Ordering::SeqCst), 1);
    let respawned = journal
        .lock()
        .expect("lock")
        .entries()
        .any(|e| e.event == JournalEvent::Respawned);
    assert!(respawned, "the journal records the respawn");
}

#[actix_rt::test]
async fn a_resync_requeues_every_live_actor_each_period() {
    let probe = Probe::default();
    let metrics = Metrics::new().expect("metrics");
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    let reg = Registry::<CmActor>::new(probe.clone(), metrics, journal)
        .with_resync(Duration::from_millis(20))
        .start();
    for name in ["a", "b", "c"] {
        reg.send(Watched::from(watcher::Event::Apply(cm(name))))
            .await
            .expect("send");
    }
    // Wait (with a deadline) until each of the three actors was requeued at least twice.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while probe.resynced.load(Ordering::SeqCst) < 6 {
        let woken = tokio::time::timeout_at(deadline, probe.resync_seen.notified()).await;
        assert!(
            woken.is_ok(),
            "resyncs seen before the deadline: {}",
            probe.resynced.load(Ordering::SeqCst)
        );
    }
    assert_eq!(probe.observed.load(Ordering::SeqCst), 3);
}

#[actix_rt::test]
async fn a_zero_resync_period_means_no_resync() {
    let probe = Probe::default();
    let metrics = Metrics::new().expect("metrics");
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    let reg = Registry::<CmActor>::new(probe.clone(), metrics, journal)
        .with_resync(Duration::ZERO)
        .start();
    reg.send(Watched::from(watcher::Event::Apply(cm("a"))))
        .await
        .expect("send");
    settle(&reg).await;
    assert_eq!(probe.resynced.load(Ordering::SeqCst), 0);
}

fn dependency_changed() -> Requeue {
    Requeue {
        reason: RequeueReason::DependencyChanged,
    }
}

fn cm_in(namespace: &str, name: &str) -> ConfigMap {
    let mut cm = cm(name);
    cm.metadata.namespace = Some(namespace.into());
    cm
}

#[actix_rt::test]
async fn the_registry_forwards_to_one_actor_and_broadcasts_by_filter() {
    let probe = Probe::default();
    let (reg, _journal, _metrics) = registry(&probe);
    for (ns, name) in [("a", "x"), ("a", "y"), ("b", "x")] {
        reg.send(Watched::from(watcher::Event::Apply(cm_in(ns, name))))
            .await
            .expect("send");
    }
    reg.send(Forward(ObjectKey::new("a", "y"), dependency_changed()))
        .await
        .expect("forward");
    reg.send(Forward(ObjectKey::new("a", "nobody"), dependency_changed()))
        .await
        .expect("forward to an unknown key is dropped");
    settle(&reg).await;
    assert_eq!(
        *probe.forwarded.lock().expect("lock"),
        vec!["a/y".to_string()]
    );
    probe.forwarded.lock().expect("lock").clear();
    reg.send(Broadcast {
        filter: Filter::Namespace("a".into()),
        msg: dependency_changed(),
    })
    .await
    .expect("broadcast");
    settle(&reg).await;
    let mut got = probe.forwarded.lock().expect("lock").clone();
    got.sort();
    assert_eq!(got, vec!["a/x".to_string(), "a/y".to_string()]);
    probe.forwarded.lock().expect("lock").clear();
    reg.send(Broadcast {
        filter: Filter::Keys(vec![ObjectKey::new("b", "x")]),
        msg: dependency_changed(),
    })
    .await
    .expect("broadcast");
    settle(&reg).await;
    assert_eq!(
        *probe.forwarded.lock().expect("lock"),
        vec!["b/x".to_string()]
    );
}

#[actix_rt::test]
async fn an_ask_routed_by_the_registry_is_answered_by_the_actor_of_its_key() {
    let probe = Probe::default();
    let (reg, _journal, _metrics) = registry(&probe);
    for (ns, name) in [("a", "x"), ("a", "refuse")] {
        reg.send(Watched::from(watcher::Event::Apply(cm_in(ns, name))))
            .await
            .expect("send");
    }
    let answer = reg
        .send(Ask(ObjectKey::new("a", "x"), WhoAreYou))
        .await
        .expect("registry alive");
    assert_eq!(answer.expect("routed").expect("answered"), "a/x");
    let refused = reg
        .send(Ask(ObjectKey::new("a", "refuse"), WhoAreYou))
        .await
        .expect("registry alive");
    assert_eq!(refused.expect("routed"), Err("refused".to_string()));
    let nobody = reg
        .send(Ask(ObjectKey::new("a", "nobody"), WhoAreYou))
        .await
        .expect("registry alive");
    assert!(
        matches!(nobody, Err(AskError::NoActor(ref k)) if k == &ObjectKey::new("a", "nobody")),
        "{nobody:?}"
    );
    // A deleted object's actor is not asked.
    reg.send(Watched::from(watcher::Event::Delete(cm_in("a", "x"))))
        .await
        .expect("send");
    let gone = reg
        .send(Ask(ObjectKey::new("a", "x"), WhoAreYou))
        .await
        .expect("registry alive");
    assert!(matches!(gone, Err(AskError::NoActor(_))), "{gone:?}");
}

fn undecodable(name: &str, deleted: bool) -> Undecodable {
    let meta = cm(name).metadata;
    Undecodable(Skipped {
        meta,
        error: format!("{name}: invalid type: integer `7`, expected a string"),
        deleted,
    })
}

fn held_gauge(metrics: &Metrics) -> String {
    let text = metrics.encode().expect("encode");
    text.lines()
        .find(|l| l.starts_with("olm_rs_objects_held_undecodable{kind=\"ConfigMap\"}"))
        .unwrap_or_default()
        .to_string()
}

#[actix_rt::test]
async fn an_object_that_stops_decoding_holds_its_actor_until_a_version_that_decodes() {
    let probe = Probe::default();
    let (reg, journal, metrics) = registry(&probe);
    reg.send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    reg.send(undecodable("x", false)).await.expect("send");
    assert_eq!(settle(&reg).await, 1, "the actor lives on, held");
    assert_eq!(
        *probe.undecodable.lock().expect("lock"),
        vec!["x: invalid type: integer `7`, expected a string".to_string()]
    );
    assert!(
        held_gauge(&metrics).ends_with(" 1"),
        "{}",
        held_gauge(&metrics)
    );
    let journaled = journal.lock().expect("lock").entries().any(|e| {
        matches!(&e.event, JournalEvent::Undecodable { error, deleted: false, .. } if error.starts_with("x:"))
    });
    assert!(journaled, "the journal names the object and the error");
    reg.send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    settle(&reg).await;
    assert_eq!(probe.observed.load(Ordering::SeqCst), 2);
    assert!(
        held_gauge(&metrics).ends_with(" 0"),
        "{}",
        held_gauge(&metrics)
    );
}

#[actix_rt::test]
async fn a_deletion_that_does_not_decode_stops_the_actor_of_its_key() {
    let probe = Probe::default();
    let (reg, journal, metrics) = registry(&probe);
    for name in ["x", "y"] {
        reg.send(Watched::from(watcher::Event::Apply(cm(name))))
            .await
            .expect("send");
    }
    reg.send(undecodable("x", false)).await.expect("send");
    reg.send(undecodable("x", true)).await.expect("send");
    assert_eq!(settle(&reg).await, 1, "only y's actor is left");
    assert_eq!(probe.stopped.load(Ordering::SeqCst), 1);
    assert!(
        held_gauge(&metrics).ends_with(" 0"),
        "{}",
        held_gauge(&metrics)
    );
    let gone = reg
        .send(Lookup::<CmActor>::new(ObjectKey::new("ns", "x")))
        .await
        .expect("send");
    assert!(gone.is_none());
    let events: Vec<JournalEvent> = journal
        .lock()
        .expect("lock")
        .entries()
        .filter(|e| e.key.name == "x")
        .map(|e| e.event.clone())
        .collect();
    assert!(
        matches!(
            events.as_slice(),
            [
                ..,
                JournalEvent::Undecodable { deleted: true, .. },
                JournalEvent::Stopped
            ]
        ),
        "{events:?}"
    );
}

#[actix_rt::test]
async fn an_actor_started_again_is_told_again_that_its_object_does_not_decode() {
    let probe = Probe::default();
    let (reg, _journal, _metrics) = registry(&probe);
    reg.send(Watched::from(watcher::Event::Apply(cm("x"))))
        .await
        .expect("send");
    reg.send(undecodable("x", false)).await.expect("send");
    settle(&reg).await;
    let first = reg
        .send(Lookup::<CmActor>::new(ObjectKey::new("ns", "x")))
        .await
        .expect("send")
        .expect("an actor");
    // The actor dies while the registry still knows its object.
    first.do_send(ObjectEvent::<ConfigMap>::Deleted);
    settle(&reg).await;
    assert!(!first.connected());
    let again = reg
        .send(Lookup::<CmActor>::new(ObjectKey::new("ns", "x")))
        .await
        .expect("send");
    assert!(again.is_some_and(|a| a.connected()));
    settle(&reg).await;
    assert_eq!(
        probe.observed.load(Ordering::SeqCst),
        2,
        "the last version replayed"
    );
    assert_eq!(
        probe.undecodable.lock().expect("lock").len(),
        2,
        "and the hold with it"
    );
}
