//! A bounded journal of the traffic a registry routes to its object actors, encoded with MessagePack (rmp-serde)
//! when sent over the debug endpoint or stored, so tests can replay or assert on actor traffic.

use crate::key::ObjectKey;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What happened to an object, as routed to its actor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JournalEvent {
    /// First sight: an actor was started for the object.
    Spawned,
    /// A new observation was routed (with the object's resourceVersion).
    Observed { resource_version: Option<String> },
    /// The object was deleted (or vanished in a relist); its actor was stopped.
    Stopped,
    /// The actor had died (mailbox closed) and was started again.
    Respawned,
    /// One run of the object's reconcile loop ended (`olm_runtime::reconcile`): its classified error, if
    /// any, and the delay of the timer it set.
    Reconciled {
        error: Option<String>,
        requeue_ms: Option<u64>,
    },
    /// A cause arrived before the run it joins had started.
    Coalesced { cause: String },
    /// A watched object whose stored JSON does not decode as its kind was skipped (the rest of the kind goes on);
    /// `deleted` when the undecodable version was the object's deletion (routed as a deletion all the same).
    Undecodable {
        resource_version: Option<String>,
        error: String,
        #[serde(default)]
        deleted: bool,
    },
    /// A cause arrived while the object's current version does not decode: no run was made for it (the actor
    /// holds until a version that decodes arrives).
    Held { cause: String },
    /// The chaos injector (`olm_runtime::chaos`, on only under `OLM_RS_CHAOS`) made a fault: with the run's
    /// seed, the decision site and the index of the decision for this object at that site, so that the same
    /// seed and configuration replay the same decision.
    Fault {
        seed: u64,
        site: String,
        n: u64,
        fault: String,
        delay_ms: Option<u64>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub kind: String,
    pub key: ObjectKey,
    pub event: JournalEvent,
}

/// A ring buffer of journal entries; the oldest are dropped past `capacity`, and counted ([`Journal::dropped`]),
/// so a reader knows whether it holds every entry recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    capacity: usize,
    entries: VecDeque<JournalEntry>,
    /// Entries dropped to make room (or refused by a zero capacity).
    #[serde(default)]
    dropped: u64,
}

impl Journal {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity,
            entries: VecDeque::with_capacity(capacity.min(1024)),
            dropped: 0,
        }
    }

    pub fn record(&mut self, entry: JournalEntry) {
        if self.capacity == 0 {
            self.dropped += 1;
            return;
        }
        while self.entries.len() >= self.capacity {
            self.entries.pop_front();
            self.dropped += 1;
        }
        self.entries.push_back(entry);
    }

    /// Record every entry of `other` and add up what it dropped (merging several journals into one).
    pub fn absorb(&mut self, other: &Journal) {
        for entry in other.entries() {
            self.record(entry.clone());
        }
        self.dropped += other.dropped;
    }

    /// How many entries were dropped (the oldest, past the capacity): 0 when the journal holds all it recorded.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn entries(&self) -> impl Iterator<Item = &JournalEntry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// MessagePack bytes (named fields, so readers in other languages can decode them too).
    pub fn to_msgpack(&self) -> Result<Vec<u8>, rmp_serde::encode::Error> {
        rmp_serde::to_vec_named(self)
    }

    pub fn from_msgpack(bytes: &[u8]) -> Result<Self, rmp_serde::decode::Error> {
        rmp_serde::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> JournalEntry {
        JournalEntry {
            at_ms: n,
            kind: "ClusterServiceVersion".into(),
            key: ObjectKey::new("ns", format!("csv-{n}")),
            event: JournalEvent::Observed {
                resource_version: Some(n.to_string()),
            },
        }
    }

    #[test]
    fn a_journal_round_trips_through_messagepack() {
        let mut j = Journal::with_capacity(10);
        j.record(entry(1));
        j.record(JournalEntry {
            event: JournalEvent::Stopped,
            ..entry(2)
        });
        let bytes = j.to_msgpack().expect("encode");
        assert_eq!(Journal::from_msgpack(&bytes).expect("decode"), j);
    }

    #[test]
    fn a_full_journal_drops_its_oldest_entries() {
        let mut j = Journal::with_capacity(3);
        for n in 0..5 {
            j.record(entry(n));
        }
        let kept: Vec<u64> = j.entries().map(|e| e.at_ms).collect();
        assert_eq!(kept, vec![2, 3, 4]);
        assert_eq!(j.dropped(), 2, "the two oldest are counted as dropped");
    }

    #[test]
    fn a_merged_journal_adds_up_what_each_part_dropped() {
        let mut full = Journal::with_capacity(1);
        full.record(entry(1));
        full.record(entry(2));
        let mut whole = Journal::with_capacity(10);
        whole.record(entry(3));
        let mut merged = Journal::with_capacity(usize::MAX);
        merged.absorb(&full);
        merged.absorb(&whole);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged.dropped(), 1);
        let bytes = merged.to_msgpack().expect("encode");
        assert_eq!(Journal::from_msgpack(&bytes).expect("decode").dropped(), 1);
    }

    #[test]
    fn malformed_bytes_are_an_error_not_a_panic() {
        assert!(Journal::from_msgpack(&[0xc1, 0x00, 0xff]).is_err());
    }
}
