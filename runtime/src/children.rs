//! The actors of one kind by key, for actors that own a key but no watched object (catalog-operator's
//! namespace resolution): started on first need and again when they died, as the registry does for watched
//! objects' actors (`crate::registry`). Each start and restart is journaled (`Spawned`, `Respawned`) in the
//! kind's journal (served at `/debug/journal` like a registry's: `crate::wiring::Wiring::journal`); the number
//! running is `olm_rs_object_actors{kind}`, restarts are `olm_rs_actor_restarts_total{kind}`.
//!
//! An actor that panicked or stopped is started again by the next [`Children::get`] for its key, and by
//! [`Children::supervise`] (its owner calls it every [`crate::registry::SUPERVISE_EVERY`]), which returns the
//! keys started again so the owner can tell them to look at their state anew.

use crate::metrics::Metrics;
use crate::registry::SharedJournal;
use actix::{Actor, Addr, Context};
use messages::key::ObjectKey;
use messages::msg::{JournalEntry, JournalEvent};
use std::collections::HashMap;
use std::sync::PoisonError;
use std::time::{SystemTime, UNIX_EPOCH};

/// An actor owning one key (no watched object).
pub trait KeyedActor: Actor<Context = Context<Self>> {
    /// What every actor of the kind shares.
    type Shared: Clone + 'static;
    /// The kind's name for metrics and the journal.
    const KIND: &'static str;

    fn new(key: ObjectKey, shared: Self::Shared) -> Self;

    /// Called once before the actor starts, with the kind's journal.
    fn attach(&mut self, _journal: SharedJournal) {}
}

/// The running actors of kind `A`, by key.
pub struct Children<A: KeyedActor> {
    shared: A::Shared,
    actors: HashMap<ObjectKey, Addr<A>>,
    metrics: Metrics,
    journal: SharedJournal,
}

impl<A: KeyedActor> Children<A> {
    pub fn new(shared: A::Shared, metrics: Metrics, journal: SharedJournal) -> Self {
        metrics.set_actor_count(A::KIND, 0);
        Self {
            shared,
            actors: HashMap::new(),
            metrics,
            journal,
        }
    }

    /// The keys that have had an actor.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.actors.keys()
    }

    /// Whether `key`'s actor runs.
    pub fn running(&self, key: &ObjectKey) -> bool {
        self.actors.get(key).is_some_and(Addr::connected)
    }

    /// `key`'s actor, started first when it has none or it died.
    pub fn get(&mut self, key: &ObjectKey) -> Addr<A> {
        match self.actors.get(key) {
            Some(addr) if addr.connected() => addr.clone(),
            Some(_) => self.start(key, JournalEvent::Respawned),
            None => self.start(key, JournalEvent::Spawned),
        }
    }

    /// Start again every actor that died; the keys started again.
    pub fn supervise(&mut self) -> Vec<ObjectKey> {
        let dead: Vec<ObjectKey> = self
            .actors
            .iter()
            .filter(|(_, addr)| !addr.connected())
            .map(|(key, _)| key.clone())
            .collect();
        for key in &dead {
            self.start(key, JournalEvent::Respawned);
        }
        dead
    }

    fn start(&mut self, key: &ObjectKey, event: JournalEvent) -> Addr<A> {
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
        self.actors.insert(key.clone(), addr.clone());
        self.metrics.set_actor_count(A::KIND, self.actors.len());
        addr
    }

    fn record(&self, key: &ObjectKey, event: JournalEvent) {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        self.journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(JournalEntry {
                at_ms,
                kind: A::KIND.to_string(),
                key: key.clone(),
                event,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use messages::msg::Journal;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

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
}
