//! The per-kind registry actor: one actor per object.
//!
//! It receives the watch's events as [`Watched<K>`], starts an actor for an object on first sight, routes every
//! later change to that actor as [`ObjectEvent::Observed`], sends [`ObjectEvent::Deleted`] and forgets the actor
//! when the object is deleted (or vanished during a relist), and starts the actor again if it died (the
//! supervision of [`crate::children`]): on the object's next event, on a message routed to it, and at the latest
//! within [`SUPERVISE_EVERY`], replaying the last object seen to the new actor. An object whose current version does
//! not decode ([`Undecodable`]) has its actor told ([`ObjectEvent::Undecodable`]: it holds instead of acting on
//! the stale version it has) and counted in `olm_rs_objects_held_undecodable{kind}` until a version that decodes
//! arrives; its deletion is routed as any deletion. Every routing decision is recorded in a [`Journal`]. Under chaos (`OLM_RS_CHAOS`) the messages it routes may be dropped, delayed, duplicated or
//! reordered ([`crate::chaos`]).

use crate::chaos::{self, FaultKind, Injector, Site};
use crate::children::{Children, KeyedActor, Revive, SUPERVISE_EVERY};
use crate::journal::SharedJournal;
use crate::metrics::Metrics;
use crate::undecodable::Skipped;
use actix::prelude::*;
use kube::Resource;
use kube::runtime::watcher;
use messages::key::ObjectKey;
use messages::msg::{ActorCount, JournalEvent, ObjectEvent, Requeue, RequeueReason};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// An actor that owns exactly one object of kind `Object` (its key, its kind's name and shared state are
/// [`KeyedActor`]'s).
pub trait ObjectActor: KeyedActor + Handler<ObjectEvent<Self::Object>> + Handler<Requeue> {
    type Object: Resource + Clone + Send + Sync + std::fmt::Debug + 'static;
}

/// Deliver `msg` to the actor of `key`, if it lives: routed by the registry itself (no look-up round trip, no
/// spawned task). A message for an object not seen yet is dropped: its actor's first run observes the stores.
pub struct Forward<M>(pub ObjectKey, pub M);

impl<M> Message for Forward<M> {
    type Result = ();
}

/// Deliver `msg` to the actor of `key` and answer with that actor's reply: routed by the registry itself, as
/// [`Forward`] (one message to the registry, no look-up round trip, nothing spawned by the asker). The
/// registry does not wait for the reply: the actor answers the asker directly.
pub struct Ask<M>(pub ObjectKey, pub M);

impl<M> Message for Ask<M>
where
    M: Message,
    M::Result: Send + 'static,
{
    type Result = Result<M::Result, AskError>;
}

/// Why an [`Ask`] got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// No object of that key was seen (or it was deleted): nobody to ask.
    #[error("no actor for {0}")]
    NoActor(ObjectKey),
    /// The actor stopped before answering.
    #[error("the actor of {0} did not answer")]
    Mailbox(ObjectKey, #[source] actix::MailboxError),
    /// Chaos dropped the message (`OLM_RS_CHAOS`).
    #[error("the message to {0} was dropped (chaos)")]
    Dropped(ObjectKey),
}

/// Deliver a copy of `msg` to every live actor whose key passes the filter (e.g. every CSV of a namespace).
pub struct Broadcast<M> {
    pub filter: Filter,
    pub msg: M,
}

/// Which actors a [`Broadcast`] reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    All,
    Namespace(String),
    Keys(Vec<ObjectKey>),
}

impl Filter {
    pub fn matches(&self, key: &ObjectKey) -> bool {
        match self {
            Filter::All => true,
            Filter::Namespace(ns) => key.namespace_or_empty() == ns,
            Filter::Keys(keys) => keys.contains(key),
        }
    }
}

impl<M> Message for Broadcast<M> {
    type Result = ();
}

/// One event of the watch, routed to a registry. Its objects are the watch store's own `Arc`s (see
/// [`crate::watch`]), so an object an actor holds is not a second copy of the stored one.
pub struct Watched<K>(pub watcher::Event<Arc<K>>);

impl<K> From<watcher::Event<K>> for Watched<K> {
    /// An event of objects no store holds (tests, and the watch's fallback).
    fn from(event: watcher::Event<K>) -> Self {
        Watched(match event {
            watcher::Event::Apply(obj) => watcher::Event::Apply(Arc::new(obj)),
            watcher::Event::InitApply(obj) => watcher::Event::InitApply(Arc::new(obj)),
            watcher::Event::Delete(obj) => watcher::Event::Delete(Arc::new(obj)),
            watcher::Event::Init => watcher::Event::Init,
            watcher::Event::InitDone => watcher::Event::InitDone,
        })
    }
}

impl<K: 'static> Message for Watched<K> {
    type Result = ();
}

/// A watched object of the kind whose stored JSON did not decode, reported (a warning, the journal, the
/// `olm_rs_undecodable_objects_total{kind}` counter). A change: counted as seen in a relist (its actor is not
/// stopped for it) and its actor holds until a version that decodes arrives. A deletion: its actor gets
/// [`ObjectEvent::Deleted`] and stops, as for any deletion.
pub struct Undecodable(pub Skipped);

impl Message for Undecodable {
    type Result = ();
}

/// Ask a registry for the actor of one object (e.g. to send it a typed message from another actor).
pub struct Lookup<A>(pub ObjectKey, std::marker::PhantomData<A>);

impl<A> Lookup<A> {
    pub fn new(key: ObjectKey) -> Self {
        Self(key, std::marker::PhantomData)
    }
}

impl<A: Actor> Message for Lookup<A> {
    type Result = Option<Addr<A>>;
}

/// Ask a registry for every live actor of its kind (fan-out of typed messages, e.g. requeue all CSVs).
pub struct All<A>(std::marker::PhantomData<A>);

impl<A> Default for All<A> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<A: Actor> Message for All<A> {
    type Result = Vec<(ObjectKey, Addr<A>)>;
}

/// The last version of a live object routed to its actor, and the decoding error of the object's current version
/// when it does not decode: both given to a restarted actor.
struct Last<O> {
    object: Arc<O>,
    undecodable: Option<String>,
}

impl<A: ObjectActor> Revive<A> for Last<A::Object> {
    fn revive(&self, _key: &ObjectKey, addr: &Addr<A>) {
        addr.do_send(ObjectEvent::Observed(self.object.clone()));
        if let Some(error) = self.undecodable.clone() {
            addr.do_send(ObjectEvent::<A::Object>::Undecodable(error));
        }
    }
}

pub struct Registry<A: ObjectActor> {
    children: Children<A, Last<A::Object>>,
    /// Keys seen since the last `Init` of the watch; `None` outside a relist.
    relisting: Option<HashSet<ObjectKey>>,
    metrics: Metrics,
    synced: Arc<std::sync::atomic::AtomicBool>,
    /// Every live actor is requeued this often (OLM's `--interval` resync): a level-triggered safety net for
    /// any change whose event was missed.
    resync: Option<Duration>,
    /// The fault injector when chaos is on.
    chaos: Option<Arc<Injector>>,
}

impl<A: ObjectActor> Registry<A> {
    pub fn new(shared: A::Shared, metrics: Metrics, journal: SharedJournal) -> Self {
        Self {
            children: Children::new(shared, metrics.clone(), journal),
            relisting: None,
            metrics,
            synced: Arc::default(),
            resync: None,
            chaos: None,
        }
    }

    /// Make faults in deliveries with this injector (the process's, `crate::chaos::from_env`; none: no faults).
    pub fn with_chaos(mut self, injector: Option<Arc<Injector>>) -> Self {
        self.chaos = injector;
        self
    }

    /// Requeue every live actor every `period` (a zero period turns the resync off).
    pub fn with_resync(mut self, period: Duration) -> Self {
        self.resync = (!period.is_zero()).then_some(period);
        self
    }

    fn resync_all(&mut self, ctx: &mut Context<Self>) {
        let keys: Vec<ObjectKey> = self.children.keys().cloned().collect();
        for key in &keys {
            let msg = Requeue {
                reason: RequeueReason::Resync,
            };
            self.deliver(ctx, key, msg);
        }
        tracing::debug!(kind = A::KIND, actors = keys.len(), "resync");
    }

    /// Start again (with the last object seen) every actor that died while its object still exists.
    fn supervise(&mut self) {
        self.children.supervise();
    }

    /// The address of `key`'s actor, starting it again (with the last object seen) if it died; `None` for an
    /// object not seen.
    fn live(&mut self, key: &ObjectKey) -> Option<Addr<A>> {
        self.children.live(key)
    }

    /// The chaos decision for a message to `key` at `site` (journaled), if chaos is on and makes a fault.
    fn inject(&self, key: &ObjectKey, site: Site) -> Option<chaos::Decision> {
        let injector = self.chaos.as_ref()?;
        let decision = injector.next(A::KIND, key, site)?;
        self.record(key, decision.event(injector.config().seed));
        Some(decision)
    }

    /// Send a cloneable message to `key`'s live actor (restarted if it died), through chaos's message faults.
    fn deliver<M>(&mut self, ctx: &mut Context<Self>, key: &ObjectKey, msg: M)
    where
        A: Handler<M>,
        M: Message + Clone + Send + 'static,
        M::Result: Send,
    {
        let Some(addr) = self.live(key) else {
            return;
        };
        let Some(decision) = self.inject(key, Site::Deliver) else {
            addr.do_send(msg);
            return;
        };
        match decision.fault.kind {
            FaultKind::Drop => {}
            FaultKind::Duplicate => {
                addr.do_send(msg.clone());
                addr.do_send(msg);
            }
            FaultKind::Delay | FaultKind::Reorder => {
                let delay = decision.fault.delay.unwrap_or_default();
                ctx.run_later(delay, move |_, _| addr.do_send(msg));
            }
            FaultKind::Panic | FaultKind::Stop | FaultKind::SlowEffect | FaultKind::FailEffect => {
                addr.do_send(msg);
            }
        }
    }

    /// Becomes true once the first full list of the watch has been routed.
    pub fn synced_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.synced.clone()
    }

    fn record(&self, key: &ObjectKey, event: JournalEvent) {
        self.children.record(key, event);
    }

    /// Publish the number of objects held undecodable (`olm_rs_objects_held_undecodable{kind}`; the number of
    /// actors is the children's).
    fn publish_held(&self) {
        let held = self
            .children
            .states()
            .filter(|last| last.undecodable.is_some())
            .count();
        self.metrics.set_held_undecodable(A::KIND, held);
    }

    fn observe(&mut self, obj: Arc<A::Object>) {
        let Some(key) = ObjectKey::of(&*obj) else {
            tracing::warn!(kind = A::KIND, "ignoring an object without a name");
            return;
        };
        if let Some(seen) = self.relisting.as_mut() {
            seen.insert(key.clone());
        }
        let resource_version = obj.meta().resource_version.clone();
        let addr = self.children.put(
            &key,
            Last {
                object: obj.clone(),
                undecodable: None,
            },
        );
        self.publish_held();
        self.record(&key, JournalEvent::Observed { resource_version });
        addr.do_send(ObjectEvent::Observed(obj));
    }

    /// Tell `key`'s actor (started again if it died) that the object's current version does not decode.
    fn hold(&mut self, key: &ObjectKey, error: String) {
        let Some(last) = self.children.state_mut(key) else {
            return;
        };
        last.undecodable = Some(error.clone());
        self.publish_held();
        if let Some(addr) = self.live(key) {
            addr.do_send(ObjectEvent::<A::Object>::Undecodable(error));
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        if let Some((addr, _last)) = self.children.remove(key) {
            addr.do_send(ObjectEvent::<A::Object>::Deleted);
            self.record(key, JournalEvent::Stopped);
            self.publish_held();
        }
    }
}

impl<A: ObjectActor> Actor for Registry<A> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.publish_held();
        if let Some(period) = self.resync {
            ctx.run_interval(period, |act, ctx| act.resync_all(ctx));
        }
        ctx.run_interval(SUPERVISE_EVERY, |act, _ctx| act.supervise());
    }
}

impl<A: ObjectActor> Handler<Watched<A::Object>> for Registry<A> {
    type Result = ();

    fn handle(&mut self, Watched(event): Watched<A::Object>, _ctx: &mut Self::Context) {
        match event {
            watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => self.observe(obj),
            watcher::Event::Delete(obj) => {
                if let Some(key) = ObjectKey::of(&*obj) {
                    self.forget(&key);
                }
            }
            watcher::Event::Init => self.relisting = Some(HashSet::new()),
            watcher::Event::InitDone => {
                if let Some(seen) = self.relisting.take() {
                    let gone: Vec<ObjectKey> = self
                        .children
                        .keys()
                        .filter(|k| !seen.contains(*k))
                        .cloned()
                        .collect();
                    for key in gone {
                        self.forget(&key);
                    }
                }
                self.synced
                    .store(true, std::sync::atomic::Ordering::Release);
            }
        }
    }
}

impl<A: ObjectActor> Handler<Undecodable> for Registry<A> {
    type Result = ();

    fn handle(&mut self, Undecodable(skipped): Undecodable, _ctx: &mut Self::Context) {
        let Skipped {
            meta,
            error,
            deleted,
        } = skipped;
        let Some(name) = meta.name.clone() else {
            return;
        };
        let key = ObjectKey {
            namespace: meta.namespace.clone(),
            name,
        };
        tracing::warn!(kind = A::KIND, %key, %error, deleted, "an object does not decode as its kind");
        self.metrics.count_undecodable(A::KIND);
        self.record(
            &key,
            JournalEvent::Undecodable {
                resource_version: meta.resource_version,
                error: error.clone(),
                deleted,
            },
        );
        if deleted {
            self.forget(&key);
            return;
        }
        if let Some(seen) = self.relisting.as_mut() {
            seen.insert(key.clone());
        }
        self.hold(&key, error);
    }
}

impl<A: ObjectActor> Handler<ActorCount> for Registry<A> {
    type Result = usize;

    fn handle(&mut self, _msg: ActorCount, _ctx: &mut Self::Context) -> usize {
        self.children.len()
    }
}

impl<A: ObjectActor> Handler<Lookup<A>> for Registry<A> {
    type Result = Option<Addr<A>>;

    fn handle(&mut self, msg: Lookup<A>, _ctx: &mut Self::Context) -> Self::Result {
        self.live(&msg.0)
    }
}

impl<A: ObjectActor> Handler<All<A>> for Registry<A> {
    type Result = MessageResult<All<A>>;

    fn handle(&mut self, _msg: All<A>, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(
            self.children
                .running_actors()
                .map(|(k, addr)| (k.clone(), addr.clone()))
                .collect(),
        )
    }
}

impl<A, M> Handler<Forward<M>> for Registry<A>
where
    A: ObjectActor + Handler<M>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    type Result = ();

    fn handle(&mut self, Forward(key, msg): Forward<M>, ctx: &mut Self::Context) {
        let Some(addr) = self.live(&key) else {
            tracing::debug!(kind = A::KIND, %key, "no actor to forward to");
            return;
        };
        let Some(decision) = self.inject(&key, Site::Forward) else {
            addr.do_send(msg);
            return;
        };
        match decision.fault.kind {
            FaultKind::Drop => {}
            FaultKind::Delay | FaultKind::Reorder => {
                let delay = decision.fault.delay.unwrap_or_default();
                ctx.run_later(delay, move |_, _| addr.do_send(msg));
            }
            FaultKind::Duplicate
            | FaultKind::Panic
            | FaultKind::Stop
            | FaultKind::SlowEffect
            | FaultKind::FailEffect => addr.do_send(msg),
        }
    }
}

impl<A, M> Handler<Ask<M>> for Registry<A>
where
    A: ObjectActor + Handler<M>,
    M: Message + Send + 'static,
    M::Result: Send + 'static,
{
    type Result = ResponseFuture<Result<M::Result, AskError>>;

    fn handle(&mut self, Ask(key, msg): Ask<M>, _ctx: &mut Self::Context) -> Self::Result {
        let Some(addr) = self.live(&key) else {
            tracing::debug!(kind = A::KIND, %key, "no actor to ask");
            return Box::pin(std::future::ready(Err(AskError::NoActor(key))));
        };
        let delay = match self.inject(&key, Site::Forward).map(|d| d.fault) {
            None => None,
            Some(fault) => match fault.kind {
                FaultKind::Drop => {
                    return Box::pin(std::future::ready(Err(AskError::Dropped(key))));
                }
                FaultKind::Delay | FaultKind::Reorder => fault.delay,
                FaultKind::Duplicate
                | FaultKind::Panic
                | FaultKind::Stop
                | FaultKind::SlowEffect
                | FaultKind::FailEffect => None,
            },
        };
        let Some(delay) = delay else {
            // Queued in the actor's mailbox now, in the order the registry routes.
            let reply = addr.send(msg);
            return Box::pin(async move { reply.await.map_err(|e| AskError::Mailbox(key, e)) });
        };
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            addr.send(msg).await.map_err(|e| AskError::Mailbox(key, e))
        })
    }
}

impl<A, M> Handler<Broadcast<M>> for Registry<A>
where
    A: ObjectActor + Handler<M>,
    M: Message + Clone + Send + 'static,
    M::Result: Send,
{
    type Result = ();

    fn handle(&mut self, Broadcast { filter, msg }: Broadcast<M>, ctx: &mut Self::Context) {
        let keys: Vec<ObjectKey> = self
            .children
            .keys()
            .filter(|key| filter.matches(key))
            .cloned()
            .collect();
        for key in &keys {
            self.deliver(ctx, key, msg.clone());
        }
    }
}

#[cfg(test)]
mod tests;
