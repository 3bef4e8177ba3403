//! Reading a catalog's content (the I/O of a CatalogSource run that re-reads it): the ConfigMap or the image
//! served in-process, or the gRPC registry the actor is connected to, converted into the resolver's snapshot
//! and the deprecation index off the async threads.

use super::pod;
use super::spec::Plan;
use crate::catalogs::{BundleSource, FetchError};
use crate::deprecation::DeprecationIndex;
use crate::shared::Shared;
use crate::snapshot;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::catalog_source::ConfigMapResourceReference;
use resolver::{CatalogKey, CatalogSnapshot};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The content one read produced.
pub struct Fetched {
    pub snapshot: CatalogSnapshot,
    pub deprecations: DeprecationIndex,
    pub source: BundleSource,
    pub config_map: Option<ConfigMapResourceReference>,
    pub notes: Vec<String>,
}

/// Read the content `plan` names (`source`: the connected registry of an address or image plan).
pub async fn content(
    shared: Shared,
    plan: Plan,
    key: CatalogKey,
    priority: i32,
    source: Option<BundleSource>,
) -> Result<Fetched, String> {
    let (source, config_map) = match (&plan, source) {
        (Plan::ConfigMap(cm), _) => {
            let (store, reference) =
                load_config_map(&shared.client, &key.namespace, cm, &key.name).await?;
            (BundleSource::InProcess(store), Some(reference))
        }
        (Plan::Image { image, .. }, _) => {
            let store = load_image(&shared, &key, image).await?;
            (BundleSource::InProcess(store), None)
        }
        (_, Some(source)) => (source, None),
        (_, None) => return Err(format!("{}", FetchError::NotServing(key))),
    };
    let (converted, deprecations) = match &source {
        // Read one bundle at a time: a large catalog's wire bundles are never all in memory.
        BundleSource::InProcess(store) => {
            let store = store.clone();
            tokio::task::spawn_blocking(move || snapshot::from_store(key, priority, &store))
                .await
                .map_err(|e| format!("snapshot task failed: {e}"))?
                .map_err(|e| error_text(&e))?
        }
        BundleSource::Grpc(_) => {
            let (packages, bundles) = source.content().await.map_err(|e| error_text(&e))?;
            tokio::task::spawn_blocking(move || {
                (
                    snapshot::convert(key, priority, &packages, &bundles),
                    DeprecationIndex::build(&packages, &bundles),
                )
            })
            .await
            .map_err(|e| format!("snapshot task failed: {e}"))?
        }
    };
    Ok(Fetched {
        snapshot: converted.snapshot,
        deprecations,
        source,
        config_map,
        notes: converted.notes,
    })
}

use crate::error::error_text;

/// Loads the catalog image of CatalogSource `key` with its pull secrets; the error as status text.
async fn load_image(
    shared: &Shared,
    key: &resolver::CatalogKey,
    image: &str,
) -> Result<std::sync::Arc<registry::store::Store>, String> {
    let auth = crate::bundle_image::credentials::for_catalog(shared, key).await;
    shared
        .catalog_images
        .load(key, image, &auth)
        .await
        .map_err(|e| error_text(&e))
}

/// The labels that route a catalog ConfigMap's changes to its CatalogSource (a typed merge patch).
fn catalog_labels(catalog: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([
                (pod::CATALOG_SOURCE_LABEL.to_string(), catalog.to_string()),
                ("olm.managed".to_string(), "false".to_string()),
            ])),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// Read the ConfigMap, label it so its changes reach us, and index its catalog.
async fn load_config_map(
    client: &kube::Client,
    ns: &str,
    name: &str,
    catalog: &str,
) -> Result<(Arc<registry::store::Store>, ConfigMapResourceReference), String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let cm = match api.get_opt(name).await {
        Ok(Some(cm)) => cm,
        Ok(None) => return Err(format!("configmap {ns}/{name} not found")),
        Err(e) => {
            return Err(format!(
                "cannot read configmap {ns}/{name}: {}",
                error_text(&e)
            ));
        }
    };
    if cm
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(pod::CATALOG_SOURCE_LABEL))
        .map(String::as_str)
        != Some(catalog)
    {
        let patch = catalog_labels(catalog);
        if let Err(e) = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(configmap = %name, error = &e as &dyn std::error::Error, "cannot label the catalog ConfigMap; its changes will only be seen on polls");
        }
    }
    let reference = ConfigMapResourceReference {
        name: name.to_string(),
        namespace: ns.to_string(),
        uid: cm.metadata.uid.clone().unwrap_or_default(),
        resource_version: cm.metadata.resource_version.clone().unwrap_or_default(),
        last_update_time: Some(Time(Timestamp::now())),
    };
    let data = cm.data.unwrap_or_default();
    let store = tokio::task::spawn_blocking(move || {
        let catalog = catalog::Catalog::from_configmap_data(&data)
            .map_err(|e| format!("invalid catalog in configmap: {}", error_text(&e)))?;
        registry::store::Store::build(catalog)
            .map_err(|e| format!("cannot index the configmap catalog: {}", error_text(&e)))
    })
    .await
    .map_err(|e| format!("catalog indexing task failed: {e}"))??;
    Ok((Arc::new(store), reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_patch_carries_exactly_the_two_labels() {
        let v = serde_json::to_value(catalog_labels("cat")).expect("serialisable");
        assert_eq!(
            v["metadata"],
            serde_json::json!({"labels": {pod::CATALOG_SOURCE_LABEL: "cat", "olm.managed": "false"}})
        );
        assert_eq!(v["kind"], "ConfigMap");
        assert!(
            v.get("data").is_none(),
            "the patch leaves the catalog alone: {v}"
        );
    }
}
