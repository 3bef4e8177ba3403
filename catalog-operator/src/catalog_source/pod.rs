//! The registry Pod, Service and ServiceAccount OLM creates for a `grpc` CatalogSource with an `image`
//! (§4.7). Building the objects is pure; `ensure` creates the missing ones.

use super::spec::GRPC_PORT;
use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use messages::crd::catalog_source::CatalogSource;
use serde_json::json;

pub const CATALOG_SOURCE_LABEL: &str = "olm.catalogSource";

fn owner(cs: &CatalogSource) -> serde_json::Value {
    json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource", "name": cs.metadata.name,
            "uid": cs.metadata.uid, "controller": false, "blockOwnerDeletion": false}])
}

pub fn service_account(cs: &CatalogSource, name: &str) -> serde_json::Value {
    let secrets: Vec<serde_json::Value> = cs
        .spec
        .secrets
        .iter()
        .flatten()
        .map(|s| json!({"name": s}))
        .collect();
    json!({"apiVersion": "v1", "kind": "ServiceAccount",
           "metadata": {"name": name, "labels": {CATALOG_SOURCE_LABEL: name, "olm.managed": "true"}, "ownerReferences": owner(cs)},
           "imagePullSecrets": secrets})
}

pub fn service(cs: &CatalogSource, catalog: &str, service: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": service, "labels": {CATALOG_SOURCE_LABEL: catalog, "olm.managed": "true"}, "ownerReferences": owner(cs)},
           "spec": {"ports": [{"name": "grpc", "port": GRPC_PORT, "targetPort": GRPC_PORT}],
                    "selector": {CATALOG_SOURCE_LABEL: catalog, "olm.managed": "true"}}})
}

pub fn pod(cs: &CatalogSource, catalog: &str, image: &str) -> serde_json::Value {
    let mut annotations = cs.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(
        "cluster-autoscaler.kubernetes.io/safe-to-evict".into(),
        "true".into(),
    );
    let node_selector = cs
        .spec
        .grpc_pod_config
        .as_ref()
        .and_then(|c| c.node_selector.clone())
        .unwrap_or_else(|| [("kubernetes.io/os".to_string(), "linux".to_string())].into());
    // An exec probe with grpc_health_probe, as OLM writes it (gRPC probes need Kubernetes 1.24+).
    let probe = json!({"exec": {"command": ["grpc_health_probe", format!("-addr=:{GRPC_PORT}")]}, "initialDelaySeconds": 0, "timeoutSeconds": 5});
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": format!("{catalog}-"), "labels": {CATALOG_SOURCE_LABEL: catalog, "olm.managed": "true", "olm.pod-spec-hash": "v1"},
                        "annotations": annotations, "ownerReferences": owner(cs)},
           "spec": {"serviceAccountName": catalog, "nodeSelector": node_selector,
                    "containers": [{"name": "registry-server", "image": image, "imagePullPolicy": "IfNotPresent",
                                    "ports": [{"name": "grpc", "containerPort": GRPC_PORT}],
                                    "readinessProbe": probe, "livenessProbe": probe, "startupProbe": probe,
                                    "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}}}]}})
}

#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error("cannot build {what}")]
    Build {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot create or list {what}")]
    Api {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
}

async fn create_if_missing<K>(
    api: &Api<K>,
    name: &str,
    value: serde_json::Value,
    what: &'static str,
) -> Result<(), PodError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    if api
        .get_opt(name)
        .await
        .map_err(|source| PodError::Api { what, source })?
        .is_some()
    {
        return Ok(());
    }
    let obj: K =
        serde_json::from_value(value).map_err(|source| PodError::Build { what, source })?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(source) => Err(PodError::Api { what, source }),
    }
}

/// Create the ServiceAccount, Service and one registry Pod when missing.
pub async fn ensure(
    client: &Client,
    cs: &CatalogSource,
    catalog: &str,
    namespace: &str,
    image: &str,
    svc: &str,
) -> Result<(), PodError> {
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    create_if_missing(
        &sas,
        catalog,
        service_account(cs, catalog),
        "registry ServiceAccount",
    )
    .await?;
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    create_if_missing(
        &services,
        svc,
        service(cs, catalog, svc),
        "registry Service",
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let existing = pods
        .list(&ListParams::default().labels(&format!("{CATALOG_SOURCE_LABEL}={catalog}")))
        .await
        .map_err(|source| PodError::Api {
            what: "registry Pods",
            source,
        })?;
    if existing.items.is_empty() {
        let obj: Pod =
            serde_json::from_value(pod(cs, catalog, image)).map_err(|source| PodError::Build {
                what: "registry Pod",
                source,
            })?;
        pods.create(&PostParams::default(), &obj)
            .await
            .map_err(|source| PodError::Api {
                what: "registry Pod",
                source,
            })?;
    }
    Ok(())
}
