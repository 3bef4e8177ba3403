//! The namespace router without a cluster: global catalog changes gathered into fan-outs (`catalog_burst`), on
//! paused time.

use super::*;
use std::time::Duration;
use testkit::fake_api::FakeApi;

fn catalog_changed(namespace: &str) -> Resolve {
    Resolve {
        namespace: namespace.into(),
        cause: Cause::CatalogChanged,
    }
}

async fn advance(ms: u64) {
    for _ in 0..ms / 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn state(router: &Addr<NamespaceResolver>) -> (u64, Vec<String>) {
    let s = router.send(Inspect).await.expect("router answers");
    (s.fan_outs, s.namespaces.into_iter().collect())
}

#[actix_rt::test]
async fn a_burst_of_global_catalog_changes_fans_out_once_then_waits_for_the_spacing() {
    tokio::time::pause();
    let api = FakeApi::new(vec![]);
    let router = NamespaceResolver::new(Shared::for_tests(api.client()), journal()).start();
    // 50 catalogs created and turning healthy within the settle window: one fan-out.
    for _ in 0..100 {
        router.do_send(catalog_changed("olm"));
    }
    advance(100).await;
    assert_eq!(
        state(&router).await,
        (0, vec![]),
        "the settle window is still open"
    );
    advance(200).await;
    assert_eq!(state(&router).await, (1, vec!["olm".to_string()]));
    // Changes right after it wait for the spacing (250 ms with no subscribed namespace), gathered into one.
    router.do_send(catalog_changed("olm"));
    router.do_send(catalog_changed("olm"));
    advance(300).await;
    assert_eq!(state(&router).await.0, 2);
    advance(1_000).await;
    assert_eq!(state(&router).await.0, 2, "nothing more changed");
}

#[actix_rt::test]
async fn a_catalog_outside_the_global_namespace_is_routed_at_once() {
    tokio::time::pause();
    let api = FakeApi::new(vec![]);
    let router = NamespaceResolver::new(Shared::for_tests(api.client()), journal()).start();
    router.do_send(catalog_changed("team-a"));
    assert_eq!(state(&router).await, (0, vec!["team-a".to_string()]));
    advance(1_000).await;
    assert_eq!(state(&router).await.0, 0, "nothing was gathered");
}

/// A namespace actor that dies (here every run panics: chaos `panic=1`) is started again by the router's
/// supervision, with no further message from outside, and resolves again.
#[actix_rt::test]
async fn a_namespace_actor_that_died_is_started_again_and_resolves() {
    tokio::time::pause();
    let api = FakeApi::new(vec![]);
    let mut shared = Shared::for_tests(api.client());
    let config = olm_runtime::chaos::ChaosConfig::parse("seed=1,panic=1").expect("chaos config");
    shared.process = std::sync::Arc::new(crate::shared::Process {
        chaos: Some(std::sync::Arc::new(olm_runtime::chaos::Injector::new(
            config,
        ))),
        ..Default::default()
    });
    let journal = journal();
    let router = NamespaceResolver::new(shared, journal.clone()).start();
    router.do_send(Resolve {
        namespace: "team-a".into(),
        cause: Cause::SubscriptionChanged,
    });
    advance(2_500).await;
    let events: Vec<String> = journal
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entries()
        .filter(|e| e.key.name == "team-a")
        .map(|e| match &e.event {
            messages::msg::JournalEvent::Fault { .. } => "fault".to_string(),
            other => format!("{other:?}"),
        })
        .filter(|e| ["Spawned", "Respawned", "fault"].contains(&e.as_str()))
        .collect();
    let respawned = events.iter().position(|e| e == "Respawned");
    assert_eq!(
        events.first().map(String::as_str),
        Some("Spawned"),
        "{events:?}"
    );
    assert!(
        respawned.is_some_and(|at| events[at..].iter().any(|e| e == "fault")),
        "started again and ran again: {events:?}"
    );
}

fn journal() -> olm_runtime::journal::SharedJournal {
    std::sync::Arc::new(std::sync::Mutex::new(
        messages::msg::Journal::with_capacity(100),
    ))
}
