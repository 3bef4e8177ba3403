//! The catalogs' served content, shared between CatalogSource actors (writers) and namespace resolution
//! (reader): per CatalogSource, its resolver snapshot, its health, and where to fetch a full bundle
//! (manifests) once the resolver has chosen it.
//!
//! ```text
//! CatalogSourceActor ──publish──▶ Catalogs { key → CatalogView } ◀──read── namespace resolution
//!        (grpc client or in-process Store)           │
//!                                                    └─ BundleSource::bundle(pkg, channel, csv) → api.Bundle
//! ```

use registry::api;
use registry::client::RegistryClient;
use registry::store::Store;
use resolver::{CatalogKey, CatalogSnapshot};
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

/// Where a catalog's full bundles come from.
#[derive(Clone)]
pub enum BundleSource {
    /// A registry server reached over gRPC.
    Grpc(Arc<RegistryClient>),
    /// A ConfigMap catalog indexed in this process.
    InProcess(Arc<Store>),
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("registry call failed")]
    Client(#[from] registry::client::ClientError),
    #[error("in-process catalog query failed")]
    Query(#[from] registry::query::QueryError),
    #[error("catalog {0} serves no content (unreachable or invalid)")]
    NotServing(CatalogKey),
}

impl BundleSource {
    /// The full bundle (CSV JSON and every object) of `csv` in `channel` of `package`.
    pub async fn bundle(
        &self,
        package: &str,
        channel: &str,
        csv: &str,
    ) -> Result<api::Bundle, FetchError> {
        match self {
            BundleSource::Grpc(client) => Ok(client.get_bundle(package, channel, csv).await?),
            BundleSource::InProcess(store) => {
                Ok(registry::query::get_bundle(store, package, channel, csv)?)
            }
        }
    }

    /// Every package and bundle, as much of each as resolution reads ([`for_resolution`]), to build a snapshot.
    pub async fn content(&self) -> Result<(Vec<api::Package>, Vec<api::Bundle>), FetchError> {
        match self {
            BundleSource::Grpc(client) => {
                let names = client.list_packages().await?;
                let mut packages = Vec::with_capacity(names.len());
                for n in names {
                    packages.push(client.get_package(&n).await?);
                }
                let bundles = client.list_bundles_mapped(for_resolution).await?;
                Ok((packages, bundles))
            }
            BundleSource::InProcess(store) => {
                let mut packages = Vec::new();
                for p in store.packages() {
                    packages.push(registry::query::get_package(store, &p.name)?);
                }
                let bundles = (0..store.list_order().len())
                    .filter_map(|i| registry::query::list_bundle_at(store, i))
                    .map(|b| b.map(for_resolution))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((packages, bundles))
            }
        }
    }
}

/// Properties resolution never reads, and the bulk of a catalog: a bundle's manifests and its CSV's metadata
/// (description, examples, icon). Install reads them per bundle (`BundleSource::bundle`).
pub const BULKY_PROPERTIES: [&str; 2] = ["olm.bundle.object", "olm.csv.metadata"];

/// `b` cut to what a snapshot and the deprecation index read: no CSV JSON, objects or [`BULKY_PROPERTIES`], so a
/// 10,000-bundle catalog's snapshot is built without its bodies in memory.
pub fn for_resolution(mut b: api::Bundle) -> api::Bundle {
    b.csv_json = String::new();
    b.object = Vec::new();
    b.properties
        .retain(|p| !BULKY_PROPERTIES.contains(&p.r#type.as_str()));
    b
}

/// What one CatalogSource currently serves.
#[derive(Clone)]
pub struct CatalogView {
    pub snapshot: Option<Arc<CatalogSnapshot>>,
    /// The catalog's `olm.deprecations` notices for the content in `snapshot`.
    pub deprecations: Arc<crate::deprecation::DeprecationIndex>,
    pub source: Option<BundleSource>,
    pub healthy: bool,
    /// Why it is not healthy (status message), empty when healthy.
    pub problem: String,
}

/// Every catalog's view, keyed by CatalogSource.
#[derive(Default)]
pub struct Catalogs {
    views: RwLock<HashMap<CatalogKey, CatalogView>>,
}

impl Catalogs {
    pub fn publish(&self, key: CatalogKey, view: CatalogView) {
        self.views
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, view);
    }

    pub fn remove(&self, key: &CatalogKey) {
        self.views
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    pub fn get(&self, key: &CatalogKey) -> Option<CatalogView> {
        self.views
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Snapshots of the healthy catalogs in `namespaces`.
    pub fn snapshots_in(&self, namespaces: &[&str]) -> Vec<Arc<CatalogSnapshot>> {
        let views = self.views.read().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<Arc<CatalogSnapshot>> = views
            .iter()
            .filter(|(k, _)| namespaces.contains(&k.namespace.as_str()))
            .filter_map(|(_, v)| v.snapshot.clone())
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn property(type_: &str) -> api::Property {
        api::Property {
            r#type: type_.into(),
            value: "{}".into(),
        }
    }

    #[test]
    fn a_bundle_for_resolution_keeps_what_the_resolver_reads_and_drops_its_bodies() {
        let b = api::Bundle {
            csv_name: "a.v1".into(),
            csv_json: "{\"kind\":\"ClusterServiceVersion\"}".into(),
            object: vec!["{}".into()],
            properties: [
                "olm.package",
                "olm.csv.metadata",
                "olm.gvk",
                "olm.bundle.object",
                "olm.deprecated",
            ]
            .into_iter()
            .map(property)
            .collect(),
            ..Default::default()
        };
        let cut = for_resolution(b);
        assert_eq!(cut.csv_name, "a.v1");
        assert!(cut.csv_json.is_empty() && cut.object.is_empty());
        let kept: Vec<_> = cut.properties.iter().map(|p| p.r#type.as_str()).collect();
        assert_eq!(kept, ["olm.package", "olm.gvk", "olm.deprecated"]);
    }
}
