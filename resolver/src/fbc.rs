//! Build a [`CatalogSnapshot`] from file-based-catalog documents (`olm.package`, `olm.channel`,
//! `olm.bundle`), already parsed into JSON values. Pure: reading and YAML/JSON decoding are the caller's.
//!
//! Each channel entry becomes one [`BundleEntry`] (the registry serves one `api.Bundle` per bundle and
//! channel). Bulky properties (`olm.bundle.object`, `olm.csv.metadata`) are dropped.

use std::collections::HashMap;

use semver::Version;
use serde::Deserialize;
use serde_json::Value;

use crate::model::{BundleEntry, CatalogKey, CatalogSnapshot, PackageInfo, Property};

/// Why an FBC document set cannot become a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FbcError {
    #[error("{schema} document #{index} is unreadable: {reason}")]
    Document {
        schema: String,
        index: usize,
        reason: String,
    },
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageDoc {
    name: String,
    #[serde(default)]
    default_channel: String,
}

#[derive(Deserialize)]
struct ChannelDoc {
    name: String,
    package: String,
    #[serde(default)]
    entries: Vec<EntryDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryDoc {
    name: String,
    #[serde(default)]
    replaces: Option<String>,
    #[serde(default)]
    skips: Vec<String>,
    #[serde(default)]
    skip_range: Option<String>,
}

#[derive(Deserialize)]
struct BundleDoc {
    name: String,
    package: String,
    #[serde(default)]
    image: String,
    #[serde(default)]
    properties: Vec<Property>,
}

fn doc<T: for<'de> Deserialize<'de>>(v: &Value, schema: &str, index: usize) -> Result<T, FbcError> {
    T::deserialize(v).map_err(|e| FbcError::Document {
        schema: schema.to_owned(),
        index,
        reason: e.to_string(),
    })
}

/// Convert FBC documents into a snapshot of catalog `key`.
pub fn snapshot(
    key: CatalogKey,
    priority: i32,
    docs: &[Value],
) -> Result<CatalogSnapshot, FbcError> {
    let mut packages = Vec::new();
    let mut channels = Vec::new();
    let mut bundles: HashMap<(String, String), BundleDoc> = HashMap::new();
    for (index, v) in docs.iter().enumerate() {
        match v.get("schema").and_then(Value::as_str) {
            Some("olm.package") => {
                let p: PackageDoc = doc(v, "olm.package", index)?;
                packages.push(PackageInfo {
                    name: p.name,
                    default_channel: p.default_channel,
                });
            }
            Some("olm.channel") => channels.push(doc::<ChannelDoc>(v, "olm.channel", index)?),
            Some("olm.bundle") => {
                let b: BundleDoc = doc(v, "olm.bundle", index)?;
                bundles.insert((b.package.clone(), b.name.clone()), b);
            }
            _ => {}
        }
    }
    let mut versions: HashMap<(String, String), Version> = HashMap::new();
    for (k, b) in &bundles {
        let text = b
            .properties
            .iter()
            .find(|p| p.type_ == "olm.package")
            .and_then(|p| p.value.get("version"))
            .and_then(Value::as_str)
            .ok_or_else(|| FbcError::NoVersion {
                bundle: b.name.clone(),
            })?;
        let version = Version::parse(text).map_err(|e| FbcError::BadVersion {
            bundle: b.name.clone(),
            version: text.to_owned(),
            reason: e.to_string(),
        })?;
        versions.insert(k.clone(), version);
    }
    channels.sort_by(|a, b| (&a.package, &a.name).cmp(&(&b.package, &b.name)));
    let mut out = Vec::new();
    for ch in &channels {
        for e in &ch.entries {
            let k = (ch.package.clone(), e.name.clone());
            let (Some(b), Some(version)) = (bundles.get(&k), versions.get(&k)) else {
                return Err(FbcError::MissingBundle {
                    package: ch.package.clone(),
                    channel: ch.name.clone(),
                    bundle: e.name.clone(),
                });
            };
            out.push(BundleEntry {
                name: e.name.clone(),
                package: ch.package.clone(),
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
                    .cloned()
                    .collect(),
                bundle_path: b.image.clone(),
                deprecated: false,
            });
        }
    }
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(CatalogSnapshot {
        key,
        priority,
        packages,
        bundles: out,
    })
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "test inputs are literals; a panic is a test failure"
)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn channel_entries_become_bundle_entries_with_their_bundles_properties() {
        let docs = vec![
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "name": "stable", "package": "a", "entries": [
                {"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1", "skipRange": "<1.0.0"}]}),
            json!({"schema": "olm.bundle", "name": "a.v1", "package": "a", "image": "img:1", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}]}),
            json!({"schema": "olm.bundle", "name": "a.v2", "package": "a", "image": "img:2", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "2.0.0"}},
                {"type": "olm.csv.metadata", "value": {"big": true}}]}),
        ];
        let s = snapshot(CatalogKey::new("c", "ns"), 3, &docs).unwrap();
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
        assert_eq!(v2.properties.len(), 1, "olm.csv.metadata is dropped");
    }

    #[test]
    fn a_channel_naming_an_unknown_bundle_is_an_error() {
        let docs = vec![
            json!({"schema": "olm.channel", "name": "stable", "package": "a", "entries": [{"name": "a.v9"}]}),
        ];
        assert_eq!(
            snapshot(CatalogKey::new("c", "ns"), 0, &docs),
            Err(FbcError::MissingBundle {
                package: "a".into(),
                channel: "stable".into(),
                bundle: "a.v9".into()
            })
        );
    }
}
