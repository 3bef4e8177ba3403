//! A cache of unpacked content keyed by manifest digest, bounded by the bytes it holds: least recently used
//! entries go first. Digests name immutable content, so an entry never goes stale.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

struct Entry<T> {
    value: Arc<T>,
    bytes: u64,
    used: u64,
}

struct Inner<T> {
    entries: HashMap<String, Entry<T>>,
    bytes: u64,
    clock: u64,
}

/// Digest → `Arc<T>`, at most `capacity` bytes (an entry larger than that is not kept).
pub struct DigestCache<T> {
    capacity: u64,
    inner: Mutex<Inner<T>>,
}

impl<T> DigestCache<T> {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                bytes: 0,
                clock: 0,
            }),
        }
    }

    pub fn get(&self, digest: &str) -> Option<Arc<T>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        let e = inner.entries.get_mut(digest)?;
        e.used = now;
        Some(e.value.clone())
    }

    /// Keeps `value` (weighing `bytes`), evicting the least recently used entries to stay within capacity.
    pub fn insert(&self, digest: &str, value: Arc<T>, bytes: u64) {
        if bytes > self.capacity {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        if let Some(old) = inner.entries.remove(digest) {
            inner.bytes -= old.bytes;
        }
        while inner.bytes + bytes > self.capacity {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = inner.entries.remove(&oldest) {
                inner.bytes -= e.bytes;
            }
        }
        inner.bytes += bytes;
        inner.entries.insert(
            digest.to_string(),
            Entry {
                value,
                bytes,
                used: now,
            },
        );
    }

    /// (entries, bytes) held.
    pub fn usage(&self) -> (usize, u64) {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (inner.entries.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::fits(&[("a", 4), ("b", 4)], 10, &["a", "b"])]
    #[case::evicts_least_recent(&[("a", 4), ("b", 4), ("c", 4)], 10, &["b", "c"])]
    #[case::too_big_is_not_kept(&[("a", 4), ("huge", 11)], 10, &["a"])]
    fn the_cache_stays_within_its_bytes(
        #[case] inserts: &[(&str, u64)],
        #[case] capacity: u64,
        #[case] kept: &[&str],
    ) {
        let c = DigestCache::new(capacity);
        for (k, n) in inserts {
            c.insert(k, Arc::new(()), *n);
        }
        let mut have: Vec<&str> = ["a", "b", "c", "huge"]
            .into_iter()
            .filter(|k| c.get(k).is_some())
            .collect();
        have.sort();
        assert_eq!(have, kept);
        assert!(c.usage().1 <= capacity);
    }

    #[test]
    fn a_read_makes_an_entry_recent() {
        let c = DigestCache::new(8);
        c.insert("a", Arc::new(1), 4);
        c.insert("b", Arc::new(2), 4);
        assert!(c.get("a").is_some());
        c.insert("c", Arc::new(3), 4);
        assert!(c.get("a").is_some() && c.get("b").is_none());
    }
}
