//! Keeps the APIService's `caBundle` on the CA of the serving certificate this server manages, so the
//! aggregator trusts it. The APIService itself (service, group priority) comes from `deploy/` (or a test); this
//! server only patches `spec.caBundle` (RBAC: `patch` on that one APIService), at start and whenever it
//! differs (another writer, a re-applied manifest), checked every [`RECHECK`].

use k8s_openapi::ByteString;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde::Serialize;
use std::time::Duration;

pub const RECHECK: Duration = Duration::from_secs(30);

#[derive(Debug, Serialize)]
struct CaBundlePatch {
    spec: CaBundleSpec,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CaBundleSpec {
    ca_bundle: ByteString,
}

/// Patch `caBundle` once if it differs. Ok(true): it was written.
pub async fn sync_ca_bundle(
    client: &Client,
    name: &str,
    ca_pem: &str,
) -> Result<bool, kube::Error> {
    let api: Api<APIService> = Api::all(client.clone());
    let current = api.get(name).await?;
    if current
        .spec
        .as_ref()
        .and_then(|s| s.ca_bundle.as_ref())
        .is_some_and(|b| b.0 == ca_pem.as_bytes())
    {
        return Ok(false);
    }
    let patch = CaBundlePatch {
        spec: CaBundleSpec {
            ca_bundle: ByteString(ca_pem.as_bytes().to_vec()),
        },
    };
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

/// Keep the bundle in place for as long as the process runs.
pub fn spawn_keeper(client: Client, name: String, ca_pem: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut delay = Duration::from_millis(500);
        loop {
            match sync_ca_bundle(&client, &name, &ca_pem).await {
                Ok(written) => {
                    if written {
                        tracing::info!(apiservice = %name, "caBundle set to the serving CA");
                    }
                    delay = RECHECK;
                }
                Err(error) => {
                    tracing::warn!(apiservice = %name, error = &error as &dyn std::error::Error, "cannot set the APIService caBundle yet");
                    delay = (delay * 2).min(RECHECK);
                }
            }
            tokio::time::sleep(delay).await;
        }
    })
}
