//! The watch task of one kind: a kube-runtime watcher (with backoff) through a reflector (so actors can read the
//! shared `Store` instead of GETting), feeding a registry with `send().await` so a slow registry slows the watch
//! instead of growing a mailbox without bound.

use crate::registry::{ObjectActor, Registry, Watched};
use actix::Addr;
use futures::StreamExt;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

/// Start watching `api` and routing to `registry`; returns the reflector's store and the task handle.
pub fn spawn_watch<A>(
    api: Api<A::Object>,
    config: watcher::Config,
    registry: Addr<Registry<A>>,
    scope: crate::wiring::Scope,
) -> (Store<A::Object>, tokio::task::JoinHandle<()>)
where
    A: ObjectActor,
    A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
{
    let (store, writer) = reflector::store();
    let handle = tokio::spawn(async move {
        let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    if !in_scope(&scope, &event) {
                        continue;
                    }
                    if registry.send(Watched(event)).await.is_err() {
                        tracing::warn!(kind = A::KIND, "registry stopped; ending its watch");
                        break;
                    }
                }
                Err(error) => tracing::warn!(
                    kind = A::KIND,
                    error = &error as &dyn std::error::Error,
                    "watch error (retrying with backoff)"
                ),
            }
        }
    });
    (store, handle)
}

fn in_scope<K: kube::Resource>(scope: &crate::wiring::Scope, event: &watcher::Event<K>) -> bool {
    match event {
        watcher::Event::Apply(obj)
        | watcher::Event::InitApply(obj)
        | watcher::Event::Delete(obj) => scope.contains(obj.meta().namespace.as_deref()),
        watcher::Event::Init | watcher::Event::InitDone => true,
    }
}

/// A plain watch of a kind no actor owns (e.g. Namespaces, Deployments), kept as a store for reads; `on_change` is
/// called for each applied or deleted object, e.g. to send typed messages to the actors that care.
pub fn spawn_store<K, F>(
    api: Api<K>,
    config: watcher::Config,
    mut on_change: F,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    F: FnMut(&K) + Send + 'static,
{
    let (store, writer) = reflector::store();
    let handle = tokio::spawn(async move {
        let stream =
            reflector::reflector(writer, watcher(api, config).default_backoff()).touched_objects();
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(obj) => on_change(&obj),
                Err(error) => {
                    tracing::warn!(kind = %K::kind(&()), error = &error as &dyn std::error::Error, "watch error (retrying with backoff)")
                }
            }
        }
    });
    (store, handle)
}
