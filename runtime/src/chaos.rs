//! The seeded fault injector inside the actors: off unless `OLM_RS_CHAOS` is set (always compiled in, so a
//! chaos run tests the very binary that ships), making faults at three sites:
//!
//! ```text
//!  reconcile::Loop start ──(Site::Run)──▶ panic | stop | slow (delay the run's writes) | fail (skip them)
//!  Registry Broadcast / resync ──(Site::Deliver)──▶ drop | delay | dup | reorder
//!  Registry Forward ──(Site::Forward)──▶ drop | delay | reorder
//! ```
//!
//! Every decision is a pure function of (seed, actor kind, object key, site, n), `n` counting the decisions
//! made for that object at that site ([`decide::decide`]); every fault made is journaled as
//! [`JournalEvent::Fault`] with the seed and `n`, and [`replay`] recomputes a journal's faults from the
//! configuration. What replays exactly: the fault of the n-th decision of each object at each site. What does
//! not: how many decisions real timing makes (coalesced runs, watch events, API latency vary between runs), so
//! a whole run's interleaving is not reproduced, only each object's decision sequence.

pub mod config;
pub mod decide;

pub use config::{ChaosConfig, ConfigError, FaultKind, Site};
pub use decide::{Fault, decide};

use messages::key::ObjectKey;
use messages::msg::{JournalEntry, JournalEvent};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The environment variable that switches chaos on.
pub const ENV: &str = "OLM_RS_CHAOS";

/// A fault made by the injector: the decision's index and the fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub site: Site,
    pub n: u64,
    pub fault: Fault,
}

impl Decision {
    /// The journal event recording this fault.
    pub fn event(&self, seed: u64) -> JournalEvent {
        JournalEvent::Fault {
            seed,
            site: self.site.as_str().to_string(),
            n: self.n,
            fault: self.fault.kind.as_str().to_string(),
            delay_ms: self.fault.delay.map(|d| d.as_millis() as u64),
        }
    }
}

/// The injector: the configuration and each object's decision counters.
#[derive(Debug)]
pub struct Injector {
    config: ChaosConfig,
    counters: Mutex<HashMap<(String, String, Site), u64>>,
    made: [AtomicU64; FaultKind::ALL.len()],
}

impl Injector {
    pub fn new(config: ChaosConfig) -> Self {
        Self {
            config,
            counters: Mutex::default(),
            made: Default::default(),
        }
    }

    pub fn config(&self) -> &ChaosConfig {
        &self.config
    }

    /// The next decision for `key` (of actor kind `kind`) at `site`: `Some` when it makes a fault.
    pub fn next(&self, kind: &str, key: &ObjectKey, site: Site) -> Option<Decision> {
        if !self.config.covers(kind) {
            return None;
        }
        let key = key.to_string();
        let n = {
            let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
            let counter = counters
                .entry((kind.to_string(), key.clone(), site))
                .or_insert(0);
            let n = *counter;
            *counter += 1;
            n
        };
        let fault = decide(&self.config, kind, &key, site, n)?;
        if let Some(i) = FaultKind::ALL.iter().position(|k| *k == fault.kind) {
            self.made[i].fetch_add(1, Ordering::Relaxed);
        }
        tracing::info!(kind, key = %key, site = site.as_str(), n, fault = fault.kind.as_str(), delay = ?fault.delay, "chaos: injecting a fault");
        Some(Decision { site, n, fault })
    }

    /// How many faults of each kind were made.
    pub fn made(&self) -> BTreeMap<FaultKind, u64> {
        FaultKind::ALL
            .iter()
            .zip(&self.made)
            .map(|(k, c)| (*k, c.load(Ordering::Relaxed)))
            .collect()
    }
}

/// Read `OLM_RS_CHAOS` (unset or empty: chaos off). Binaries call it once at start-up, so a bad value stops the
/// operator with the parse error, and hand the injector to their actors' loops and registries (no process-wide
/// state).
pub fn from_env() -> Result<Option<Arc<Injector>>, ConfigError> {
    match std::env::var(ENV) {
        Ok(text) if !text.trim().is_empty() => {
            let config = ChaosConfig::parse(&text)?;
            tracing::warn!(config = %config.to_text(), "chaos is ON: faults will be injected into the actors");
            Ok(Some(Arc::new(Injector::new(config))))
        }
        _ => Ok(None),
    }
}

/// One journaled fault that the configuration does not reproduce.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub entry: JournalEntry,
    /// What the configuration decides for that decision instead.
    pub replayed: Option<Fault>,
}

/// Recompute every fault of the journal from `config`: the faults that do not replay (empty: the journal is
/// this configuration's). Faults journaled under another seed are mismatches too.
pub fn replay<'a>(
    config: &ChaosConfig,
    entries: impl IntoIterator<Item = &'a JournalEntry>,
) -> Vec<Mismatch> {
    let mut mismatches = Vec::new();
    for entry in entries {
        let JournalEvent::Fault {
            seed,
            site,
            n,
            fault,
            delay_ms,
        } = &entry.event
        else {
            continue;
        };
        let replayed = Site::parse(site)
            .and_then(|site| decide(config, &entry.kind, &entry.key.to_string(), site, *n));
        let same = *seed == config.seed
            && replayed.is_some_and(|r| {
                r.kind.as_str() == fault && r.delay.map(|d| d.as_millis() as u64) == *delay_ms
            });
        if !same {
            mismatches.push(Mismatch {
                entry: entry.clone(),
                replayed,
            });
        }
    }
    mismatches
}

#[cfg(test)]
mod tests;
