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
    let router = NamespaceResolver::new(Shared::for_tests(api.client())).start();
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
    let router = NamespaceResolver::new(Shared::for_tests(api.client())).start();
    router.do_send(catalog_changed("team-a"));
    assert_eq!(state(&router).await, (0, vec!["team-a".to_string()]));
    advance(1_000).await;
    assert_eq!(state(&router).await.0, 0, "nothing was gathered");
}
