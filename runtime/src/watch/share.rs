//! The objects a registry and its actors hold are the watch store's own `Arc`s, not copies of them: one copy of
//! each watched object per process instead of two (the reflector stores `Arc::new(clone)` of every event's
//! object). A change is looked up in the store it was just applied to. A listing (`Init`, `InitApply`…,
//! `InitDone`) fills a buffer the store swaps in only at `InitDone`, so its objects are held back by key and
//! sent, looked up, after `InitDone` reached the store: the registry sees the same events in the same order, the
//! listed ones at the end of the listing instead of page by page. A deletion, or an object the store does not
//! hold at that version, is sent as a fresh `Arc`.
//!
//! ```text
//! watcher ─▶ reflector (store) ─▶ Share::pass ─ Apply: store.get(key) ─▶ Watched ─▶ registry ─▶ actor
//!                                              └ InitApply: key held ┘ until InitDone, then looked up
//! ```

use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use std::sync::Arc;

/// The sharing step of one watch (see the module header).
pub(super) struct Share<K: kube::Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    /// The keys of the listing in progress, in the order listed.
    listing: Option<Vec<ObjectRef<K>>>,
}

impl<K: kube::Resource<DynamicType = ()> + Clone + 'static> Share<K> {
    pub(super) fn new(store: Store<K>) -> Self {
        Self {
            store,
            listing: None,
        }
    }

    /// The events to send for one event the reflector has applied (none while a listing is in progress).
    pub(super) fn pass(&mut self, event: watcher::Event<K>) -> Vec<watcher::Event<Arc<K>>> {
        match event {
            watcher::Event::Init => {
                self.listing = Some(Vec::new());
                vec![watcher::Event::Init]
            }
            watcher::Event::InitApply(obj) => match self.listing.as_mut() {
                Some(listing) => {
                    listing.push(ObjectRef::from_obj(&obj));
                    Vec::new()
                }
                None => vec![watcher::Event::InitApply(Arc::new(obj))],
            },
            watcher::Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                let mut out: Vec<_> = listed
                    .iter()
                    .filter_map(|key| self.store.get(key))
                    .map(watcher::Event::InitApply)
                    .collect();
                out.push(watcher::Event::InitDone);
                out
            }
            watcher::Event::Apply(obj) => vec![watcher::Event::Apply(self.stored(obj))],
            watcher::Event::Delete(obj) => vec![watcher::Event::Delete(Arc::new(obj))],
        }
    }

    /// The store's `Arc` of `obj` when it holds this version of it, else a new one.
    fn stored(&self, obj: K) -> Arc<K> {
        match self.store.get(&ObjectRef::from_obj(&obj)) {
            Some(held) if held.meta().resource_version == obj.meta().resource_version => held,
            _ => Arc::new(obj),
        }
    }
}
