//! The watch without a cluster: the decoding step as a table, and the whole path (a kube client over a fake API
//! that lists objects and streams the watch events a test sends, the reflector store, the registry, one actor
//! per object) for objects that stop decoding and deletions that do not decode.

use super::*;
use crate::children::KeyedActor;
use crate::journal::SharedJournal;
use crate::metrics::Metrics;
use crate::scope::Scope;
use actix::prelude::*;
use futures::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::ResourceExt;
use kube::runtime::watcher::Config;
use messages::key::ObjectKey;
use messages::msg::{Journal, JournalEvent, ObjectEvent, Requeue};
use rstest::rstest;
use serde_json::Value;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

#[test]
fn watches_last_ten_minutes_unless_told_otherwise() {
    assert_eq!(
        renewed_rarely(watcher::Config::default()).timeout,
        Some(600)
    );
    assert_eq!(
        renewed_rarely(watcher::Config::default().timeout(30)).timeout,
        Some(30)
    );
}

/// A ConfigMap `ns/name` at `rv` with uid `u-name`, managed fields and all.
fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.uid = Some(format!("u-{name}"));
    cm.metadata.resource_version = Some(rv.into());
    cm.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    cm.data = Some([("k".to_string(), "v".to_string())].into());
    cm
}

/// `cm(name, rv)` as stored JSON; when `decodes` is false, with a `data` value of the wrong type (what a
/// ConfigMap written through another schema or the raw API may hold).
fn stored(name: &str, rv: &str, decodes: bool) -> Value {
    let mut value = serde_json::to_value(cm(name, rv)).expect("a ConfigMap serializes");
    if !decodes {
        value["data"]["k"] = Value::from(7);
    }
    value
}

fn lenient(name: &str, rv: &str, decodes: bool) -> Lenient<ConfigMap> {
    serde_json::from_value(stored(name, rv, decodes)).expect("metadata decodes")
}

/// What `one` let through: the event's type and the object's resourceVersion.
fn shape(event: &watcher::Event<ConfigMap>) -> (&'static str, Option<String>) {
    match event {
        watcher::Event::Apply(k) => ("apply", k.metadata.resource_version.clone()),
        watcher::Event::InitApply(k) => ("init-apply", k.metadata.resource_version.clone()),
        watcher::Event::Delete(k) => ("delete", k.metadata.resource_version.clone()),
        watcher::Event::Init => ("init", None),
        watcher::Event::InitDone => ("init-done", None),
    }
}

#[rstest]
#[case::a_change_that_decodes_passes(
    "apply",
    true,
    false,
    Some(("apply", "5")),
    None
)]
#[case::a_change_that_does_not_decode_is_skipped("apply", false, true, None, Some(false))]
#[case::a_relisted_object_that_does_not_decode_is_skipped(
    "init-apply",
    false,
    true,
    None,
    Some(false)
)]
#[case::a_deletion_that_decodes_passes(
    "delete",
    true,
    true,
    Some(("delete", "5")),
    None
)]
#[case::a_deletion_that_does_not_decode_deletes_the_stored_version(
    "delete",
    false,
    true,
    Some(("delete", "1")),
    Some(true)
)]
#[case::a_deletion_that_does_not_decode_of_nothing_stored_is_reported_only(
    "delete",
    false,
    false,
    None,
    Some(true)
)]
fn each_event_is_decoded_on_its_own(
    #[case] kind: &str,
    #[case] decodes: bool,
    #[case] in_store: bool,
    #[case] out: Option<(&str, &str)>,
    #[case] skipped: Option<bool>,
) {
    let object = lenient("a", "5", decodes);
    let event = match kind {
        "apply" => watcher::Event::Apply(object),
        "init-apply" => watcher::Event::InitApply(object),
        _ => watcher::Event::Delete(object),
    };
    // The store keeps what it was given: stripped.
    let last = |_: &ObjectMeta| in_store.then(|| stripped(cm("a", "1")));
    let mut skips = Vec::new();
    let got = one(event, &last, &mut |s: Skipped| skips.push(s));
    assert_eq!(
        got.as_ref().map(shape),
        out.map(|(k, rv)| (k, Some(rv.to_string())))
    );
    if let Some(k) = got.as_ref() {
        let kept = match k {
            watcher::Event::Apply(k) | watcher::Event::InitApply(k) | watcher::Event::Delete(k) => {
                k.metadata.managed_fields.clone()
            }
            watcher::Event::Init | watcher::Event::InitDone => None,
        };
        assert_eq!(kept, None, "stores keep no managed fields");
    }
    let skipped_as: Vec<(Option<String>, bool, bool)> = skips
        .into_iter()
        .map(|s| (s.meta.name, s.deleted, s.error.contains("invalid type")))
        .collect();
    let want: Vec<(Option<String>, bool, bool)> = skipped
        .map(|deleted| (Some("a".to_string()), deleted, true))
        .into_iter()
        .collect();
    assert_eq!(skipped_as, want);
}

#[rstest]
#[case::the_same_object(Some("u-a"), Some("1"))]
#[case::a_deletion_that_names_no_uid(None, Some("1"))]
#[case::another_object_of_the_same_name(Some("u-other"), None)]
fn a_deletion_finds_the_stored_version_of_the_same_object(
    #[case] uid: Option<&str>,
    #[case] found: Option<&str>,
) {
    let (store, mut writer) = reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&watcher::Event::Apply(cm("a", "1")));
    let meta = ObjectMeta {
        name: Some("a".into()),
        namespace: Some("ns".into()),
        uid: uid.map(str::to_string),
        ..ObjectMeta::default()
    };
    let got = last_stored(store)(&meta);
    assert_eq!(
        got.and_then(|k| k.metadata.resource_version),
        found.map(str::to_string)
    );
}

/// A fake API server for one kind: a GET lists `items`, the first GET with `watch=true` streams the events the
/// test sends, later watches stay open and silent.
#[derive(Clone)]
struct FakeWatch {
    items: Vec<Value>,
    events: Arc<Mutex<Option<mpsc::UnboundedReceiver<Value>>>>,
}

type Reply = http::Response<UnsyncBoxBody<Bytes, Infallible>>;

impl tower::Service<http::Request<kube::client::Body>> for FakeWatch {
    type Response = Reply;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Reply, Infallible>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let watch = request
            .uri()
            .query()
            .is_some_and(|q| q.contains("watch=true"));
        let body = if watch {
            let events = self
                .events
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            match events {
                Some(rx) => StreamBody::new(
                    tokio_stream_of(rx).map(|e| Ok(Frame::data(Bytes::from(format!("{e}\n"))))),
                )
                .boxed_unsync(),
                None => StreamBody::new(futures::stream::pending()).boxed_unsync(),
            }
        } else {
            let mut list = serde_json::Map::new();
            list.insert("apiVersion".into(), Value::from("v1"));
            list.insert("kind".into(), Value::from("ConfigMapList"));
            let mut meta = serde_json::Map::new();
            meta.insert("resourceVersion".into(), Value::from("1"));
            list.insert("metadata".into(), Value::Object(meta));
            list.insert("items".into(), Value::Array(self.items.clone()));
            Full::new(Bytes::from(Value::Object(list).to_string())).boxed_unsync()
        };
        std::future::ready(Ok(http::Response::new(body)))
    }
}

fn tokio_stream_of(mut rx: mpsc::UnboundedReceiver<Value>) -> impl Stream<Item = Value> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// A fake API listing `items`, and the sender of its watch events (`{"type": .., "object": ..}`).
fn fake_api(items: Vec<Value>) -> (kube::Client, mpsc::UnboundedSender<Value>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let api = FakeWatch {
        items,
        events: Arc::new(Mutex::new(Some(rx))),
    };
    (kube::Client::new(api, "default"), tx)
}

fn watch_event(kind: &str, object: Value) -> Value {
    let mut event = serde_json::Map::new();
    event.insert("type".into(), Value::from(kind));
    event.insert("object".into(), object);
    Value::Object(event)
}

/// An actor per ConfigMap that reports what it is told.
struct Told {
    key: ObjectKey,
    tell: mpsc::UnboundedSender<String>,
}

impl Actor for Told {
    type Context = Context<Self>;
}

impl Handler<ObjectEvent<ConfigMap>> for Told {
    type Result = ();
    fn handle(&mut self, msg: ObjectEvent<ConfigMap>, ctx: &mut Self::Context) {
        let said = match msg {
            ObjectEvent::Observed(cm) => format!(
                "observed {} {}",
                self.key.name,
                cm.metadata.resource_version.as_deref().unwrap_or_default()
            ),
            ObjectEvent::Undecodable(error) => {
                assert!(error.contains("invalid type"), "{error}");
                format!("undecodable {}", self.key.name)
            }
            ObjectEvent::Deleted => {
                ctx.stop();
                format!("deleted {}", self.key.name)
            }
        };
        let _ = self.tell.send(said);
    }
}

impl Handler<Requeue> for Told {
    type Result = ();
    fn handle(&mut self, _msg: Requeue, _ctx: &mut Self::Context) {}
}

impl ObjectActor for Told {
    type Object = ConfigMap;
}

impl KeyedActor for Told {
    type Shared = mpsc::UnboundedSender<String>;
    const KIND: &'static str = "ConfigMap";
    fn new(key: ObjectKey, tell: Self::Shared) -> Self {
        Self { key, tell }
    }
}

struct Watching {
    events: mpsc::UnboundedSender<Value>,
    told: mpsc::UnboundedReceiver<String>,
    store: Store<ConfigMap>,
    metrics: Metrics,
    journal: SharedJournal,
}

impl Watching {
    fn start(items: Vec<Value>) -> Self {
        let (client, events) = fake_api(items);
        let (tell, told) = mpsc::unbounded_channel();
        let metrics = Metrics::new().expect("metrics");
        let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
        let registry = Registry::<Told>::new(tell, metrics.clone(), journal.clone()).start();
        let (store, _task) = spawn_watch(client, Config::default(), registry, Scope::Cluster);
        Self {
            events,
            told,
            store,
            metrics,
            journal,
        }
    }

    fn send(&self, kind: &str, object: Value) {
        self.events
            .send(watch_event(kind, object))
            .expect("the watch is open");
    }

    /// The next thing an actor was told, within a deadline.
    async fn next(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), self.told.recv())
            .await
            .expect("an actor was told something before the deadline")
            .expect("the registry is alive")
    }

    fn stored_version(&self, name: &str) -> Option<String> {
        self.store
            .get(&ObjectRef::new(name).within("ns"))
            .and_then(|k| k.metadata.resource_version.clone())
    }

    fn held(&self) -> String {
        let text = self.metrics.encode().expect("encode");
        text.lines()
            .find(|l| l.starts_with("olm_rs_objects_held_undecodable{kind=\"ConfigMap\"}"))
            .unwrap_or_default()
            .to_string()
    }
}

#[actix_rt::test]
async fn a_deletion_that_does_not_decode_reaches_the_store_and_the_actor() {
    let mut w = Watching::start(vec![stored("a", "1", true)]);
    assert_eq!(w.next().await, "observed a 1");
    w.send("DELETED", stored("a", "3", false));
    assert_eq!(w.next().await, "deleted a");
    // Everything sent before it has gone through the store once `b` is observed.
    w.send("ADDED", stored("b", "4", true));
    assert_eq!(w.next().await, "observed b 4");
    assert_eq!(
        w.stored_version("a"),
        None,
        "the deletion reached the store"
    );
    assert_eq!(w.stored_version("b"), Some("4".into()));
    let journaled = w.journal.lock().expect("journal").entries().any(|e| {
        e.key.name == "a" && matches!(e.event, JournalEvent::Undecodable { deleted: true, .. })
    });
    assert!(journaled);
}

#[actix_rt::test]
async fn an_object_that_stops_decoding_holds_its_actor_until_it_decodes_again() {
    let mut w = Watching::start(vec![stored("a", "1", true), stored("b", "1", true)]);
    let mut first = vec![w.next().await, w.next().await];
    first.sort();
    assert_eq!(first, ["observed a 1", "observed b 1"]);
    w.send("MODIFIED", stored("a", "5", false));
    assert_eq!(w.next().await, "undecodable a");
    assert!(w.held().ends_with(" 1"), "{}", w.held());
    w.send("MODIFIED", stored("b", "6", true));
    assert_eq!(w.next().await, "observed b 6", "the rest of the kind flows");
    w.send("MODIFIED", stored("a", "7", true));
    assert_eq!(w.next().await, "observed a 7");
    assert!(w.held().ends_with(" 0"), "{}", w.held());
    assert_eq!(w.stored_version("a"), Some("7".into()));
}

#[actix_rt::test]
async fn a_deletion_that_does_not_decode_of_an_object_never_decoded_stops_nothing_else() {
    let mut w = Watching::start(vec![stored("bad", "1", false), stored("good", "1", true)]);
    assert_eq!(w.next().await, "observed good 1");
    w.send("DELETED", stored("bad", "2", false));
    w.send("ADDED", stored("c", "3", true));
    assert_eq!(w.next().await, "observed c 3", "nothing was told of `bad`");
    let bad: Vec<JournalEvent> = w
        .journal
        .lock()
        .expect("journal")
        .entries()
        .filter(|e| e.key.name == "bad")
        .map(|e| e.event.clone())
        .collect();
    assert!(
        matches!(
            bad.as_slice(),
            [
                JournalEvent::Undecodable { deleted: false, .. },
                JournalEvent::Undecodable { deleted: true, .. }
            ]
        ),
        "{bad:?}"
    );
}

#[actix_rt::test]
async fn a_plain_store_drops_an_object_whose_deletion_does_not_decode() {
    let (client, events) = fake_api(vec![stored("a", "1", true)]);
    let (tell, mut told) = mpsc::unbounded_channel();
    let api: Api<ConfigMap> = Api::all(client);
    let writer = Writer::default();
    let store = writer.as_reader();
    let _task = spawn_store(writer, api, Config::default(), move |cm: &ConfigMap| {
        let _ = tell.send(cm.metadata.name.clone().unwrap_or_default());
    });
    assert_eq!(changed(&mut told).await, "a");
    events
        .send(watch_event("DELETED", stored("a", "2", false)))
        .expect("open");
    assert_eq!(
        changed(&mut told).await,
        "a",
        "the deletion is a change the caller sees"
    );
    events
        .send(watch_event("ADDED", stored("b", "3", true)))
        .expect("open");
    assert_eq!(changed(&mut told).await, "b");
    assert!(store.get(&ObjectRef::new("a").within("ns")).is_none());
}

#[actix_rt::test]
async fn a_change_handler_that_panics_leaves_the_store_following_the_api() {
    let (client, events) = fake_api(vec![stored("a", "1", true)]);
    let (tell, mut told) = mpsc::unbounded_channel();
    let api: Api<ConfigMap> = Api::all(client);
    let writer = Writer::default();
    let store = writer.as_reader();
    let task = spawn_store(writer, api, Config::default(), move |cm: &ConfigMap| {
        let name = cm.metadata.name.clone().unwrap_or_default();
        assert_ne!(name, "boom", "the handler's bug");
        let _ = tell.send(name);
    });
    assert_eq!(changed(&mut told).await, "a");
    events
        .send(watch_event("ADDED", stored("boom", "2", true)))
        .expect("open");
    events
        .send(watch_event("MODIFIED", stored("a", "3", true)))
        .expect("open");
    assert_eq!(
        changed(&mut told).await,
        "a",
        "the change after the panic reaches the handler"
    );
    assert!(!task.is_finished(), "the watch task ended");
    assert_eq!(
        store
            .get(&ObjectRef::new("a").within("ns"))
            .and_then(|cm| cm.metadata.resource_version.clone())
            .as_deref(),
        Some("3")
    );
    assert!(store.get(&ObjectRef::new("boom").within("ns")).is_some());
}

async fn changed(told: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), told.recv())
        .await
        .expect("a change before the deadline")
        .expect("the watch is alive")
}

/// The reflector's store and the sharing step after it, fed one event at a time (as the watch task does).
fn shared_through(
    events: Vec<watcher::Event<ConfigMap>>,
) -> (Store<ConfigMap>, Vec<watcher::Event<Arc<ConfigMap>>>) {
    let (store, mut writer) = reflector::store();
    let mut share = share::Share::new(store.clone());
    let mut out = Vec::new();
    for event in events {
        writer.apply_watcher_event(&event);
        out.extend(share.pass(event));
    }
    (store, out)
}

fn stored_arc(store: &Store<ConfigMap>, name: &str) -> Arc<ConfigMap> {
    store
        .get(&ObjectRef::new(name).within("ns"))
        .expect("the store holds it")
}

#[test]
fn a_change_reaches_the_registry_as_the_stores_own_object() {
    let (store, out) = shared_through(vec![watcher::Event::Apply(cm("a", "1"))]);
    let [watcher::Event::Apply(sent)] = out.as_slice() else {
        panic!("one Apply expected, got {} events", out.len());
    };
    assert!(Arc::ptr_eq(sent, &stored_arc(&store, "a")));
}

#[test]
fn a_listing_is_sent_after_it_is_stored_in_order_as_the_stores_objects() {
    let (store, out) = shared_through(vec![
        watcher::Event::Init,
        watcher::Event::InitApply(cm("b", "2")),
        watcher::Event::InitApply(cm("a", "3")),
        watcher::Event::InitDone,
    ]);
    let names: Vec<String> = out
        .iter()
        .map(|e| match e {
            watcher::Event::Init => "init".to_string(),
            watcher::Event::InitDone => "done".to_string(),
            watcher::Event::InitApply(o) => {
                assert!(Arc::ptr_eq(o, &stored_arc(&store, &o.name_any())));
                o.name_any()
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(names, ["init", "b", "a", "done"]);
}

#[test]
fn a_deletion_and_an_unstored_version_are_sent_as_new_objects() {
    let (store, out) = shared_through(vec![
        watcher::Event::Apply(cm("a", "1")),
        watcher::Event::Delete(cm("a", "1")),
    ]);
    assert!(store.is_empty());
    assert!(matches!(&out[1], watcher::Event::Delete(o) if o.name_any() == "a"));
    // A version the store does not hold (another event replaced it first) is not swapped for the stored one.
    let (store, _) = shared_through(vec![watcher::Event::Apply(cm("a", "2"))]);
    let mut share = share::Share::new(store.clone());
    let sent = match share.pass(watcher::Event::Apply(cm("a", "1"))).pop() {
        Some(watcher::Event::Apply(sent)) => sent,
        other => panic!("an Apply expected, got {other:?}"),
    };
    assert_eq!(sent.metadata.resource_version.as_deref(), Some("1"));
    assert!(!Arc::ptr_eq(&sent, &stored_arc(&store, "a")));
}
