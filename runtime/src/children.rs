//! The actors of one kind by key: started on first need and again when they died. Both supervisors build on it:
//! the per-kind [`crate::registry::Registry`] (an actor per watched object, its state the last object seen) and
//! catalog-operator's namespace router (an actor per namespace, no watched object). Each start and restart is
//! journaled (`Spawned`, `Respawned`) in the kind's journal (served at `/debug/journal`:
//! `crate::wiring::Wiring::journal`); the number of keys is `olm_rs_object_actors{kind}`, restarts are
//! `olm_rs_actor_restarts_total{kind}`.
//!
//! A key's actor that panicked or stopped (a panic in an actix handler closes its mailbox for good and actix's
//! `Supervisor` does not catch it: this is our supervision) is started again by the next [`Children::live`] or
//! [`Children::get`] for its key, and by [`Children::supervise`] (its owner calls it every
//! [`SUPERVISE_EVERY`]). A restarted actor is given what its key's state holds
//! ([`Revive`]: the registry replays the last object seen) before any other message.

use crate::journal::{self, SharedJournal};
use crate::metrics::Metrics;
use actix::{Actor, Addr, Context};
use messages::key::ObjectKey;
use messages::msg::JournalEvent;
use std::collections::HashMap;
use std::time::Duration;

/// How often supervisors look for dead actors (a panic, a stop) and start them again without waiting for a
/// message to them.
pub const SUPERVISE_EVERY: Duration = Duration::from_secs(1);

/// An actor owning one key.
pub trait KeyedActor: Actor<Context = Context<Self>> {
    /// What every actor of the kind shares (client, stores, other registries' addresses...).
    type Shared: Clone + Unpin + 'static;
    /// The kind's name for metrics and the journal.
    const KIND: &'static str;

    fn new(key: ObjectKey, shared: Self::Shared) -> Self;

    /// Called once before the actor starts, with the kind's journal (actors on the reconcile contract give it
    /// to their [`crate::reconcile::Loop`]).
    fn attach(&mut self, _journal: SharedJournal) {}
}

/// What a key's owner keeps beside its actor, and gives a restarted actor so it starts where the dead one was.
pub trait Revive<A: Actor> {
    fn revive(&self, key: &ObjectKey, addr: &Addr<A>);
}

/// No state: a restarted actor starts from its stores alone.
impl<A: Actor> Revive<A> for () {
    fn revive(&self, _key: &ObjectKey, _addr: &Addr<A>) {}
}

/// A key's actor and its owner's state for it.
struct Child<A: Actor, S> {
    addr: Addr<A>,
    state: S,
}

/// The running actors of kind `A` by key, with the owner's state `S` for each key.
pub struct Children<A: KeyedActor, S = ()> {
    shared: A::Shared,
    actors: HashMap<ObjectKey, Child<A, S>>,
    metrics: Metrics,
    journal: SharedJournal,
}

impl<A: KeyedActor, S: Revive<A>> Children<A, S> {
    pub fn new(shared: A::Shared, metrics: Metrics, journal: SharedJournal) -> Self {
        metrics.set_actor_count(A::KIND, 0);
        Self {
            shared,
            actors: HashMap::new(),
            metrics,
            journal,
        }
    }

    /// The keys that have an actor (running or to be started again).
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.actors.keys()
    }

    /// How many keys have an actor.
    pub fn len(&self) -> usize {
        self.actors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actors.is_empty()
    }

    /// The owner's state of every key.
    pub fn states(&self) -> impl Iterator<Item = &S> {
        self.actors.values().map(|c| &c.state)
    }

    /// The owner's state of `key`, to change.
    pub fn state_mut(&mut self, key: &ObjectKey) -> Option<&mut S> {
        self.actors.get_mut(key).map(|c| &mut c.state)
    }

    /// Whether `key`'s actor runs.
    pub fn running(&self, key: &ObjectKey) -> bool {
        self.actors.get(key).is_some_and(|c| c.addr.connected())
    }

    /// The running actors and their keys.
    pub fn running_actors(&self) -> impl Iterator<Item = (&ObjectKey, &Addr<A>)> {
        self.actors
            .iter()
            .filter(|(_, c)| c.addr.connected())
            .map(|(k, c)| (k, &c.addr))
    }

    /// `key`'s actor, started again (and revived) if it died; `None` for a key without one.
    pub fn live(&mut self, key: &ObjectKey) -> Option<Addr<A>> {
        let child = self.actors.get(key)?;
        if child.addr.connected() {
            return Some(child.addr.clone());
        }
        let addr = self.start(key, JournalEvent::Respawned);
        if let Some(child) = self.actors.get_mut(key) {
            child.addr = addr.clone();
            child.state.revive(key, &addr);
        }
        Some(addr)
    }

    /// Set `key`'s state, and its actor: the running one, or one started now (not revived: the caller tells it
    /// what is new).
    pub fn put(&mut self, key: &ObjectKey, state: S) -> Addr<A> {
        let addr = match self.actors.get(key) {
            Some(child) if child.addr.connected() => child.addr.clone(),
            Some(_) => self.start(key, JournalEvent::Respawned),
            None => self.start(key, JournalEvent::Spawned),
        };
        self.actors.insert(
            key.clone(),
            Child {
                addr: addr.clone(),
                state,
            },
        );
        self.publish();
        addr
    }

    /// Forget `key`: its actor (the caller tells it it is done) and state.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<(Addr<A>, S)> {
        let child = self.actors.remove(key)?;
        self.publish();
        Some((child.addr, child.state))
    }

    /// Start again (and revive) every actor that died; the keys started again.
    pub fn supervise(&mut self) -> Vec<ObjectKey> {
        let dead: Vec<ObjectKey> = self
            .actors
            .iter()
            .filter(|(_, c)| !c.addr.connected())
            .map(|(key, _)| key.clone())
            .collect();
        for key in &dead {
            self.live(key);
        }
        dead
    }

    /// Record `event` for `key` in the kind's journal.
    pub fn record(&self, key: &ObjectKey, event: JournalEvent) {
        journal::record(&self.journal, A::KIND, key, event);
    }

    /// Publish the number of keys (`olm_rs_object_actors{kind}`).
    fn publish(&self) {
        self.metrics.set_actor_count(A::KIND, self.actors.len());
    }

    fn start(&self, key: &ObjectKey, event: JournalEvent) -> Addr<A> {
        if matches!(event, JournalEvent::Respawned) {
            tracing::warn!(kind = A::KIND, %key, "actor had died; starting it again");
            if let Some(m) = crate::actor_metrics::global() {
                m.restarted(A::KIND);
            }
        }
        let mut actor = A::new(key.clone(), self.shared.clone());
        actor.attach(self.journal.clone());
        let addr = actor.start();
        self.record(key, event);
        addr
    }
}

impl<A: KeyedActor, S: Revive<A> + Default> Children<A, S> {
    /// `key`'s actor: the running one, one started again (and revived) if it died, or a new one with the default
    /// state.
    pub fn get(&mut self, key: &ObjectKey) -> Addr<A> {
        match self.live(key) {
            Some(addr) => addr,
            None => self.put(key, S::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use messages::msg::Journal;
    use std::sync::{Arc, Mutex, PoisonError};

    struct Probe;

    impl Actor for Probe {
        type Context = Context<Self>;
    }

    impl KeyedActor for Probe {
        type Shared = ();
        const KIND: &'static str = "Probe";
        fn new(_key: ObjectKey, _shared: ()) -> Self {
            Probe
        }
    }

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Stop;

    impl Handler<Stop> for Probe {
        type Result = ();
        fn handle(&mut self, _msg: Stop, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }

    fn children() -> (Children<Probe>, SharedJournal, Metrics) {
        let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(16)));
        let metrics = Metrics::new().expect("metrics");
        (
            Children::new((), metrics.clone(), journal.clone()),
            journal,
            metrics,
        )
    }

    fn events(journal: &SharedJournal) -> Vec<(String, JournalEvent)> {
        journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries()
            .map(|e| (e.key.name.clone(), e.event.clone()))
            .collect()
    }

    /// Wait (bounded) until `key`'s actor stopped.
    async fn stopped(children: &Children<Probe>, key: &ObjectKey) {
        let gone = tokio::time::timeout(Duration::from_secs(5), async {
            while children.running(key) {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(gone.is_ok(), "the actor did not stop");
    }

    fn count(metrics: &Metrics) -> String {
        metrics
            .encode()
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("olm_rs_object_actors{kind=\"Probe\"}"))
            .unwrap_or_default()
            .to_string()
    }

    #[actix_rt::test]
    async fn an_actor_is_started_on_first_need_and_again_when_it_died() {
        let (mut children, journal, metrics) = children();
        let a = ObjectKey::cluster("a");
        let first = children.get(&a);
        assert_eq!(
            children.get(&a),
            first,
            "a running actor is not started again"
        );
        first.do_send(Stop);
        stopped(&children, &a).await;
        let again = children.get(&a);
        assert!(again.connected());
        assert_ne!(again, first);
        assert_eq!(
            events(&journal),
            vec![
                ("a".to_string(), JournalEvent::Spawned),
                ("a".to_string(), JournalEvent::Respawned),
            ]
        );
        assert_eq!(count(&metrics), "olm_rs_object_actors{kind=\"Probe\"} 1");
    }

    #[actix_rt::test]
    async fn supervision_starts_the_dead_again_and_names_them() {
        let (mut children, _journal, _metrics) = children();
        let (a, b) = (ObjectKey::cluster("a"), ObjectKey::cluster("b"));
        children.get(&a).do_send(Stop);
        children.get(&b);
        stopped(&children, &a).await;
        assert_eq!(children.supervise(), vec![a.clone()]);
        assert!(children.running(&a) && children.running(&b));
        assert!(children.supervise().is_empty());
    }

    /// What a key's state gives a restarted actor: counted here.
    #[derive(Clone, Default)]
    struct Revived(Arc<std::sync::atomic::AtomicUsize>);

    impl Revive<Probe> for Revived {
        fn revive(&self, _key: &ObjectKey, _addr: &Addr<Probe>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[actix_rt::test]
    async fn a_restarted_actor_is_revived_from_its_keys_state_and_a_new_one_is_not() {
        let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(16)));
        let metrics = Metrics::new().expect("metrics");
        let mut children: Children<Probe, Revived> = Children::new((), metrics, journal);
        let a = ObjectKey::cluster("a");
        let revived = Revived::default();
        let first = children.put(&a, revived.clone());
        let read = |r: &Revived| r.0.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            read(&revived),
            0,
            "a new actor is told what is new by its owner"
        );
        assert_eq!(
            children.put(&a, revived.clone()),
            first,
            "put keeps a running actor"
        );
        first.do_send(Stop);
        let gone = tokio::time::timeout(Duration::from_secs(5), async {
            while children.running(&a) {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(gone.is_ok(), "the actor did not stop");
        assert_eq!(children.supervise(), vec![a.clone()]);
        assert_eq!(read(&revived), 1, "the restarted actor was revived once");
        assert!(children.live(&a).is_some());
        assert_eq!(read(&revived), 1, "a running actor is not revived again");
        assert!(children.remove(&a).is_some());
        assert!(children.live(&a).is_none(), "a removed key has no actor");
        assert!(children.is_empty());
    }
}
