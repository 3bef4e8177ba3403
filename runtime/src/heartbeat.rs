//! Whether the actor thread still runs. Every actor of a binary runs on the actix System's one thread; the
//! Lease keeper and the HTTP endpoints run on the runtime's worker threads, so a System thread that is stuck (a
//! blocking call, a handler that never returns) goes unseen by both: the leader keeps renewing its Lease while
//! nothing reconciles, and `/healthz` answers `ok`. A task on the System thread beats every [`BEAT_EVERY`]; a
//! heartbeat silent for [`STALL_LIMIT`] makes the leader stop renewing and step down (the process exits
//! non-zero, a standby takes over: `leader::Elector::hold`) and `/healthz` answer 503 (the pod's liveness probe
//! restarts it).
//!
//! ```text
//! System thread: every 1 s ─beat─▶ Heartbeat ◀─silent_for─ Lease keeper (worker) / /healthz (worker)
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the System thread beats.
pub const BEAT_EVERY: Duration = Duration::from_secs(1);

/// How long the System thread may be silent before the process counts as stuck: far above any one poll of an
/// actor's work (resolution and other long computations run on `spawn_blocking`), far below what a stuck leader
/// would cost (every reconcile of the binary waits while it holds the Lease).
pub const STALL_LIMIT: Duration = Duration::from_secs(30);

/// The last beat of the System thread.
#[derive(Clone, Debug)]
pub struct Heartbeat {
    epoch: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Heartbeat {
    /// A heartbeat beaten every [`BEAT_EVERY`] by a task on the current actix System's thread (call inside the
    /// System).
    pub fn start() -> Self {
        let heartbeat = Self::default();
        let beating = heartbeat.clone();
        actix::spawn(async move {
            let mut every = tokio::time::interval(BEAT_EVERY);
            loop {
                every.tick().await;
                beating.beat();
            }
        });
        heartbeat
    }

    /// A heartbeat last beaten `ago` (tests).
    #[cfg(test)]
    pub(crate) fn silent(ago: Duration) -> Self {
        Self {
            epoch: Instant::now().checked_sub(ago).unwrap_or_else(Instant::now),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn beat(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// How long since the last beat (since creation before the first).
    pub fn silent_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// Whether the System thread counts as stuck.
    pub fn stalled(&self) -> bool {
        stalled(self.silent_for())
    }
}

/// Whether a silence this long means a stuck System thread.
pub fn stalled(silent: Duration) -> bool {
    silent >= STALL_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::just_beaten(Duration::ZERO, false)]
    #[case::a_long_poll(Duration::from_secs(29), false)]
    #[case::stuck(STALL_LIMIT, true)]
    fn a_silence_past_the_limit_is_a_stall(#[case] silent: Duration, #[case] want: bool) {
        assert_eq!(stalled(silent), want);
    }

    #[actix_rt::test]
    async fn the_system_thread_beats_and_a_heartbeat_nobody_beats_goes_silent() {
        tokio::time::pause();
        let heartbeat = Heartbeat::start();
        tokio::time::sleep(BEAT_EVERY * 3).await;
        // Paused tokio time does not move `Instant::now`: the beats are measured in real time, so the silence
        // right after a beat is near zero.
        assert!(heartbeat.silent_for() < Duration::from_secs(1));
        assert!(!heartbeat.stalled());
        let idle = Heartbeat::default();
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            idle.silent_for() >= Duration::from_millis(20),
            "no beat since creation"
        );
    }
}
