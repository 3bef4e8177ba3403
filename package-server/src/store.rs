//! The served PackageManifests: per CatalogSource, the manifests of its last good read. Each change of a
//! catalog's content becomes watch events (ADDED / MODIFIED / DELETED per package) numbered by one counter that
//! is also every object's and list's `resourceVersion`; the last [`HISTORY`] events are kept so a watch that
//! starts from a list's resourceVersion misses nothing. What a namespace sees (OLM's provider `List`): the
//! catalogs of that namespace, then those of the global namespace (presented in the asking namespace); all
//! namespaces: every catalog's packages in their own namespace.

use crate::types::PackageManifest;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, PoisonError, RwLock};
use tokio::sync::broadcast;

/// Watch events kept for watches that start from an older resourceVersion.
pub const HISTORY: usize = 8192;

/// A CatalogSource: (namespace, name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CatalogKey {
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change of one package of one catalog.
#[derive(Clone, Debug)]
pub struct StoreEvent {
    pub rv: u64,
    pub kind: EventType,
    pub object: Arc<PackageManifest>,
}

/// Where a watch starts.
#[derive(Debug, PartialEq)]
pub enum Start {
    /// Synthetic ADDED events for everything visible, then changes (no resourceVersion, or "0").
    Fresh,
    /// Changes after this resourceVersion, replayed from the history.
    After(u64),
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WatchError {
    #[error("too old resource version: {asked} ({oldest})")]
    Expired { asked: u64, oldest: u64 },
    #[error("resource version {0:?} is not a number")]
    Invalid(String),
}

impl Start {
    pub fn parse(rv: Option<&str>) -> Result<Start, WatchError> {
        match rv {
            None | Some("") | Some("0") => Ok(Start::Fresh),
            Some(s) => s
                .parse()
                .map(Start::After)
                .map_err(|_| WatchError::Invalid(s.to_string())),
        }
    }
}

#[derive(Default)]
struct Inner {
    rv: u64,
    catalogs: BTreeMap<CatalogKey, BTreeMap<String, Arc<PackageManifest>>>,
    history: VecDeque<Arc<StoreEvent>>,
}

pub struct PackageStore {
    global_namespace: String,
    inner: RwLock<Inner>,
    events: broadcast::Sender<Arc<StoreEvent>>,
}

/// A started watch: what to send first, then the live events (filter with [`PackageStore::visible_in`]).
pub struct Subscription {
    pub backlog: Vec<Arc<StoreEvent>>,
    pub live: broadcast::Receiver<Arc<StoreEvent>>,
    /// Live events at or below this were already in the backlog.
    pub seen: u64,
}

fn same_content(a: &PackageManifest, b: &PackageManifest) -> bool {
    a.status == b.status && a.metadata.labels == b.metadata.labels
}

impl PackageStore {
    pub fn new(global_namespace: impl Into<String>) -> Self {
        let (events, _) = broadcast::channel(HISTORY);
        PackageStore {
            global_namespace: global_namespace.into(),
            inner: RwLock::default(),
            events,
        }
    }

    pub fn global_namespace(&self) -> &str {
        &self.global_namespace
    }

    /// Replace a catalog's packages with `packages` (empty: the catalog is gone or down). Returns the number
    /// of events produced.
    pub fn replace_catalog(&self, key: &CatalogKey, packages: Vec<PackageManifest>) -> usize {
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let old = inner.catalogs.remove(key).unwrap_or_default();
        let mut new: BTreeMap<String, Arc<PackageManifest>> = BTreeMap::new();
        let mut events = Vec::new();
        for mut pkg in packages {
            let name = pkg.metadata.name.clone().unwrap_or_default();
            match old.get(&name) {
                Some(prev) if same_content(prev, &pkg) => {
                    new.insert(name, prev.clone());
                }
                prev => {
                    inner.rv += 1;
                    pkg.metadata.resource_version = Some(inner.rv.to_string());
                    let pkg = Arc::new(pkg);
                    let kind = if prev.is_some() {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    events.push(StoreEvent {
                        rv: inner.rv,
                        kind,
                        object: pkg.clone(),
                    });
                    new.insert(name, pkg);
                }
            }
        }
        for (name, prev) in old {
            if !new.contains_key(&name) {
                inner.rv += 1;
                let mut gone = (*prev).clone();
                gone.metadata.resource_version = Some(inner.rv.to_string());
                events.push(StoreEvent {
                    rv: inner.rv,
                    kind: EventType::Deleted,
                    object: Arc::new(gone),
                });
            }
        }
        if !new.is_empty() {
            inner.catalogs.insert(key.clone(), new);
        }
        let count = events.len();
        for event in events {
            let event = Arc::new(event);
            if inner.history.len() == HISTORY {
                inner.history.pop_front();
            }
            inner.history.push_back(event.clone());
            // No receiver is not an error: nobody watches.
            let _ = self.events.send(event);
        }
        count
    }

    /// The current resourceVersion (of a list).
    pub fn resource_version(&self) -> u64 {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).rv
    }

    /// Does an object of catalog namespace `catalog_ns` show in a request for `namespace` (None: all)?
    pub fn visible_in(&self, catalog_ns: &str, namespace: Option<&str>) -> bool {
        match namespace {
            None => true,
            Some(ns) => catalog_ns == ns || catalog_ns == self.global_namespace,
        }
    }

    /// The object as a request for `namespace` shows it.
    pub fn present(object: &PackageManifest, namespace: Option<&str>) -> PackageManifest {
        let mut out = object.clone();
        if let Some(ns) = namespace {
            out.metadata.namespace = Some(ns.to_string());
        }
        out
    }

    /// Everything visible from `namespace` (None: all namespaces) and the list's resourceVersion: the
    /// namespace's own catalogs first, then the global ones; by catalog, then package name.
    pub fn list(&self, namespace: Option<&str>) -> (Vec<PackageManifest>, u64) {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let own = inner
            .catalogs
            .iter()
            .filter(|(k, _)| namespace.is_none_or(|ns| k.namespace == ns));
        let global = inner.catalogs.iter().filter(|(k, _)| {
            namespace.is_some_and(|ns| {
                ns != self.global_namespace && k.namespace == self.global_namespace
            })
        });
        let items = own
            .chain(global)
            .flat_map(|(_, pkgs)| pkgs.values())
            .map(|p| Self::present(p, namespace))
            .collect();
        (items, inner.rv)
    }

    /// The first package named `name` visible from `namespace`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<PackageManifest> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let found = inner
            .catalogs
            .iter()
            .filter(|(k, _)| k.namespace == namespace)
            .chain(inner.catalogs.iter().filter(|(k, _)| {
                namespace != self.global_namespace && k.namespace == self.global_namespace
            }))
            .find_map(|(_, pkgs)| pkgs.get(name).cloned());
        found.map(|p| Self::present(&p, Some(namespace)))
    }

    /// Start a watch. The subscription is taken under the same lock as the backlog, so no event falls between.
    pub fn subscribe(
        &self,
        namespace: Option<&str>,
        start: Start,
    ) -> Result<Subscription, WatchError> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let live = self.events.subscribe();
        let backlog = match start {
            Start::Fresh => inner
                .catalogs
                .iter()
                .filter(|(key, _)| self.visible_in(&key.namespace, namespace))
                .flat_map(|(_, pkgs)| pkgs.values())
                .map(|p| {
                    Arc::new(StoreEvent {
                        rv: p
                            .metadata
                            .resource_version
                            .as_deref()
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0),
                        kind: EventType::Added,
                        object: p.clone(),
                    })
                })
                .collect(),
            Start::After(asked) => {
                let oldest = inner.history.front().map(|e| e.rv).unwrap_or(inner.rv + 1);
                if asked + 1 < oldest && asked < inner.rv {
                    return Err(WatchError::Expired { asked, oldest });
                }
                inner
                    .history
                    .iter()
                    .filter(|e| e.rv > asked && self.visible_in(catalog_ns(e), namespace))
                    .cloned()
                    .collect()
            }
        };
        Ok(Subscription {
            backlog,
            live,
            seen: inner.rv,
        })
    }
}

/// The namespace of the catalog an event's object comes from.
pub fn catalog_ns(event: &StoreEvent) -> &str {
    &event.object.status.catalog_source_namespace
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PackageManifestStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pkg(ns: &str, catalog: &str, name: &str, head: &str) -> PackageManifest {
        PackageManifest {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                ..Default::default()
            },
            status: PackageManifestStatus {
                catalog_source: catalog.into(),
                catalog_source_namespace: ns.into(),
                package_name: name.into(),
                default_channel: head.into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn key(ns: &str, name: &str) -> CatalogKey {
        CatalogKey {
            namespace: ns.into(),
            name: name.into(),
        }
    }

    fn names(items: &[PackageManifest]) -> Vec<String> {
        items
            .iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    p.metadata.name.as_deref().unwrap_or("")
                )
            })
            .collect()
    }

    #[test]
    fn a_namespace_sees_its_catalogs_and_the_global_ones_in_its_own_namespace() {
        let store = PackageStore::new("olm");
        store.replace_catalog(
            &key("olm", "global"),
            vec![pkg("olm", "global", "etcd", "a")],
        );
        store.replace_catalog(
            &key("team", "mine"),
            vec![pkg("team", "mine", "redis", "a")],
        );
        store.replace_catalog(
            &key("other", "theirs"),
            vec![pkg("other", "theirs", "kafka", "a")],
        );
        assert_eq!(
            names(&store.list(Some("team")).0),
            ["team/redis", "team/etcd"]
        );
        assert_eq!(names(&store.list(Some("olm")).0), ["olm/etcd"]);
        assert_eq!(
            names(&store.list(None).0),
            ["olm/etcd", "other/kafka", "team/redis"]
        );
        assert_eq!(
            store.get("team", "etcd").and_then(|p| p.metadata.namespace),
            Some("team".into())
        );
        assert!(store.get("team", "kafka").is_none());
    }

    #[test]
    fn replacing_a_catalog_emits_only_what_changed_and_removal_deletes() {
        let store = PackageStore::new("olm");
        let k = key("team", "mine");
        assert_eq!(
            store.replace_catalog(
                &k,
                vec![pkg("team", "mine", "a", "x"), pkg("team", "mine", "b", "x")]
            ),
            2
        );
        let rv = store.resource_version();
        assert_eq!(
            store.replace_catalog(
                &k,
                vec![pkg("team", "mine", "a", "x"), pkg("team", "mine", "b", "x")]
            ),
            0
        );
        assert_eq!(
            store.replace_catalog(&k, vec![pkg("team", "mine", "a", "y")]),
            2,
            "a modified, b deleted"
        );
        let sub = store
            .subscribe(Some("team"), Start::After(rv))
            .expect("watch");
        let kinds: Vec<_> = sub
            .backlog
            .iter()
            .map(|e| (e.kind, e.object.metadata.name.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            kinds,
            [
                (EventType::Modified, "a".to_string()),
                (EventType::Deleted, "b".to_string())
            ]
        );
        assert_eq!(store.replace_catalog(&k, vec![]), 1);
        assert!(store.list(Some("team")).0.is_empty());
        let fresh = store.subscribe(Some("team"), Start::Fresh).expect("watch");
        assert!(fresh.backlog.is_empty());
    }

    #[test]
    fn a_watch_in_a_namespace_sees_global_events_and_not_other_namespaces() {
        let store = PackageStore::new("olm");
        let sub = store
            .subscribe(Some("team"), Start::After(0))
            .expect("watch");
        let mut live = sub.live;
        store.replace_catalog(&key("other", "c"), vec![pkg("other", "c", "x", "a")]);
        store.replace_catalog(&key("olm", "g"), vec![pkg("olm", "g", "y", "a")]);
        let mut seen = Vec::new();
        while let Ok(e) = live.try_recv() {
            if store.visible_in(catalog_ns(&e), Some("team")) {
                seen.push(e.object.metadata.name.clone().unwrap_or_default());
            }
        }
        assert_eq!(seen, ["y"]);
    }

    #[test]
    fn a_watch_from_before_the_history_is_expired() {
        let store = PackageStore::new("olm");
        for i in 0..(HISTORY + 10) {
            store.replace_catalog(&key("a", "c"), vec![pkg("a", "c", "p", &i.to_string())]);
        }
        assert!(matches!(
            store.subscribe(None, Start::After(1)),
            Err(WatchError::Expired { .. })
        ));
        assert!(
            store
                .subscribe(None, Start::After(store.resource_version()))
                .is_ok()
        );
        assert_eq!(
            Start::parse(Some("x")).err(),
            Some(WatchError::Invalid("x".into()))
        );
        assert_eq!(Start::parse(Some("0")).ok(), Some(Start::Fresh));
    }
}
