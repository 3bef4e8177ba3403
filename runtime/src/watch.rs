//! The watch task of one kind: a kube-runtime watcher (with backoff) through a reflector (so actors can read the
//! shared `Store` instead of GETting), feeding a registry with `send().await` so a slow registry slows the watch
//! instead of growing a mailbox without bound. Objects are decoded one at a time ([`Lenient`]): one whose stored
//! JSON does not match its kind is skipped and reported (a warning naming it, the registry's journal, the
//! `olm_rs_undecodable_objects_total{kind}` counter and, when the watch has an [`Announcer`], a Warning Event on
//! the object), and the rest of the kind keeps flowing. The registry holds its actor
//! ([`crate::reconcile::hold`]). The objects the registry gets are the store's own `Arc`s (`share`: one copy of
//! each object, not two). A deletion that does not decode is a deletion all the same: it reaches the
//! store and the registry as the deletion of the last version that decoded (the registry is told by key when the
//! store has none).

use crate::lenient::Lenient;
use crate::registry::{ObjectActor, Registry, Undecodable, Watched};
use crate::undecodable::{Announcer, Skipped};
use actix::Addr;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
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
    scope: crate::scope::Scope,
) -> (Store<A::Object>, tokio::task::JoinHandle<()>)
where
    A: ObjectActor,
    A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
{
    let writer = Writer::default();
    let store = writer.as_reader();
    let task = spawn_watch_projected(
        writer,
        client,
        config,
        registry,
        scope,
        None,
        |_: &mut A::Object| {},
    );
    (store, task)
}

/// [`spawn_watch`] keeping only what `project` leaves of each object, in the store and in what the registry and
/// its actors get (e.g. olm-operator's copied CSVs without the content their parent has); with `events`, a
/// Warning Event on each object whose current version does not decode.
pub fn spawn_watch_projected<A, P>(
    writer: Writer<A::Object>,
    client: Client,
    config: watcher::Config,
    registry: Addr<Registry<A>>,
    scope: crate::scope::Scope,
    events: Option<Announcer>,
    project: P,
) -> tokio::task::JoinHandle<()>
where
    A: ObjectActor,
    A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
    P: Fn(&mut A::Object) + Send + 'static,
{
    let store = writer.as_reader();
    let last = last_stored(store.clone());
    let api: Api<Lenient<A::Object>> = Api::all(client);
    let mut share = share::Share::new(store.clone());
    tokio::spawn(async move {
        let skipped = registry.clone();
        let skipped_scope = scope.clone();
        let decoded = decode(
            watcher(api, renewed_rarely(config)).default_backoff(),
            last,
            move |skipped_object: Skipped| {
                if !skipped_scope.contains(skipped_object.meta.namespace.as_deref()) {
                    return;
                }
                if let Some(events) = &events {
                    events.announce::<A::Object>(&skipped_object);
                }
                skipped.do_send(Undecodable(skipped_object));
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
                    for shared in share.pass(event) {
                        if registry.send(Watched(shared)).await.is_err() {
                            tracing::warn!(kind = A::KIND, "registry stopped; ending its watch");
                            return;
                        }
                    }
                }
                Err(error) => tracing::warn!(
                    kind = A::KIND,
                    error = &error as &dyn std::error::Error,
                    "watch error (retrying with backoff)"
                ),
            }
        }
    })
}

/// The events of a lenient watch with every object that did not decode taken out and handed to `skip`; a
/// deletion that did not decode stays a deletion, of the version `last` finds (the store's), when it finds one.
fn decode<K, S, L, F>(
    events: S,
    last: L,
    mut skip: F,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>
where
    K: kube::Resource,
    S: Stream<Item = Result<watcher::Event<Lenient<K>>, watcher::Error>>,
    L: Fn(&ObjectMeta) -> Option<K>,
    F: FnMut(Skipped),
{
    events.filter_map(move |item| {
        let out = match item {
            Err(error) => Some(Err(error)),
            Ok(event) => one(event, &last, &mut skip).map(Ok),
        };
        std::future::ready(out)
    })
}

fn one<K, L, F>(
    event: watcher::Event<Lenient<K>>,
    last: &L,
    skip: &mut F,
) -> Option<watcher::Event<K>>
where
    K: kube::Resource,
    L: Fn(&ObjectMeta) -> Option<K>,
    F: FnMut(Skipped),
{
    let mut take = |l: Lenient<K>, deleted: bool| match l.into_result() {
        Ok(k) => Some(stripped(k)),
        Err(undecoded) => {
            let (meta, error) = *undecoded;
            let stored = deleted.then(|| last(&meta)).flatten();
            skip(Skipped {
                meta,
                error,
                deleted,
            });
            stored
        }
    };
    Some(match event {
        watcher::Event::Apply(l) => watcher::Event::Apply(take(l, false)?),
        watcher::Event::InitApply(l) => watcher::Event::InitApply(take(l, false)?),
        watcher::Event::Delete(l) => watcher::Event::Delete(take(l, true)?),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
}

/// No reader needs them, and they are often a third of an object: stores keep no managed fields. (A replace
/// built from a stored object sends no managedFields, which the apiserver reads as "unchanged".)
fn stripped<K: kube::Resource>(mut k: K) -> K {
    k.meta_mut().managed_fields = None;
    k
}

/// The version of the object `meta` names that `store` holds (the last that decoded), if it is the same object
/// (same uid, when both say).
fn last_stored<K>(store: Store<K>) -> impl Fn(&ObjectMeta) -> Option<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    move |meta| {
        let name = meta.name.as_deref()?;
        let mut at = ObjectRef::<K>::new(name);
        if let Some(namespace) = meta.namespace.as_deref() {
            at = at.within(namespace);
        }
        let stored = store.get(&at)?;
        let same = match (meta.uid.as_deref(), stored.meta().uid.as_deref()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        same.then(|| (*stored).clone())
    }
}

/// Whether `store` has listed once (false when its watch ended first).
pub async fn listed<K>(store: &Store<K>) -> bool
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    store.wait_until_ready().await.is_ok()
}

fn in_scope<K: kube::Resource>(scope: &crate::scope::Scope, event: &watcher::Event<K>) -> bool {
    match event {
        watcher::Event::Apply(obj)
        | watcher::Event::InitApply(obj)
        | watcher::Event::Delete(obj) => scope.contains(obj.meta().namespace.as_deref()),
        watcher::Event::Init | watcher::Event::InitDone => true,
    }
}

/// A plain watch of a kind no actor owns (e.g. Namespaces, Deployments) filling the store of `writer` (made
/// before the actors that read it: `Writer::default()`, `writer.as_reader()`); `on_change` is called for each
/// applied or deleted object, e.g. to send typed messages to the actors that care. Objects that do not decode are
/// skipped with a warning naming them; a deletion that does not decode removes the stored version (and
/// `on_change` sees it) all the same. A panic in `on_change` is caught, logged and counted
/// (`olm_rs_watch_handler_panics_total{kind}`); the store keeps following the API.
pub fn spawn_store<K, F>(
    writer: Writer<K>,
    api: Api<K>,
    config: watcher::Config,
    on_change: F,
) -> tokio::task::JoinHandle<()>
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
    spawn_store_projected(writer, api, config, |_: &mut K| {}, on_change)
}

/// [`spawn_store`] keeping only what `project` leaves of each object (e.g. a CRD without its schemas, when
/// readers need only its names, versions and conditions): the store's memory follows what is read.
pub fn spawn_store_projected<K, P, F>(
    writer: Writer<K>,
    api: Api<K>,
    config: watcher::Config,
    project: P,
    mut on_change: F,
) -> tokio::task::JoinHandle<()>
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
    let last = last_stored(writer.as_reader());
    let api: Api<Lenient<K>> = Api::all(api.into_client());
    tokio::spawn(async move {
        let decoded = decode(
            watcher(api, renewed_rarely(config)).default_backoff(),
            last,
            |Skipped {
                 meta,
                 error,
                 deleted,
             }| {
                tracing::warn!(kind = %K::kind(&()), namespace = ?meta.namespace, name = ?meta.name, %error, deleted, "an object does not decode");
            },
        );
        let projected = decoded.map_ok(move |event| event.modify(&project));
        let stream = reflector::reflector(writer, projected).touched_objects();
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(obj) => {
                    // A handler that panics (a bug, or an actor started off the actix thread) must not end the
                    // watch: the store would stay at this version for good, silently, and every reader with it.
                    let handled =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| on_change(&obj)));
                    if handled.is_err() {
                        tracing::error!(kind = %K::kind(&()), namespace = ?obj.meta().namespace, name = ?obj.meta().name, "the change handler panicked; the store goes on");
                        crate::actor_metrics::handler_panicked(&K::kind(&()));
                    }
                }
                Err(error) => {
                    tracing::warn!(kind = %K::kind(&()), error = &error as &dyn std::error::Error, "watch error (retrying with backoff)")
                }
            }
        }
    })
}

mod share;

#[cfg(test)]
mod tests;
