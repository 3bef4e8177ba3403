//! The CatalogSource actor without a cluster: a ConfigMap catalog whose one read fails (the API cut the
//! connection) is read again on its own, with no other cause (the ConfigMap does not change, nothing polls).

use super::*;
use messages::key::ObjectKey;
use std::time::Duration;
use testkit::fake_api::FakeApi;

const CONFIG_MAP: &str = "/api/v1/namespaces/ns/configmaps/cm";
const CATALOG_SOURCES: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/ns/catalogsources";

fn catalog_source() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "cat", "namespace": "ns", "resourceVersion": "1"},
        "spec": {"sourceType": "configmap", "configMap": "cm"}
    })
}

/// Advance paused time by `ms` in small steps, letting the actor run between them.
async fn settle(ms: u64) {
    for _ in 0..ms / 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[actix_rt::test]
async fn a_configmap_read_that_failed_is_read_again_without_another_cause() {
    tokio::time::pause();
    // The test's two creates, then the actor's first read of the ConfigMap fails (503); all else succeeds.
    let api = FakeApi::new([200, 200, 503]).keeping();
    let client = api.client();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), "ns");
    let cm: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}, "data": {}
    }))
    .expect("configmap");
    cms.create(&kube::api::PostParams::default(), &cm)
        .await
        .expect("configmap created");
    let sources: Api<CatalogSource> = Api::namespaced(client.clone(), "ns");
    let cs: CatalogSource = serde_json::from_value(catalog_source()).expect("catalog source");
    sources
        .create(&kube::api::PostParams::default(), &cs)
        .await
        .expect("catalog source created");
    let actor = CatalogSourceActor::new(ObjectKey::new("ns", "cat"), Shared::for_tests(client));
    let actor = actor.start();
    actor.do_send(ObjectEvent::Observed(Arc::new(cs)));
    settle(30_000).await;
    let reads = api
        .seen()
        .iter()
        .filter(|s| s.method == "GET" && s.path == CONFIG_MAP)
        .count();
    assert!(reads >= 2, "the ConfigMap was read {reads} time(s)");
    let stored = api
        .objects_under(CATALOG_SOURCES)
        .into_iter()
        .next()
        .expect("the catalog source is kept");
    assert_ne!(
        stored["status"]["reason"], "ConfigMapError",
        "the status still says the read failed: {}",
        stored["status"]
    );
    assert!(
        stored["status"]["configMapReference"]["name"] == "cm",
        "the loaded ConfigMap is referenced: {}",
        stored["status"]
    );
}
