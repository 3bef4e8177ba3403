//! The watch task of one kind: a kube-runtime watcher (with backoff) through a reflector (so actors can read the
//! shared `Store` instead of GETting), feeding a registry with `send().await` so a slow registry slows the watch
//! instead of growing a mailbox without bound. Objects are decoded one at a time ([`Lenient`]): one whose stored
//! JSON does not match its kind is skipped and reported (a warning naming it, the registry's journal and the
//! `olm_rs_undecodable_objects_total{kind}` counter), and the rest of the kind keeps flowing.

use crate::lenient::Lenient;
use crate::registry::{ObjectActor, Registry, Undecodable, Watched};
use actix::Addr;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde::de::DeserializeOwned;

/// How long one watch call lasts before the server ends it and the watcher starts the next (`timeoutSeconds`).
/// kube-rs's default is 290 s: with the 22 watches of both operators that is 0.076 requests per second on an
/// idle cluster, over issue 19's target of 0.05. client-go's informers (OLM v0) draw 5-10 minutes; 600 s makes
/// 0.037/s. The cost: a connection that dies silently (no FIN, no RST) is noticed after 605 s instead of 295 s;
/// a restarted or unreachable apiserver ends the stream at once, as before.
pub const WATCH_TIMEOUT_SECS: u32 = 600;

/// `config` with [`WATCH_TIMEOUT_SECS`] unless it sets its own timeout.
pub fn renewed_rarely(config: watcher::Config) -> watcher::Config {
    match config.timeout {
        Some(_) => config,
        None => config.timeout(WATCH_TIMEOUT_SECS),
    }
}

/// Start watching every `A::Object` the client sees and routing to `registry`; returns the reflector's store
/// and the task handle.
pub fn spawn_watch<A>(
    client: Client,
    config: watcher::Config,
    registry: Addr<Registry<A>>,
    scope: crate::wiring::Scope,
) -> (Store<A::Object>, tokio::task::JoinHandle<()>)
where
    A: ObjectActor,
    A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
{
    spawn_watch_projected(client, config, registry, scope, |_: &mut A::Object| {})
}

/// [`spawn_watch`] keeping only what `project` leaves of each object, in the store and in what the registry and
/// its actors get (e.g. olm-operator's copied CSVs without the content their parent has).
pub fn spawn_watch_projected<A, P>(
    client: Client,
    config: watcher::Config,
    registry: Addr<Registry<A>>,
    scope: crate::wiring::Scope,
    project: P,
) -> (Store<A::Object>, tokio::task::JoinHandle<()>)
where
    A: ObjectActor,
    A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
    P: Fn(&mut A::Object) + Send + 'static,
{
    let (store, writer) = reflector::store();
    let api: Api<Lenient<A::Object>> = Api::all(client);
    let handle = tokio::spawn(async move {
        let skipped = registry.clone();
        let decoded = decode(
            watcher(api, renewed_rarely(config)).default_backoff(),
            move |meta, error| {
                skipped.do_send(Undecodable { meta, error });
            },
        );
        let projected = decoded.map_ok(move |event| event.modify(&project));
        let stream = reflector::reflector(writer, projected);
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

/// The events of a lenient watch with every object that did not decode taken out and handed to `skip`.
fn decode<K: kube::Resource, S, F>(
    events: S,
    mut skip: F,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>
where
    S: Stream<Item = Result<watcher::Event<Lenient<K>>, watcher::Error>>,
    F: FnMut(ObjectMeta, String),
{
    events.filter_map(move |item| {
        let out = match item {
            Err(error) => Some(Err(error)),
            Ok(event) => one(event, &mut skip).map(Ok),
        };
        std::future::ready(out)
    })
}

fn one<K: kube::Resource, F: FnMut(ObjectMeta, String)>(
    event: watcher::Event<Lenient<K>>,
    skip: &mut F,
) -> Option<watcher::Event<K>> {
    let mut take = |l: Lenient<K>| match l.into_result() {
        Ok(mut k) => {
            // No reader needs them, and they are often a third of an object: stores keep none. (A replace built
            // from a stored object sends no managedFields, which the apiserver reads as "unchanged".)
            k.meta_mut().managed_fields = None;
            Some(k)
        }
        Err(undecoded) => {
            let (meta, error) = *undecoded;
            skip(meta, error);
            None
        }
    };
    Some(match event {
        watcher::Event::Apply(l) => watcher::Event::Apply(take(l)?),
        watcher::Event::InitApply(l) => watcher::Event::InitApply(take(l)?),
        watcher::Event::Delete(l) => watcher::Event::Delete(take(l)?),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
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
/// called for each applied or deleted object, e.g. to send typed messages to the actors that care. Objects that
/// do not decode are skipped with a warning naming them.
pub fn spawn_store<K, F>(
    api: Api<K>,
    config: watcher::Config,
    on_change: F,
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
    spawn_store_projected(api, config, |_: &mut K| {}, on_change)
}

/// [`spawn_store`] keeping only what `project` leaves of each object (e.g. a CRD without its schemas, when
/// readers need only its names, versions and conditions): the store's memory follows what is read.
pub fn spawn_store_projected<K, P, F>(
    api: Api<K>,
    config: watcher::Config,
    project: P,
    mut on_change: F,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    P: Fn(&mut K) + Send + 'static,
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
    let api: Api<Lenient<K>> = Api::all(api.into_client());
    let handle = tokio::spawn(async move {
        let decoded = decode(
            watcher(api, renewed_rarely(config)).default_backoff(),
            |meta, error| {
                tracing::warn!(kind = %K::kind(&()), namespace = ?meta.namespace, name = ?meta.name, %error, "skipping an object that does not decode");
            },
        );
        let projected = decoded.map_ok(move |event| event.modify(&project));
        let stream = reflector::reflector(writer, projected).touched_objects();
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

#[cfg(test)]
mod tests {
    use kube::runtime::watcher::Config;

    #[test]
    fn watches_last_ten_minutes_unless_told_otherwise() {
        assert_eq!(super::renewed_rarely(Config::default()).timeout, Some(600));
        assert_eq!(
            super::renewed_rarely(Config::default().timeout(30)).timeout,
            Some(30)
        );
    }
}
