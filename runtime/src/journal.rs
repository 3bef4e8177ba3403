//! A kind's journal as the actors of the kind and their supervisor share it: every start, routing decision,
//! fault and run outcome of the kind, served at `/debug/journal` (`crate::endpoints`).

use messages::key::ObjectKey;
use messages::msg::{Journal, JournalEntry, JournalEvent};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// A shared handle on a kind's journal (read by the debug endpoint).
pub type SharedJournal = Arc<Mutex<Journal>>;

/// Record `event` of `kind`'s object `key`, stamped with the wall clock in milliseconds.
pub fn record(journal: &SharedJournal, kind: &str, key: &ObjectKey, event: JournalEvent) {
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    journal
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .record(JournalEntry {
            at_ms,
            kind: kind.to_string(),
            key: key.clone(),
            event,
        });
}
