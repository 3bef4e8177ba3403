//! Keeps the APIService's `caBundle` on the CA of the serving certificate this server manages, so the
//! aggregator trusts it. The APIService itself (service, group priority) comes from `deploy/` (or a test); this
//! server only patches `spec.caBundle` (RBAC: get, list, watch and patch of that one APIService), whenever it
//! differs from the CA (at start, and when the APIService is re-created or re-applied: a watch by name).

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct CaBundlePatch {
    spec: CaBundleSpec,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CaBundleSpec {
    ca_bundle: ByteString,
}

fn has_bundle(current: &APIService, ca_pem: &str) -> bool {
    current
        .spec
        .as_ref()
        .and_then(|s| s.ca_bundle.as_ref())
        .is_some_and(|b| b.0 == ca_pem.as_bytes())
}

async fn patch_ca_bundle(client: &Client, name: &str, ca_pem: &str) -> Result<(), kube::Error> {
    let api: Api<APIService> = Api::all(client.clone());
    let patch = CaBundlePatch {
        spec: CaBundleSpec {
            ca_bundle: ByteString(ca_pem.as_bytes().to_vec()),
        },
    };
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Keep the bundle in place for as long as the process runs: a watch of this one APIService (by name), so a
/// re-created or re-applied APIService gets the bundle back at once, before the aggregator gives up on it.
pub fn spawn_keeper(client: Client, name: String, ca_pem: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<APIService> = Api::all(client.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = watcher(api, olm_runtime::watch::renewed_rarely(config))
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(event) = events.next().await {
            let current = match event {
                Ok(current) => current,
                Err(error) => {
                    tracing::warn!(apiservice = %name, error = &error as &dyn std::error::Error, "APIService watch error (retrying)");
                    continue;
                }
            };
            if has_bundle(&current, &ca_pem) {
                continue;
            }
            match patch_ca_bundle(&client, &name, &ca_pem).await {
                Ok(()) => tracing::info!(apiservice = %name, "caBundle set to the serving CA"),
                Err(error) => {
                    tracing::warn!(apiservice = %name, error = &error as &dyn std::error::Error, "cannot set the APIService caBundle")
                }
            }
        }
    })
}
