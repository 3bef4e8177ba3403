//! The readiness gate of an operator's decisions: closed at start, opened once every store its actors read has
//! completed its first list, so no decision is taken on a half-listed cluster (a CSV failed for an OperatorGroup
//! not yet seen, a Subscription resolved without its installed CSVs). Actors either ask whether it is open and
//! run again when the opener requeues them (olm-operator's CSVs), or wait for it (catalog-operator's runs). Any
//! number of tasks may wait at once: kube-runtime's `Store::wait_until_ready` keeps the waker of the last task
//! that polled it only, so one task waits on the stores and opens this gate for all.

use tokio::sync::watch;

#[derive(Debug)]
pub struct Gate {
    open: watch::Sender<bool>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            open: watch::channel(false).0,
        }
    }
}

impl Gate {
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    pub fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// Wait until the gate is open (at once when it is).
    pub async fn opened(&self) {
        let mut rx = self.open.subscribe();
        // The sender lives as long as `self`: `wait_for` cannot see it closed.
        let _ = rx.wait_for(|open| *open).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn every_waiter_wakes_when_the_gate_opens() {
        let gate = Arc::new(Gate::default());
        assert!(!gate.is_open());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let g = gate.clone();
                tokio::spawn(async move { g.opened().await })
            })
            .collect();
        tokio::task::yield_now().await;
        assert!(waiters.iter().all(|w| !w.is_finished()));
        gate.open();
        for w in waiters {
            tokio::time::timeout(std::time::Duration::from_secs(5), w)
                .await
                .expect("a waiter woke")
                .expect("joined");
        }
        assert!(gate.is_open());
    }

    #[tokio::test]
    async fn an_open_gate_lets_through_at_once() {
        let gate = Gate::default();
        gate.open();
        tokio::time::timeout(std::time::Duration::from_secs(5), gate.opened())
            .await
            .expect("open");
    }
}
