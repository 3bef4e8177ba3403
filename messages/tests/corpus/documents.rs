//! Reading every document of the catalog corpus: multi-document YAML, concatenated JSON, and
//! the documents nested inside others (ConfigMap catalogs, FBC `olm.bundle.object` properties).

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;

/// Where a document came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// A top-level document of a YAML/JSON manifest file (bundle or package-manifest form).
    File,
    /// An entry of a ConfigMap catalog's `data.clusterServiceVersions` / `customResourceDefinitions`.
    ConfigMapCatalog,
    /// The base64 JSON of an FBC `olm.bundle.object` property.
    FbcBundleObject,
}

/// One parsed document and its address.
#[derive(Debug, Clone)]
pub struct Document {
    pub file: PathBuf,
    /// Document index in the file, plus the nested location for nested documents.
    pub index: String,
    pub origin: Origin,
    pub value: Value,
}

/// YAML as Go reads it: `sigs.k8s.io/yaml` (go-yaml v2, non-strict) keeps the last of duplicate
/// keys (a few corpus files repeat `minKubeVersion`, `path`, `type` or `packageName`); and no
/// size budget, since FBC files carry megabytes of base64.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: None,
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
    }
}

/// Parses a file into its top-level documents (YAML multi-doc or a stream of JSON values).
pub fn parse_file(path: &Path, text: &str) -> Result<Vec<Value>, String> {
    let is_json = path.extension().is_some_and(|e| e == "json");
    if is_json {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("JSON: {e}"))
    } else {
        let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, yaml_options())
            .map_err(|e| format!("YAML: {e}"))?;
        Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
    }
}

/// The documents inside `doc` (recursively none deeper than one level), each with a location.
pub fn nested(doc: &Value) -> Vec<(String, Origin, Result<Value, String>)> {
    let mut out = Vec::new();
    if doc.get("kind").and_then(Value::as_str) == Some("ConfigMap") {
        for key in ["clusterServiceVersions", "customResourceDefinitions"] {
            let Some(text) = doc.pointer(&format!("/data/{key}")).and_then(Value::as_str) else {
                continue;
            };
            match serde_saphyr::from_str_with_options::<Vec<Value>>(text, yaml_options()) {
                Ok(items) => {
                    for (i, item) in items.into_iter().enumerate() {
                        out.push((
                            format!("data.{key}[{i}]"),
                            Origin::ConfigMapCatalog,
                            Ok(item),
                        ));
                    }
                }
                Err(e) => out.push((
                    format!("data.{key}"),
                    Origin::ConfigMapCatalog,
                    Err(format!("YAML: {e}")),
                )),
            }
        }
    }
    if doc.get("schema").and_then(Value::as_str) == Some("olm.bundle") {
        let properties = doc
            .get("properties")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for (i, property) in properties.enumerate() {
            if property.get("type").and_then(Value::as_str) != Some("olm.bundle.object") {
                continue;
            }
            let location = format!("properties[{i}]");
            let decoded = property
                .pointer("/value/data")
                .and_then(Value::as_str)
                .ok_or_else(|| "olm.bundle.object without value.data".to_owned())
                .and_then(|data| {
                    base64::engine::general_purpose::STANDARD
                        .decode(data)
                        .map_err(|e| format!("base64: {e}"))
                })
                .and_then(|bytes| {
                    serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("JSON: {e}"))
                });
            out.push((location, Origin::FbcBundleObject, decoded));
        }
    }
    out
}
