//! Build a [`CatalogSnapshot`] from a catalog the `catalog` crate loaded (file-based catalogs through
//! `catalog::fbc`, which owns reading and structural checks). Pure: no I/O.
//!
//! Each channel entry becomes one [`BundleEntry`] (the registry serves one `api.Bundle` per bundle and
//! channel). Bulky properties (`olm.bundle.object`, `olm.csv.metadata`) are dropped. FBC `olm.deprecations`
//! do not set [`BundleEntry::deprecated`] (OLM v0 only reports them; see the README's known gaps).

use std::collections::HashMap;

use catalog::Catalog;
use semver::Version;
use serde_json::Value;

use crate::model::{BundleEntry, CatalogKey, CatalogSnapshot, PackageInfo, Property};

/// Why a loaded catalog cannot become a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("bundle {bundle} has no olm.package property with a version")]
    NoVersion { bundle: String },
    #[error("bundle {bundle} has an invalid version `{version}`: {reason}")]
    BadVersion {
        bundle: String,
        version: String,
        reason: String,
    },
    #[error(
        "channel {channel} of package {package} lists bundle {bundle}, which is not in the catalog"
    )]
    MissingBundle {
        package: String,
        channel: String,
        bundle: String,
    },
}

/// The version of every bundle, from its first `olm.package` property.
fn versions(catalog: &Catalog) -> Result<HashMap<(&str, &str), Version>, SnapshotError> {
    let mut out = HashMap::new();
    for pkg in catalog.packages.values() {
        for b in pkg.bundles.values() {
            let text = b
                .properties
                .iter()
                .find(|p| p.type_ == "olm.package")
                .and_then(|p| p.value.get("version"))
                .and_then(Value::as_str)
                .ok_or_else(|| SnapshotError::NoVersion {
                    bundle: b.name.clone(),
                })?;
            let version = Version::parse(text).map_err(|e| SnapshotError::BadVersion {
                bundle: b.name.clone(),
                version: text.to_owned(),
                reason: e.to_string(),
            })?;
            out.insert((pkg.name.as_str(), b.name.as_str()), version);
        }
    }
    Ok(out)
}

/// Convert a loaded catalog into a snapshot of catalog `key`: packages by name, then each package's channels
/// by name, each channel's entries in catalog order.
pub fn snapshot(
    key: CatalogKey,
    priority: i32,
    catalog: &Catalog,
) -> Result<CatalogSnapshot, SnapshotError> {
    let versions = versions(catalog)?;
    let mut bundles = Vec::new();
    for pkg in catalog.packages.values() {
        for ch in pkg.channels.values() {
            for e in &ch.entries {
                let (Some(b), Some(version)) = (
                    pkg.bundles.get(&e.name),
                    versions.get(&(pkg.name.as_str(), e.name.as_str())),
                ) else {
                    return Err(SnapshotError::MissingBundle {
                        package: pkg.name.clone(),
                        channel: ch.name.clone(),
                        bundle: e.name.clone(),
                    });
                };
                bundles.push(BundleEntry {
                    name: e.name.clone(),
                    package: pkg.name.clone(),
                    channel: ch.name.clone(),
                    version: version.clone(),
                    replaces: e.replaces.clone().filter(|r| !r.is_empty()),
                    skips: e.skips.clone(),
                    skip_range: e.skip_range.clone().filter(|r| !r.is_empty()),
                    provided_apis: Vec::new(),
                    required_apis: Vec::new(),
                    properties: b
                        .properties
                        .iter()
                        .filter(|p| {
                            !matches!(p.type_.as_str(), "olm.bundle.object" | "olm.csv.metadata")
                        })
                        .map(|p| Property {
                            type_: p.type_.clone(),
                            value: p.value.clone(),
                        })
                        .collect(),
                    bundle_path: b.image.clone(),
                    deprecated: false,
                });
            }
        }
    }
    let packages = catalog
        .packages
        .values()
        .map(|p| PackageInfo {
            name: p.name.clone(),
            default_channel: p.default_channel.clone(),
        })
        .collect();
    Ok(CatalogSnapshot {
        key,
        priority,
        packages,
        bundles,
    })
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "test inputs are literals; a panic is a test failure"
)]
mod tests {
    use super::*;
    use catalog::{documents, fbc};
    use serde_json::json;

    /// Reads the documents with the catalog crate's FBC reader, as every caller does.
    fn load(values: Vec<Value>) -> Catalog {
        let docs = documents::with_origins(std::path::Path::new("catalog.yaml"), values);
        fbc::from_documents(docs).unwrap()
    }

    #[test]
    fn channel_entries_become_bundle_entries_with_their_bundles_properties() {
        let catalog = load(vec![
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "name": "stable", "package": "a", "entries": [
                {"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1", "skipRange": "<1.0.0"}]}),
            json!({"schema": "olm.bundle", "name": "a.v1", "package": "a", "image": "img:1", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}]}),
            json!({"schema": "olm.bundle", "name": "a.v2", "package": "a", "image": "img:2", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "2.0.0"}},
                {"type": "olm.csv.metadata", "value": {"big": true}}]}),
        ]);
        let s = snapshot(CatalogKey::new("c", "ns"), 3, &catalog).unwrap();
        assert_eq!(
            s.packages,
            vec![PackageInfo {
                name: "a".into(),
                default_channel: "stable".into()
            }]
        );
        let v2 = &s.bundles[1];
        assert_eq!(
            (
                v2.name.as_str(),
                v2.replaces.as_deref(),
                v2.skip_range.as_deref()
            ),
            ("a.v2", Some("a.v1"), Some("<1.0.0"))
        );
        assert_eq!(v2.version, Version::new(2, 0, 0));
        assert_eq!(v2.bundle_path, "img:2");
        assert_eq!(v2.properties.len(), 1, "olm.csv.metadata is dropped");
    }

    #[test]
    fn a_channel_naming_an_unknown_bundle_is_an_error() {
        let catalog = load(vec![
            json!({"schema": "olm.package", "name": "a"}),
            json!({"schema": "olm.channel", "name": "stable", "package": "a", "entries": [{"name": "a.v9"}]}),
        ]);
        assert_eq!(
            snapshot(CatalogKey::new("c", "ns"), 0, &catalog),
            Err(SnapshotError::MissingBundle {
                package: "a".into(),
                channel: "stable".into(),
                bundle: "a.v9".into()
            })
        );
    }
}
