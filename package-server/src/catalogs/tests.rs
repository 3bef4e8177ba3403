//! The CatalogSource actor without a cluster: a ConfigMap catalog read through a fake API server that holds each
//! ConfigMap GET until the test lets it answer, so that causes arrive while a read is under way.

use super::*;
use catalog::configmap::{CSVS_KEY, PACKAGES_KEY};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::client::Body;
use messages::msg::RequeueReason;
use messages::testing::Catsrc;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Semaphore, mpsc};

/// A fake API server answering GETs of ConfigMap `cm` (one package, `a`), each once the test allows it.
struct GatedApi {
    /// One permit per answer allowed.
    gate: Arc<Semaphore>,
    requests: Arc<AtomicUsize>,
}

impl GatedApi {
    /// The API, its client, and a channel telling each request as it arrives.
    fn new() -> (Self, kube::Client, mpsc::UnboundedReceiver<String>) {
        let gate = Arc::new(Semaphore::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::unbounded_channel();
        let (g, n) = (gate.clone(), requests.clone());
        let service = tower::service_fn(move |req: http::Request<Body>| {
            let (gate, requests, tx) = (g.clone(), n.clone(), tx.clone());
            async move {
                let path = req.uri().path().to_string();
                requests.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(path.clone());
                let answer = match gate.acquire().await {
                    Ok(permit) => {
                        permit.forget();
                        if path == "/api/v1/namespaces/ns/configmaps/cm" {
                            (200, serde_json::to_vec(&config_map()).unwrap_or_default())
                        } else {
                            (404, Vec::new())
                        }
                    }
                    Err(_) => (503, Vec::new()),
                };
                let response = http::Response::builder()
                    .status(answer.0)
                    .header("content-type", "application/json")
                    .body(Body::from(answer.1))
                    .unwrap_or_else(|_| http::Response::new(Body::empty()));
                Ok::<_, Infallible>(response)
            }
        });
        let client = kube::Client::new(service, "default");
        (Self { gate, requests }, client, rx)
    }

    fn answer(&self, reads: usize) {
        self.gate.add_permits(reads);
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn config_map() -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("cm".into()),
            namespace: Some("ns".into()),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            (
                CSVS_KEY.to_string(),
                "- kind: ClusterServiceVersion\n  metadata: {name: a.v1}\n  spec: {version: 1.0.0}\n"
                    .to_string(),
            ),
            (
                PACKAGES_KEY.to_string(),
                "- packageName: a\n  channels: [{name: alpha, currentCSV: a.v1}]\n".to_string(),
            ),
        ])),
        ..ConfigMap::default()
    }
}

fn catalog(display_name: &str) -> ObjectEvent<CatalogSource> {
    ObjectEvent::Observed(Arc::new(
        Catsrc::named("c")
            .in_ns("ns")
            .config_map("cm")
            .display_name(display_name)
            .build(),
    ))
}

fn actor(client: kube::Client, store: Arc<PackageStore>) -> Addr<CatalogActor> {
    let shared = Shared {
        client,
        store,
        options: ClientOptions::default(),
        images: oci::Registry::default(),
        global_pull_secret: None,
        image_catalogs: None,
    };
    CatalogActor::new(ObjectKey::new("ns", "c"), shared).start()
}

/// The loop's runs so far (answered between runs: a run holds the mailbox).
struct Runs;

impl Message for Runs {
    type Result = u64;
}

impl Handler<Runs> for CatalogActor {
    type Result = u64;

    fn handle(&mut self, _: Runs, _: &mut Context<Self>) -> u64 {
        self.control.runs()
    }
}

/// The catalog name its packages are listed under in namespace `ns`.
fn listed(store: &PackageStore) -> Vec<(String, String)> {
    store
        .list(Some("ns"))
        .0
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.unwrap_or_default(),
                p.status.catalog_source_display_name,
            )
        })
        .collect()
}

#[actix_rt::test]
async fn changes_arriving_during_a_read_give_exactly_one_more_read_of_the_newest_version() {
    let (api, client, mut requests) = GatedApi::new();
    let store = Arc::new(PackageStore::new("olm"));
    let a = actor(client, store.clone());
    a.do_send(catalog("one"));
    assert_eq!(
        requests.recv().await.as_deref(),
        Some("/api/v1/namespaces/ns/configmaps/cm")
    );
    // While the first read waits for its answer: two new versions and the resync.
    a.do_send(catalog("two"));
    a.do_send(Requeue {
        reason: RequeueReason::Resync,
    });
    a.do_send(catalog("three"));
    // Enough answers for any number of reads: a read too many would be answered, and counted.
    api.answer(10);
    assert_eq!(
        requests.recv().await.as_deref(),
        Some("/api/v1/namespaces/ns/configmaps/cm")
    );
    // Asked after the second read started: answered once it ended; a run asked for meanwhile would start
    // before the second question is answered.
    a.send(Runs).await.expect("actor");
    let runs = a.send(Runs).await.expect("actor");
    assert_eq!(runs, 2);
    assert_eq!(api.requests(), 2);
    assert_eq!(listed(&store), [("a".to_string(), "three".to_string())]);
}

#[actix_rt::test]
async fn a_read_that_stalls_is_abandoned_at_the_deadline_and_read_again() {
    tokio::time::pause();
    let (api, client, mut requests) = GatedApi::new();
    let store = Arc::new(PackageStore::new("olm"));
    let a = actor(client, store.clone());
    let start = tokio::time::Instant::now();
    a.do_send(catalog("one"));
    requests.recv().await.expect("a first read");
    // Never answered: virtual time runs on to the deadline, the run is abandoned, and the retry reads again.
    let deadline = decide::policy().deadline;
    tokio::time::timeout(deadline * 2, requests.recv())
        .await
        .expect("a read again within twice the deadline")
        .expect("a second read");
    assert!(start.elapsed() >= deadline, "{:?}", start.elapsed());
    assert_eq!(api.requests(), 2);
    api.answer(1);
    a.send(Runs).await.expect("actor");
    assert_eq!(listed(&store), [("a".to_string(), "one".to_string())]);
}

#[actix_rt::test]
async fn a_version_that_does_not_decode_removes_the_packages_and_holds_reads_until_one_decodes() {
    let (api, client, mut requests) = GatedApi::new();
    api.answer(10);
    let store = Arc::new(PackageStore::new("olm"));
    let a = actor(client, store.clone());
    a.do_send(catalog("one"));
    requests.recv().await.expect("a first read");
    a.send(Runs).await.expect("actor");
    assert_eq!(listed(&store), [("a".to_string(), "one".to_string())]);

    a.do_send(ObjectEvent::Undecodable("invalid type: integer `7`".into()));
    a.do_send(Requeue {
        reason: RequeueReason::Resync,
    });
    a.send(Runs).await.expect("actor");
    let runs = a.send(Runs).await.expect("actor");
    assert_eq!(listed(&store), []);
    assert_eq!(
        (runs, api.requests()),
        (1, 1),
        "held: the resync reads nothing"
    );

    a.do_send(catalog("two"));
    requests
        .recv()
        .await
        .expect("a read of the version that decodes");
    a.send(Runs).await.expect("actor");
    assert_eq!(listed(&store), [("a".to_string(), "two".to_string())]);
    assert_eq!(api.requests(), 2);
}
