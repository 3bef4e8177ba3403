//! The CSV actor without a cluster (controller-rs scenario style, like catalog-operator's Subscription actor
//! tests): a fake API server scripted with status codes, paused tokio time, empty stores marked listed, the
//! actor driven by the watch event the registry sends it, and its journal read back.

use super::*;
use messages::msg::{Journal, JournalEvent, Requeue, RequeueReason};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::fake_api::FakeApi;

fn shared(client: kube::Client) -> Shared {
    let shared = crate::tests::shared::shared(client, Default::default());
    shared.stores.csv.ready.open();
    shared
}

/// A valid CSV in a namespace without any OperatorGroup.
fn csv() -> Arc<ClusterServiceVersion> {
    Arc::new(serde_json::from_value(csv_json()).expect("csv"))
}

fn csv_json() -> serde_json::Value {
    serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "a.v1", "namespace": "ns", "resourceVersion": "rv-0"},
            "spec": {"version": "1.0.0", "displayName": "A",
                     "installModes": [{"type": "OwnNamespace", "supported": true}],
                     "install": {"strategy": "deployment", "spec": {"deployments": []}}}
    })
}

struct Scenario {
    api: FakeApi,
    actor: Addr<CsvActor>,
    journal: SharedJournal,
}

fn start(script: Vec<u16>) -> Scenario {
    let api = FakeApi::new(script).with_object(csv_json());
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    let mut actor = CsvActor::new(ObjectKey::new("ns", "a.v1"), shared(api.client()));
    actor.attach(journal.clone());
    let actor = actor.start();
    actor.do_send(ObjectEvent::Observed(csv()));
    Scenario {
        api,
        actor,
        journal,
    }
}

/// The status writes the fake API saw: phase and reason of each.
fn writes(api: &FakeApi) -> Vec<(String, String)> {
    api.seen()
        .iter()
        .filter(|s| s.method == "PATCH" && s.path.ends_with("/clusterserviceversions/a.v1/status"))
        .map(|s| {
            let text = |f: &str| s.body["status"][f].as_str().unwrap_or_default().to_string();
            (text("phase"), text("reason"))
        })
        .collect()
}

/// The loop's journaled runs: (error, requeue in ms).
fn outcomes(journal: &SharedJournal) -> Vec<(Option<String>, Option<u64>)> {
    journal
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entries()
        .filter_map(|e| match &e.event {
            JournalEvent::Reconciled { error, requeue_ms } => Some((error.clone(), *requeue_ms)),
            _ => None,
        })
        .collect()
}

async fn settle(ms: u64) {
    for _ in 0..ms / 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn no_group() -> (String, String) {
    ("Failed".to_string(), "NoOperatorGroup".to_string())
}

#[actix_rt::test]
async fn a_csv_without_a_group_fails_once_and_waits_without_a_recheck() {
    tokio::time::pause();
    let s = start(vec![]);
    settle(100).await;
    assert_eq!(
        writes(&s.api),
        vec![no_group()],
        "requests {:?}, runs {:?}",
        s.api
            .seen()
            .iter()
            .map(|r| format!("{} {} {}", r.method, r.path, r.body["status"]))
            .collect::<Vec<_>>(),
        outcomes(&s.journal)
    );
    // No timer: a group created later requeues the namespace's CSVs (GROUP_RECHECK is gone).
    settle(30_000).await;
    assert_eq!(writes(&s.api), vec![no_group()], "nothing rechecked");
    let out = outcomes(&s.journal);
    assert_eq!(
        out.last(),
        Some(&(None, None)),
        "the last run set no timer: {out:?}"
    );
    // A requeue (the group registry's Broadcast) decides again; already Failed for that reason: no write.
    s.actor.do_send(Requeue {
        reason: RequeueReason::DependencyChanged,
    });
    settle(100).await;
    assert_eq!(writes(&s.api), vec![no_group()]);
}

#[actix_rt::test]
async fn a_conflicting_status_write_is_retried_soon_from_the_stores_copy() {
    tokio::time::pause();
    let s = start(vec![409]);
    settle(20).await;
    assert_eq!(
        writes(&s.api),
        vec![no_group()],
        "the first write hits the conflict"
    );
    let out = outcomes(&s.journal);
    assert!(
        out.first()
            .is_some_and(|(e, _)| e.as_deref().is_some_and(|e| e.starts_with("conflict"))),
        "a conflict, classified: {out:?}"
    );
    // The conflict policy retries within 100 ms (jittered into [50, 100] ms).
    settle(150).await;
    assert_eq!(writes(&s.api), vec![no_group(), no_group()]);
    assert_eq!(outcomes(&s.journal).last(), Some(&(None, None)));
}

#[actix_rt::test]
async fn a_csv_that_stops_decoding_writes_nothing_until_a_version_that_decodes_arrives() {
    tokio::time::pause();
    // The first status write fails: its retry is pending when the CSV stops decoding.
    let s = start(vec![503]);
    settle(20).await;
    assert_eq!(writes(&s.api), vec![no_group()]);
    s.actor.do_send(ObjectEvent::Undecodable(
        "spec.install: invalid value: integer `9999999999`, expected i32".to_string(),
    ));
    s.actor.do_send(Requeue {
        reason: RequeueReason::DependencyChanged,
    });
    settle(120_000).await;
    assert_eq!(
        writes(&s.api),
        vec![no_group()],
        "no retry, no run for the cause, while held"
    );
    let held = s
        .journal
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entries()
        .filter(|e| matches!(e.event, JournalEvent::Held { .. }))
        .count();
    assert_eq!(held, 1, "the cause is journaled as held");
    s.actor.do_send(ObjectEvent::Observed(csv()));
    settle(100).await;
    assert_eq!(
        writes(&s.api),
        vec![no_group(), no_group()],
        "a version that decodes reconciles again"
    );
}
