//! When an operator is active: at once without leader election, or from the moment it wins the leader Lease.
//!
//! The Lease is renewed from the moment it is won, by a task of its own on the runtime's worker threads, while
//! the operator is still starting (discovery waits up to 5 s for each unavailable API group, the first lists can
//! be long): a leader that renewed only once start-up was over would let its Lease lapse, and a standby would
//! take it while the first leader starts its actors. The actors run on the System's own thread, so one busy
//! actor cannot delay a renewal either.
//!
//! ```text
//! acquire ─won─▶ spawn keeper: hold() renews every retry period ──lost──▶ run_until_stopped → LostLeadership
//!                              └─ stop (SIGTERM) ─▶ release() ──────────▶ run_until_stopped → Signal
//! ```

use crate::heartbeat::Heartbeat;
use crate::leader::{ElectionConfig, Elector, LeaderError, LostLeadership, Role};
use crate::metrics::Metrics;
use crate::shutdown::ShutdownSignal;
use kube::Client;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// When the operator is active: at once (no election), or while it holds the leader Lease.
pub struct Activation {
    /// The candidate, until it wins the Lease; then the keeper owns it.
    elector: Option<Elector>,
    keeper: Option<Keeper>,
    role: watch::Receiver<Role>,
    signal: ShutdownSignal,
    /// The actor thread's heartbeat: a stuck leader steps down (`Elector::with_liveness`).
    heartbeat: Heartbeat,
}

/// The task that renews a won Lease: asked to stop, it releases the Lease and ends with `None`; losing the
/// Lease ends it with why.
struct Keeper {
    stop: oneshot::Sender<()>,
    done: JoinHandle<Option<LostLeadership>>,
}

impl Keeper {
    fn spawn(mut elector: Elector) -> Self {
        let (stop, stopped) = oneshot::channel();
        let done = tokio::spawn(async move {
            tokio::select! {
                lost = elector.hold() => Some(lost),
                _ = stopped => {
                    elector.release().await;
                    None
                }
            }
        });
        Self { stop, done }
    }
}

/// Why the operator stopped.
#[derive(Debug)]
pub enum Stopped {
    /// SIGTERM or SIGINT (the Lease, if held, was released).
    Signal,
    /// The leader could not renew its Lease in time or saw another holder: exit non-zero so the pod restarts
    /// as a candidate (client-go's controllers do the same); its actors must not keep writing.
    LostLeadership(LostLeadership),
}

impl Activation {
    /// From `--leader-elect*` (`None` when off). Listens for SIGTERM/SIGINT from here on (inside the runtime).
    pub fn new(
        client: &Client,
        metrics: &Metrics,
        election: Option<ElectionConfig>,
    ) -> Result<Self, LeaderError> {
        let heartbeat = Heartbeat::start();
        let (elector, role) = match election {
            Some(config) => {
                let name = config.lease_name.clone();
                let elector =
                    Elector::new(client.clone(), config)?.with_liveness(heartbeat.clone());
                metrics.follow_leadership(&name, elector.role());
                let role = elector.role();
                (Some(elector), role)
            }
            None => (None, watch::channel(Role::Single).1),
        };
        Ok(Self {
            elector,
            keeper: None,
            role,
            signal: ShutdownSignal::listen(),
            heartbeat,
        })
    }

    pub fn role(&self) -> watch::Receiver<Role> {
        self.role.clone()
    }

    /// The actor thread's heartbeat (`/healthz` reads it).
    pub fn heartbeat(&self) -> Heartbeat {
        self.heartbeat.clone()
    }

    /// Wait until this replica may act: at once without election; else until it holds the Lease, which is then
    /// renewed from here on. `Ok(false)` when a signal came first (the process should exit cleanly).
    pub async fn acquire(&mut self) -> Result<bool, LeaderError> {
        let Some(elector) = self.elector.as_mut() else {
            return Ok(true);
        };
        tracing::info!(identity = %elector.identity(), "waiting for the leader Lease");
        tokio::select! {
            acquired = elector.acquire() => acquired?,
            () = self.signal.recv() => return Ok(false),
        }
        if let Some(elector) = self.elector.take() {
            self.keeper = Some(Keeper::spawn(elector));
        }
        Ok(true)
    }

    /// Run a step of start-up (`fut`) while this replica may act: `Err` with why it must stop instead when a
    /// signal comes (the Lease, if held, is released at once) or leadership is lost first, so a slow start-up
    /// (discovery waiting for an unavailable API group) neither delays a SIGTERM nor outlives the Lease.
    pub async fn while_active<F: std::future::Future>(
        &mut self,
        fut: F,
    ) -> Result<F::Output, Stopped> {
        let Some(keeper) = self.keeper.as_mut() else {
            return tokio::select! {
                out = fut => Ok(out),
                () = self.signal.recv() => Err(Stopped::Signal),
            };
        };
        let ended = tokio::select! {
            out = fut => return Ok(out),
            ended = &mut keeper.done => ended,
            () = self.signal.recv() => {
                if let Some(Keeper { stop, done }) = self.keeper.take() {
                    let _ = stop.send(());
                    if let Err(error) = done.await {
                        tracing::warn!(error = %error, "the task renewing the Lease ended before it released it");
                    }
                }
                return Err(Stopped::Signal);
            }
        };
        self.keeper = None;
        Err(stopped_by(ended))
    }

    /// Wait for a signal (then release the Lease, if held) or for leadership to be lost.
    pub async fn run_until_stopped(mut self) -> Stopped {
        let Some(Keeper { stop, mut done }) = self.keeper.take() else {
            self.signal.recv().await;
            return Stopped::Signal;
        };
        tokio::select! {
            ended = &mut done => stopped_by(ended),
            () = self.signal.recv() => {
                let _ = stop.send(());
                if let Err(error) = done.await {
                    tracing::warn!(error = %error, "the task renewing the Lease ended before it released it");
                }
                Stopped::Signal
            }
        }
    }
}

/// Why the keeper ended: it lost the Lease, it was stopped (a signal), or it failed.
fn stopped_by(ended: Result<Option<LostLeadership>, tokio::task::JoinError>) -> Stopped {
    match ended {
        Ok(Some(lost)) => Stopped::LostLeadership(lost),
        Ok(None) => Stopped::Signal,
        Err(error) => Stopped::LostLeadership(LostLeadership::KeeperEnded(error.to_string())),
    }
}
