//! Reading one catalog through the registry gRPC API (OLM's `refreshCache`): `ListBundles` for the channel
//! entries, `ListPackages`, then per package `GetPackage` and `GetBundleForChannel` for each channel's head,
//! [`CONCURRENCY`] packages at a time. A package whose RPCs fail with an answer is elided (logged); a registry
//! that stops answering (unavailable, deadline) fails the whole read, so a half-read catalog never replaces a
//! good one. [`from_store`] reads a catalog held in memory (a ConfigMap catalog) through the same queries.

use crate::manifest::{self, CatalogInfo, ChannelHead, EntriesByChannel};
use crate::types::PackageManifest;
use futures::StreamExt;
use registry::client::{ClientError, RegistryClient};
use std::collections::BTreeMap;
use tonic::Code;

pub const CONCURRENCY: usize = 8;

fn unreachable(e: &ClientError) -> bool {
    match e.status() {
        Some(s) => matches!(
            s.code(),
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled
        ),
        None => true,
    }
}

async fn entries(
    client: &RegistryClient,
) -> Result<BTreeMap<String, EntriesByChannel>, ClientError> {
    // Keep only what the entries need: bundles can carry their whole manifests.
    let slim: Vec<registry::api::Bundle> = client.list_bundles_mapped(slim).await?;
    Ok(manifest::entries_by_package(&slim))
}

async fn one(
    client: &RegistryClient,
    catalog: &CatalogInfo,
    name: String,
    entries: &BTreeMap<String, EntriesByChannel>,
) -> Result<Option<PackageManifest>, ClientError> {
    let package = match client.get_package(&name).await {
        Ok(p) => p,
        Err(e) if unreachable(&e) => return Err(e),
        Err(e) => {
            tracing::warn!(catalog = %catalog.name, package = %name, error = &e as &dyn std::error::Error, "eliding package: GetPackage failed");
            return Ok(None);
        }
    };
    let mut heads = Vec::new();
    for (channel, deprecation) in manifest::channels_sorted(&package) {
        let csv_json = match client.get_bundle_for_channel(&package.name, &channel).await {
            Ok(b) => Ok(b.csv_json),
            Err(e) if unreachable(&e) => return Err(e),
            Err(e) => Err(e.to_string()),
        };
        heads.push(ChannelHead {
            name: channel,
            deprecation,
            csv_json,
        });
    }
    match manifest::build(catalog, &package, heads, entries.get(&package.name)) {
        Ok(m) => Ok(Some(m)),
        Err(e) => {
            tracing::warn!(catalog = %catalog.name, package = %name, error = &e as &dyn std::error::Error, "eliding package");
            Ok(None)
        }
    }
}

/// Every package of the catalog, as PackageManifests in the catalog's namespace.
pub async fn load(
    client: &RegistryClient,
    catalog: &CatalogInfo,
) -> Result<Vec<PackageManifest>, ClientError> {
    let entries = entries(client).await?;
    let names = client.list_packages().await?;
    let results: Vec<_> = futures::stream::iter(names)
        .map(|name| one(client, catalog, name, &entries))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.extend(r?);
    }
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(out)
}

fn slim(b: registry::api::Bundle) -> registry::api::Bundle {
    registry::api::Bundle {
        csv_name: b.csv_name,
        package_name: b.package_name,
        channel_name: b.channel_name,
        version: b.version,
        properties: b
            .properties
            .into_iter()
            .filter(|p| p.r#type == "olm.deprecated")
            .collect(),
        deprecation: b.deprecation,
        ..Default::default()
    }
}

/// Every package of a catalog held in memory (a `configmap` CatalogSource: olm-rs runs no registry pod for it),
/// through the same queries the registry server answers `ListBundles`, `ListPackages`, `GetPackage` and
/// `GetBundleForChannel` with.
pub fn from_store(store: &registry::store::Store, catalog: &CatalogInfo) -> Vec<PackageManifest> {
    use registry::query;
    let bundles: Vec<_> = (0..)
        .map_while(|i| query::list_bundle_at(store, i))
        .filter_map(Result::ok)
        .map(slim)
        .collect();
    let entries = manifest::entries_by_package(&bundles);
    let mut out = Vec::new();
    for name in query::list_packages(store) {
        let Ok(package) = query::get_package(store, &name.name) else {
            continue;
        };
        let heads = manifest::channels_sorted(&package)
            .into_iter()
            .map(|(channel, deprecation)| ChannelHead {
                csv_json: query::get_bundle_for_channel(store, &package.name, &channel)
                    .map(|b| b.csv_json)
                    .map_err(|e| e.to_string()),
                name: channel,
                deprecation,
            })
            .collect();
        match manifest::build(catalog, &package, heads, entries.get(&package.name)) {
            Ok(m) => out.push(m),
            Err(e) => {
                tracing::warn!(catalog = %catalog.name, package = %name.name, error = &e as &dyn std::error::Error, "eliding package")
            }
        }
    }
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}
