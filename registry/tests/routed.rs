//! One routed server for many catalogs (`registry::routed`): each client names its catalog and reads that
//! catalog only; a catalog not loaded answers NOT_FOUND.

use std::collections::HashMap;
use std::sync::Arc;

use registry::client::{ClientError, ClientOptions, RegistryClient};
use registry::routed::Catalogs;
use registry::store::Store;
use tonic::Code;

struct Fixed(HashMap<String, Arc<Store>>);

impl Catalogs for Fixed {
    fn store(&self, key: &str) -> Option<Arc<Store>> {
        self.0.get(key).cloned()
    }
}

fn store(package: &str) -> Arc<Store> {
    let fbc = format!(
        r#"{{"schema":"olm.package","name":"{package}","defaultChannel":"stable"}}
{{"schema":"olm.channel","package":"{package}","name":"stable","entries":[{{"name":"{package}.v1"}}]}}
{{"schema":"olm.bundle","name":"{package}.v1","package":"{package}","image":"r/{package}@sha256:1","properties":[{{"type":"olm.package","value":{{"packageName":"{package}","version":"1.0.0"}}}}]}}
"#
    );
    let docs = catalog::documents::with_origins(
        std::path::Path::new("/catalog.json"),
        catalog::documents::parse_documents(&fbc).expect("fbc"),
    );
    let catalog = catalog::fbc::from_documents(docs).expect("catalog");
    Arc::new(Store::build(catalog).expect("store"))
}

fn client(addr: std::net::SocketAddr, catalog: &str) -> RegistryClient {
    let options = ClientOptions {
        catalog: Some(catalog.to_string()),
        ..ClientOptions::default()
    };
    RegistryClient::connect(&addr.to_string(), options).expect("client")
}

#[tokio::test]
async fn each_client_reads_the_catalog_it_names_and_an_unknown_one_is_not_found() {
    let catalogs = Fixed(HashMap::from([
        ("ns/a".to_string(), store("alpha")),
        ("ns/b".to_string(), store("beta")),
    ]));
    let listener = registry::server::bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(registry::server::serve_routed(
        Arc::new(catalogs),
        listener,
        async {
            let _ = rx.await;
        },
    ));
    assert_eq!(
        client(addr, "ns/a").list_packages().await.expect("a"),
        ["alpha"]
    );
    assert_eq!(
        client(addr, "ns/b").list_packages().await.expect("b"),
        ["beta"]
    );
    let head = client(addr, "ns/b")
        .get_bundle_for_channel("beta", "stable")
        .await
        .expect("head");
    assert_eq!(head.csv_name, "beta.v1");
    match client(addr, "ns/c").list_bundles().await {
        Err(ClientError::Rpc { source, .. }) => assert_eq!(source.code(), Code::NotFound),
        other => panic!("expected NOT_FOUND, got {other:?}"),
    }
    let _ = tx.send(());
    server.await.expect("join").expect("served");
}
