//! A fresh namespace per test: created with a random suffix, handed to the test body, dumped to stderr when the
//! body fails or panics, and deleted afterwards either way (kept when `OLM_TEST_NO_CLEANUP` is set, for debugging).

use crate::cluster::Cluster;
use crate::dump::dump_namespace;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use rand::Rng;
use std::future::Future;

#[derive(Clone)]
pub struct TestContext {
    pub client: Client,
    pub namespace: String,
    pub cluster: &'static Cluster,
}

fn random_suffix() -> String {
    let mut rng = rand::rng();
    (0..6)
        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
        .collect()
}

/// Run `body` in a new namespace named `<prefix>-<random>`.
pub async fn with_namespace<F, Fut>(
    cluster: &'static Cluster,
    prefix: &str,
    body: F,
) -> anyhow::Result<()>
where
    F: FnOnce(TestContext) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let client = cluster.client().await?;
    let namespace = format!("{prefix}-{}", random_suffix());
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.clone());
    ns.metadata.labels = Some([("olm-rs.io/test".to_string(), "true".to_string())].into());
    api.create(&PostParams::default(), &ns).await?;
    let ctx = TestContext {
        client: client.clone(),
        namespace: namespace.clone(),
        cluster,
    };
    // A failed assertion panics: the namespace is deleted all the same, then the panic goes on.
    let outcome = std::panic::AssertUnwindSafe(body(ctx)).catch_unwind().await;
    let failed = match &outcome {
        Ok(Err(error)) => Some(format!("{error:#}")),
        Ok(Ok(())) => None,
        Err(_) => Some("it panicked".to_string()),
    };
    if let Some(why) = failed {
        eprintln!("test in namespace {namespace} failed: {why}");
        dump_namespace(&client, &namespace).await;
    }
    if std::env::var_os("OLM_TEST_NO_CLEANUP").is_none()
        && let Err(error) = api.delete(&namespace, &DeleteParams::background()).await
    {
        eprintln!("cleanup of namespace {namespace} failed: {error}");
    }
    match outcome {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
