//! The Subscription actor without a cluster (controller-rs scenario style): a fake API server
//! ([`testkit::fake_api`]) scripted with status codes, paused tokio time, the actor driven by the messages the
//! registry and namespace resolution send it, and its journal read back.

use super::*;
use crate::shared::Stores;
use messages::crd::subscription::{SubscriptionState, SubscriptionStatus};
use messages::msg::{Journal, JournalEvent};
use std::sync::Mutex;
use std::time::Duration;
use testkit::fake_api::FakeApi;

fn shared(client: kube::Client) -> Shared {
    Shared::for_tests(client)
}

fn subscription() -> Arc<Subscription> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "rv-0"},
            "spec": {"name": "pkg", "source": "cat", "sourceNamespace": "ns"}
        }))
        .expect("subscription"),
    )
}

fn decision(seq: u64, csv: &str) -> Decision {
    Decision {
        seq,
        status: SubscriptionStatus {
            current_csv: csv.into(),
            state: SubscriptionState::UpgradePending,
            ..Default::default()
        },
    }
}

struct Scenario {
    api: FakeApi,
    actor: Addr<SubscriptionActor>,
    journal: SharedJournal,
}

fn start(script: Vec<u16>) -> Scenario {
    let api = FakeApi::new(script);
    let shared = shared(api.client());
    start_on(api, shared)
}

/// The Subscription's actor on `shared`, told of the Subscription.
fn start_on(api: FakeApi, shared: Shared) -> Scenario {
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    let mut actor = SubscriptionActor::new(ObjectKey::new("ns", "a"), shared);
    actor.attach(journal.clone());
    let actor = actor.start();
    actor.do_send(ObjectEvent::Observed(subscription()));
    Scenario {
        api,
        actor,
        journal,
    }
}

/// The status writes the fake API saw: currentCSV of each.
fn writes(api: &FakeApi) -> Vec<String> {
    api.seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.path.ends_with("/subscriptions/a/status"))
        .map(|s| {
            s.body["status"]["currentCSV"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Errors journaled by the loop, in order (None for a run that ended well).
fn outcomes(journal: &SharedJournal) -> Vec<Option<String>> {
    journal
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entries()
        .filter_map(|e| match &e.event {
            JournalEvent::Reconciled { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

async fn settle(ms: u64) {
    for _ in 0..ms / 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[actix_rt::test]
async fn a_decision_is_written_once_as_the_status() {
    tokio::time::pause();
    let s = start(vec![]);
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(100).await;
    assert_eq!(writes(&s.api), vec!["pkg.v1"]);
    // The same decision again (resolution resends what it has not seen acknowledged): no second write.
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(100).await;
    assert_eq!(writes(&s.api), vec!["pkg.v1"]);
    assert!(outcomes(&s.journal).iter().all(Option::is_none));
}

#[actix_rt::test]
async fn a_conflict_is_retried_soon_and_then_written() {
    tokio::time::pause();
    let s = start(vec![409]);
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(20).await;
    assert_eq!(
        writes(&s.api),
        vec!["pkg.v1"],
        "the first write hits the conflict"
    );
    // The conflict policy retries within 100 ms (jittered into [50, 100] ms).
    settle(150).await;
    assert_eq!(writes(&s.api), vec!["pkg.v1", "pkg.v1"]);
    let out = outcomes(&s.journal);
    assert!(
        out.iter()
            .any(|e| e.as_deref().is_some_and(|e| e.starts_with("conflict"))),
        "{out:?}"
    );
    assert_eq!(out.last(), Some(&None));
}

#[actix_rt::test]
async fn server_errors_back_off_and_a_newer_decision_wins() {
    tokio::time::pause();
    let s = start(vec![500, 500]);
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(20).await;
    assert_eq!(writes(&s.api).len(), 1);
    // Before the second retry, resolution decides again: the retry writes the newer decision.
    s.actor.do_send(decision(2, "pkg.v2"));
    settle(2_000).await;
    let w = writes(&s.api);
    assert_eq!(w.last().map(String::as_str), Some("pkg.v2"), "{w:?}");
    assert!(!w[1..].contains(&"pkg.v1".to_string()), "{w:?}");
    // An older decision arriving late is dropped.
    let before = writes(&s.api).len();
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(200).await;
    assert_eq!(writes(&s.api).len(), before);
}

#[actix_rt::test]
async fn an_event_trailing_our_write_does_not_undo_it() {
    tokio::time::pause();
    let s = start(vec![]);
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(100).await;
    // The watch delivers the version before our write (no status): ignored until our write's version arrives,
    // so a decision that is already true is not written again from a stale view.
    s.actor.do_send(ObjectEvent::Observed(subscription()));
    s.actor.do_send(decision(2, "pkg.v1"));
    settle(100).await;
    assert_eq!(writes(&s.api), vec!["pkg.v1"]);
}

#[actix_rt::test]
async fn a_conflict_retries_from_the_stores_copy_not_the_same_stale_one() {
    tokio::time::pause();
    // The store holds a newer version than the one the actor saw (a write whose event never reached it).
    let mut writer = kube::runtime::reflector::store::Writer::<Subscription>::default();
    let mut newer = (*subscription()).clone();
    newer.metadata.resource_version = Some("rv-store".into());
    writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(newer));
    let (stores, _writers) = Stores::new(
        kube::runtime::reflector::store::Writer::default().as_reader(),
        writer.as_reader(),
        kube::runtime::reflector::store::Writer::default().as_reader(),
    );
    let api = FakeApi::new(vec![409]);
    let mut sh = shared(api.client());
    sh.stores = Arc::new(stores);
    let mut actor = SubscriptionActor::new(ObjectKey::new("ns", "a"), sh);
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    actor.attach(journal);
    let actor = actor.start();
    actor.do_send(ObjectEvent::Observed(subscription()));
    actor.do_send(decision(1, "pkg.v1"));
    settle(200).await;
    let versions: Vec<String> = api
        .seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.path.ends_with("/subscriptions/a/status"))
        .map(|s| {
            s.body["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(versions, vec!["rv-0", "rv-store"]);
}

/// A decision that changes catalog health only (a global catalog's fan-out).
fn health_decision(seq: u64) -> Decision {
    let mut status = SubscriptionStatus::default();
    status.catalog_health.push(Default::default());
    Decision { seq, status }
}

/// `start`, with every health-write permit held by the test until the returned guard drops.
async fn start_with_permits_taken(
    script: Vec<u16>,
) -> (Scenario, tokio::sync::OwnedSemaphorePermit) {
    let api = FakeApi::new(script);
    let shared = shared(api.client());
    let held = shared
        .health_writes
        .clone()
        .acquire_many_owned(crate::shared::HEALTH_WRITES as u32)
        .await
        .expect("permits");
    (start_on(api, shared), held)
}

#[actix_rt::test]
async fn a_health_only_write_waits_for_a_permit() {
    tokio::time::pause();
    let (s, held) = start_with_permits_taken(vec![]).await;
    s.actor.do_send(health_decision(1));
    settle(200).await;
    assert!(writes(&s.api).is_empty(), "written without a permit");
    drop(held);
    settle(100).await;
    assert_eq!(writes(&s.api).len(), 1);
}

#[actix_rt::test]
async fn an_install_write_does_not_wait_for_health_permits() {
    tokio::time::pause();
    let (s, _held) = start_with_permits_taken(vec![]).await;
    s.actor.do_send(decision(1, "pkg.v1"));
    settle(100).await;
    assert_eq!(writes(&s.api), vec!["pkg.v1"]);
}
