//! The copy of its object an actor works from, across its own status writes (used by the CSV, Subscription
//! and InstallPlan actors). After a write the actor works from what the API returned; the watch delivers
//! versions in order, so every event before the one carrying that write's resourceVersion is older and is
//! ignored until it arrives (resourceVersion compared for equality only: the API says it is opaque). Two
//! ways out besides that event, both taking the reflector store's copy:
//!
//! - **a conflict (409)**: someone else wrote the object, so our copy is stale by definition; waiting for our
//!   last write's event would ignore theirs and conflict again until the resync;
//! - **the resync**: a watch that relisted past our write never delivers its event.

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use messages::key::ObjectKey;
use std::sync::Arc;

/// The object of one actor and the resourceVersion of its last own write, until its event arrives.
#[derive(Debug)]
pub struct OwnWrites<K> {
    latest: Option<Arc<K>>,
    awaiting: Option<String>,
}

impl<K> Default for OwnWrites<K> {
    fn default() -> Self {
        Self {
            latest: None,
            awaiting: None,
        }
    }
}

impl<K> OwnWrites<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// The copy to work from.
    pub fn latest(&self) -> Option<&Arc<K>> {
        self.latest.as_ref()
    }

    /// Whether a write of ours has not come back through the watch yet.
    pub fn is_awaiting(&self) -> bool {
        self.awaiting.is_some()
    }

    /// Our write succeeded: work from what the API returned, ignore older events until its own.
    pub fn wrote(&mut self, written: Arc<K>) {
        self.awaiting = written.meta().resource_version.clone();
        self.latest = Some(written);
    }

    /// A watch event: taken unless it trails our own write. True when taken.
    pub fn observe(&mut self, seen: Arc<K>) -> bool {
        if let Some(written) = self.awaiting.as_ref() {
            if seen.meta().resource_version.as_ref() != Some(written) {
                return false;
            }
            self.awaiting = None;
        }
        self.latest = Some(seen);
        true
    }

    /// A write of ours conflicted (409): stop waiting for our last write's event and take the store's copy.
    pub fn conflicted(&mut self, store: &Store<K>, key: &ObjectKey) {
        self.awaiting = None;
        if let Some(stored) = lookup(store, key) {
            self.latest = Some(stored);
        }
    }

    /// The resync's safety net for a watch that relisted past our write: take the store's copy if still waiting.
    pub fn resync(&mut self, store: &Store<K>, key: &ObjectKey) {
        if self.awaiting.take().is_some()
            && let Some(stored) = lookup(store, key)
        {
            self.latest = Some(stored);
        }
    }
}

fn lookup<K>(store: &Store<K>, key: &ObjectKey) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let reference = match key.namespace.as_deref() {
        Some(ns) => ObjectRef::new(&key.name).within(ns),
        None => ObjectRef::new(&key.name),
    };
    store.get(&reference)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::runtime::watcher::Event;
    use rstest::rstest;

    fn cm(rv: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn rv(w: &OwnWrites<ConfigMap>) -> Option<String> {
        w.latest().and_then(|c| c.metadata.resource_version.clone())
    }

    fn store_with(rv: &str) -> Store<ConfigMap> {
        let (reader, mut writer) = kube::runtime::reflector::store();
        writer.apply_watcher_event(&Event::Apply((*cm(rv)).clone()));
        reader
    }

    #[rstest]
    #[case::events_before_ours_are_ignored(&["1"], "5", &["3"], "5")]
    #[case::our_event_ends_the_wait(&["1"], "5", &["3", "5"], "5")]
    #[case::events_after_ours_are_taken(&["1"], "5", &["5", "7"], "7")]
    #[case::without_a_write_every_event_is_taken(&["1", "2"], "", &[], "2")]
    fn watch_events_around_our_write(
        #[case] before: &[&str],
        #[case] written: &str,
        #[case] after: &[&str],
        #[case] expected: &str,
    ) {
        let mut w = OwnWrites::default();
        for v in before {
            assert!(w.observe(cm(v)));
        }
        if !written.is_empty() {
            w.wrote(cm(written));
        }
        for v in after {
            w.observe(cm(v));
        }
        assert_eq!(rv(&w).as_deref(), Some(expected));
    }

    #[test]
    fn a_conflict_takes_the_stores_copy_and_stops_waiting() {
        let mut w = OwnWrites::default();
        w.wrote(cm("5"));
        let store = store_with("9");
        w.conflicted(&store, &ObjectKey::new("ns", "a"));
        assert_eq!(rv(&w).as_deref(), Some("9"));
        assert!(!w.is_awaiting());
        assert!(w.observe(cm("11")), "the next event is taken");
    }

    #[test]
    fn the_resync_takes_the_stores_copy_only_while_waiting() {
        let store = store_with("9");
        let key = ObjectKey::new("ns", "a");
        let mut idle = OwnWrites::default();
        idle.observe(cm("12"));
        idle.resync(&store, &key);
        assert_eq!(rv(&idle).as_deref(), Some("12"), "nothing awaited: kept");
        let mut waiting = OwnWrites::default();
        waiting.wrote(cm("5"));
        waiting.resync(&store, &key);
        assert_eq!(rv(&waiting).as_deref(), Some("9"));
        assert!(!waiting.is_awaiting());
    }
}
