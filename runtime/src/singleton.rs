//! A process's one-of-a-kind actor (the janitor, the OLMConfig status writer), started again when it died. An
//! object's actor is supervised by its registry; a singleton has none, and a panic in an actix handler (or a
//! stop) closes its mailbox for good, so every later message to it would be lost and its work never done. Senders
//! hold a [`Singleton`] instead of the actor's recipient: each send first checks the mailbox, and when it is
//! closed starts a new actor (`start(Restart::Again)`, which must make up for what the dead one held only in
//! memory) and sends to it; a check every [`crate::children::SUPERVISE_EVERY`] does the same when no message
//! comes (an actor that died after its last message still has its lost work to make up). Restarts are logged
//! and counted. A send from off the actix thread (a watch's change handler runs on a runtime worker) cannot start
//! an actor there (actix starts actors with `spawn_local`, which panics outside the System's thread): when the
//! actor died, such a send is handed to the System's arbiter, which starts the new actor and delivers it.

use actix::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

/// Which start of the actor this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    First,
    /// The previous actor died: whatever it held in memory is gone.
    Again,
}

type Start<M> = Box<dyn Fn(Restart) -> Recipient<M> + Send + Sync>;

/// The current actor of a singleton, and how to start a new one.
pub struct Singleton<M>
where
    M: Message<Result = ()> + Send + 'static,
{
    inner: Arc<Inner<M>>,
}

/// A singleton's first mailbox, its actor not running yet ([`Singleton::prepare`]).
pub struct Pending<A: Actor<Context = Context<A>>> {
    context: Context<A>,
}

struct Inner<M>
where
    M: Message<Result = ()> + Send + 'static,
{
    kind: &'static str,
    current: Mutex<Recipient<M>>,
    /// How to start a new actor: set when the first one runs ([`Singleton::start`], [`Singleton::run`]).
    start: Mutex<Option<Start<M>>>,
    restarts: AtomicU64,
    /// The thread of the actix arbiter the singleton was started on, and that arbiter: actors start there.
    home: (ThreadId, ArbiterHandle),
}

impl<M> Inner<M>
where
    M: Message<Result = ()> + Send + 'static,
{
    /// The current actor, started again first when it died.
    fn alive(&self) -> std::sync::MutexGuard<'_, Recipient<M>> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if !current.connected() {
            let start = self.start.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(start) = start.as_ref() {
                let n = self.restarts.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(
                    kind = self.kind,
                    restarts = n,
                    "the actor had died; starting it again"
                );
                *current = start(Restart::Again);
            }
        }
        current
    }
}

impl<M> Singleton<M>
where
    M: Message<Result = ()> + Send + 'static,
{
    /// Start the actor (inside the actix system) with `start(Restart::First)`, and its supervision.
    pub fn start(
        kind: &'static str,
        start: impl Fn(Restart) -> Recipient<M> + Send + Sync + 'static,
    ) -> Self {
        let first = start(Restart::First);
        let single = Self::with_current(kind, first);
        single.supervise(Box::new(start));
        single
    }

    /// The singleton of actor kind `A` before its first actor runs (inside the actix system): its mailbox exists
    /// (messages wait there), so what the actor shares can hold the singleton; [`Self::run`] starts it.
    pub fn prepare<A>(kind: &'static str) -> (Self, Pending<A>)
    where
        A: Actor<Context = Context<A>> + Handler<M>,
        M::Result: Send,
    {
        let context = Context::new();
        let first = context.address().recipient();
        (Self::with_current(kind, first), Pending { context })
    }

    /// Run `first` in the prepared mailbox, and from then on start a dead actor again with
    /// `again(Restart::Again)`.
    pub fn run<A>(
        &self,
        pending: Pending<A>,
        first: A,
        again: impl Fn(Restart) -> Recipient<M> + Send + Sync + 'static,
    ) where
        A: Actor<Context = Context<A>>,
    {
        pending.context.run(first);
        self.supervise(Box::new(again));
    }

    fn with_current(kind: &'static str, first: Recipient<M>) -> Self {
        Self {
            inner: Arc::new(Inner {
                kind,
                current: Mutex::new(first),
                start: Mutex::new(None),
                restarts: AtomicU64::new(0),
                home: (std::thread::current().id(), Arbiter::current()),
            }),
        }
    }

    /// Keep `start` for restarts, and check every [`crate::children::SUPERVISE_EVERY`] that the actor lives.
    fn supervise(&self, start: Start<M>) {
        *self
            .inner
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(start);
        let watched = Arc::downgrade(&self.inner);
        actix::spawn(async move {
            let mut every = tokio::time::interval(crate::children::SUPERVISE_EVERY);
            loop {
                every.tick().await;
                let Some(inner) = watched.upgrade() else {
                    return;
                };
                drop(inner.alive());
            }
        });
    }

    /// Send to the actor, starting a new one first when the current one died (on the actix thread: from any
    /// other thread, the start and this message go through the arbiter).
    pub fn do_send(&self, msg: M) {
        let (thread, arbiter) = &self.inner.home;
        if std::thread::current().id() == *thread {
            self.inner.alive().do_send(msg);
            return;
        }
        {
            let current = self
                .inner
                .current
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if current.connected() {
                current.do_send(msg);
                return;
            }
        }
        let inner = self.inner.clone();
        if !arbiter.spawn_fn(move || inner.alive().do_send(msg)) {
            tracing::warn!(
                kind = self.inner.kind,
                "the actix system has stopped: a message to a dead actor is dropped"
            );
        }
    }

    /// How many times the actor was started again.
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    fn connected(&self) -> bool {
        self.inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts what it receives into `seen`; `Stop` stops it (as a chaos `stop` or a panic closes its mailbox).
    struct Counter {
        seen: Seen,
        start: Restart,
    }

    impl Actor for Counter {
        type Context = Context<Self>;
    }

    #[derive(Message)]
    #[rtype(result = "()")]
    enum Msg {
        Count(u32),
        Stop,
    }

    type Seen = Arc<Mutex<Vec<(Restart, u32)>>>;

    /// A singleton `Counter` and what it has seen.
    fn counter() -> (Singleton<Msg>, Seen) {
        let seen: Seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let single = Singleton::start("Counter", move |start| {
            Counter {
                seen: s.clone(),
                start,
            }
            .start()
            .recipient()
        });
        (single, seen)
    }

    impl Handler<Msg> for Counter {
        type Result = ();
        fn handle(&mut self, msg: Msg, ctx: &mut Context<Self>) {
            match msg {
                Msg::Count(n) => self
                    .seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((self.start, n)),
                Msg::Stop => ctx.stop(),
            }
        }
    }

    /// Wait (bounded: the stop is handled once the test yields) until the singleton's actor stopped.
    async fn stopped(single: &Singleton<Msg>) {
        let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while single.connected() {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(closed.is_ok(), "the actor did not stop");
    }

    /// What the counters saw, once it holds `n` counts (bounded).
    async fn counted(seen: &Seen, n: usize) -> Vec<(Restart, u32)> {
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            loop {
                let now = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
                if now.len() == n {
                    return now;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the counts arrive")
    }

    #[actix_rt::test]
    async fn a_dead_singleton_is_started_again_by_the_next_send_and_gets_it() {
        let (single, seen) = counter();
        single.do_send(Msg::Count(1));
        single.do_send(Msg::Stop);
        stopped(&single).await;
        single.do_send(Msg::Count(2));
        let got = counted(&seen, 2).await;
        assert_eq!(got, vec![(Restart::First, 1), (Restart::Again, 2)]);
        assert_eq!(single.restarts(), 1);
    }

    #[actix_rt::test]
    async fn a_send_from_another_thread_to_a_dead_singleton_starts_it_on_the_actix_thread() {
        let (single, seen) = counter();
        single.do_send(Msg::Stop);
        stopped(&single).await;
        // A watch's change handler runs on a runtime worker, not on the actix thread.
        let sender = Singleton {
            inner: single.inner.clone(),
        };
        let sent = std::thread::spawn(move || sender.do_send(Msg::Count(7))).join();
        assert!(sent.is_ok(), "the send from another thread panicked");
        let got = counted(&seen, 1).await;
        assert_eq!(got, vec![(Restart::Again, 7)]);
        assert_eq!(single.restarts(), 1);
    }

    #[actix_rt::test]
    async fn a_singleton_that_died_after_its_last_message_is_started_again_unasked() {
        let (single, _seen) = counter();
        single.do_send(Msg::Stop);
        // Within a few supervision periods, with no message sent: a new actor, connected.
        let restarted = tokio::time::timeout(crate::children::SUPERVISE_EVERY * 5, async {
            while single.restarts() == 0 || !single.connected() {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(
            restarted.is_ok(),
            "the dead singleton was not started again"
        );
    }
}
