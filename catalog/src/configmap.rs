//! ConfigMap catalogs (OLM's `configmap`/`internal` CatalogSource type): the keys
//! `customResourceDefinitions`, `clusterServiceVersions` and `packages` each hold a YAML
//! (or JSON) list as a string. They are the package-manifest format in another wrapper.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::csv;
use crate::documents::parse_documents;
use crate::error::{LoadError, Result};
use crate::manifests::{CsvBundle, PackageManifest, build_package, owned_crds};
use crate::model::Catalog;

pub const CRDS_KEY: &str = "customResourceDefinitions";
pub const CSVS_KEY: &str = "clusterServiceVersions";
pub const PACKAGES_KEY: &str = "packages";

fn list_under(data: &BTreeMap<String, String>, key: &str) -> Result<Vec<Value>> {
    let Some(text) = data.get(key) else {
        return Ok(Vec::new());
    };
    let err = |message: String| LoadError::ConfigMap {
        key: key.to_string(),
        message,
    };
    let docs = parse_documents(text).map_err(err)?;
    let mut out = Vec::new();
    for d in docs {
        match d {
            Value::Array(items) => out.extend(items),
            Value::Null => {}
            other => return Err(err(format!("expected a list, found {}", kind_name(&other)))),
        }
    }
    Ok(out)
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::String(_) => "a string",
        _ => "a scalar",
    }
}

impl Catalog {
    /// Builds a catalog from a ConfigMap's `data`.
    pub fn from_configmap_data(data: &BTreeMap<String, String>) -> Result<Catalog> {
        let crds = list_under(data, CRDS_KEY)?;
        let csv_values = list_under(data, CSVS_KEY)?;
        let packages = list_under(data, PACKAGES_KEY)?;
        let mut csvs = BTreeMap::new();
        for c in csv_values {
            let name = csv::facts(&c)
                .map_err(|message| LoadError::ConfigMap {
                    key: CSVS_KEY.into(),
                    message,
                })?
                .name;
            let mut objects = vec![c.clone()];
            objects.extend(owned_crds(&c, &crds).into_iter().cloned());
            csvs.insert(name, CsvBundle { csv: c, objects });
        }
        let mut catalog = Catalog::default();
        for p in packages {
            let manifest = PackageManifest::deserialize(&p).map_err(|e| LoadError::ConfigMap {
                key: PACKAGES_KEY.into(),
                message: format!("invalid package manifest: {e}"),
            })?;
            let pkg = build_package(&manifest, &csvs).map_err(|message| LoadError::ConfigMap {
                key: PACKAGES_KEY.into(),
                message: format!("package {:?}: {message}", manifest.package_name),
            })?;
            if catalog.packages.insert(pkg.name.clone(), pkg).is_some() {
                return Err(LoadError::DuplicatePackage(manifest.package_name));
            }
        }
        Ok(catalog)
    }
}

/// True when a document is a ConfigMap.
pub fn is_configmap(v: &Value) -> bool {
    csv::kind_of(v) == "ConfigMap"
}

/// Loads a ConfigMap manifest file (YAML/JSON) into a catalog.
pub fn load_file(path: &Path) -> Result<Catalog> {
    let docs = crate::documents::read_documents(path)?;
    let cm = docs
        .into_iter()
        .find(|d| is_configmap(&d.value))
        .ok_or_else(|| LoadError::Manifest {
            path: path.to_path_buf(),
            message: "no ConfigMap document found".into(),
        })?;
    let data: BTreeMap<String, String> = cm
        .value
        .get("data")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Catalog::from_configmap_data(&data)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;

    #[test]
    fn a_configmap_with_one_csv_builds_one_package() {
        let data = BTreeMap::from([
            (CSVS_KEY.to_string(), "- kind: ClusterServiceVersion\n  metadata: {name: a.v1}\n  spec: {version: 1.0.0}\n".to_string()),
            (PACKAGES_KEY.to_string(), "- packageName: a\n  channels: [{name: alpha, currentCSV: a.v1}]\n".to_string()),
        ]);
        let c = Catalog::from_configmap_data(&data).unwrap();
        let pkg = &c.packages["a"];
        assert_eq!(pkg.default_channel, "alpha");
        assert_eq!(
            pkg.channels["alpha"].head().map(|e| e.name.as_str()),
            Some("a.v1")
        );
    }

    #[test]
    fn a_packages_key_that_is_not_a_list_is_an_error() {
        let data = BTreeMap::from([(PACKAGES_KEY.to_string(), "packageName: a".to_string())]);
        let err = Catalog::from_configmap_data(&data).unwrap_err().to_string();
        assert!(
            err.contains("packages") && err.contains("expected a list"),
            "{err}"
        );
    }
}
