//! InstallPlan steps OLM v0 wrote for an image bundle: OLM v0 unpacks the image into a ConfigMap (a Job running
//! `opm alpha bundle extract`) and each step's `manifest` is a reference to that ConfigMap, not the object:
//!
//! ```json
//! {"kind":"ConfigMap","name":"<hash>","namespace":"olm","catalogSourceName":"c","catalogSourceNamespace":"olm",
//!  "replaces":"a.v1","properties":"{\"properties\":[…]}"}
//! ```
//!
//! A plan OLM v0 left (pending Manual approval, or mid-execution) is executed by olm-rs after a takeover: the
//! steps are rebuilt from the ConfigMap as OLM's `manifestResolver` does (the bundle's objects, the CSV's
//! `replaces` and properties from the reference, the RBAC of its install strategy) and each reference is replaced
//! by the object whose kind, group, version and name match its step. Pure, but for the ConfigMap, which the caller
//! reads.

use crate::bundle_content::Source;
use crate::steps;
use base64::Engine;
use flate2::read::GzDecoder;
use k8s_openapi::api::core::v1::ConfigMap;
use messages::crd::install_plan::Step;
use registry::api;
use resolver::{BundleStep, CatalogKey};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;

/// The annotation opm sets when the ConfigMap's files are gzipped and base64-encoded into `binaryData`.
const ENCODING_ANNOTATION: &str = "olm.contentEncoding";
const GZIP_BASE64: &str = "gzip+base64";
/// The most one unpacked file may grow to (a ConfigMap holds at most 1 MiB compressed).
const MAX_FILE_BYTES: u64 = 32 << 20;

/// OLM v0's `UnpackedBundleReference`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnpackedRef {
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub catalog_source_name: String,
    pub catalog_source_namespace: String,
    #[serde(default)]
    pub replaces: String,
    #[serde(default)]
    pub properties: String,
}

impl UnpackedRef {
    /// The reference a step's manifest holds, by OLM's own test (`refForStep`): kind `ConfigMap` and a top-level
    /// name, namespace and catalog source (an object has its name under `metadata`).
    pub fn parse(manifest: &str) -> Option<Self> {
        let r: Self = serde_json::from_str(manifest).ok()?;
        let complete = r.kind == "ConfigMap"
            && !r.name.is_empty()
            && !r.namespace.is_empty()
            && !r.catalog_source_name.is_empty()
            && !r.catalog_source_namespace.is_empty();
        complete.then_some(r)
    }
}

/// The bundle OLM's `configmap.BundleLoader` reads from an unpacked ConfigMap: one object per file (sorted by
/// file name, JSON), files that are no Kubernetes object skipped as OLM skips them, the CSV found among them, and
/// the reference's properties.
pub fn bundle(cm: &ConfigMap, r: &UnpackedRef, csv_name: &str) -> Result<api::Bundle, String> {
    let files = files(cm).map_err(|e| format!("ConfigMap {}/{}: {e}", r.namespace, r.name))?;
    let mut out = api::Bundle {
        csv_name: csv_name.to_string(),
        ..Default::default()
    };
    for text in files.values() {
        let Ok(docs) = catalog::documents::parse_documents(text) else {
            continue;
        };
        let Some(obj) = docs.into_iter().next().filter(|d| d.get("kind").is_some()) else {
            continue;
        };
        if obj["kind"] == "ClusterServiceVersion" {
            out.csv_json = obj.to_string();
        }
        out.object.push(obj.to_string());
    }
    if out.csv_json.is_empty() {
        return Err(format!(
            "ConfigMap {}/{} (OLM v0's unpacked bundle {csv_name}) holds no ClusterServiceVersion",
            r.namespace, r.name
        ));
    }
    if !r.properties.is_empty() {
        out.properties = properties(&r.properties).map_err(|e| {
            format!("bundle {csv_name}: the properties of its unpacked-bundle reference: {e}")
        })?;
    }
    Ok(out)
}

/// The ConfigMap's files by name: `data`, or `binaryData` gunzipped when opm marked it `gzip+base64`.
fn files(cm: &ConfigMap) -> Result<BTreeMap<String, String>, String> {
    let gzipped = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ENCODING_ANNOTATION))
        .is_some_and(|v| v == GZIP_BASE64);
    if !gzipped {
        return Ok(cm.data.clone().unwrap_or_default());
    }
    let mut out = BTreeMap::new();
    for (name, content) in cm.binary_data.iter().flatten() {
        let compressed = base64::engine::general_purpose::STANDARD
            .decode(&content.0)
            .map_err(|e| format!("binaryData {name}: not base64: {e}"))?;
        let mut text = String::new();
        GzDecoder::new(compressed.as_slice())
            .take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("binaryData {name}: not gzipped text: {e}"))?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "binaryData {name} unpacks past {MAX_FILE_BYTES} bytes"
            ));
        }
        out.insert(name.clone(), text);
    }
    Ok(out)
}

#[derive(Deserialize)]
struct PropertiesDocument {
    #[serde(default)]
    properties: Vec<PropertyEntry>,
}

#[derive(Deserialize)]
struct PropertyEntry {
    #[serde(rename = "type")]
    type_: String,
    value: serde_json::Value,
}

fn properties(document: &str) -> Result<Vec<api::Property>, serde_json::Error> {
    let doc: PropertiesDocument = serde_json::from_str(document)?;
    Ok(doc
        .properties
        .into_iter()
        .map(|p| api::Property {
            r#type: p.type_,
            value: p.value.to_string(),
        })
        .collect())
}

/// Kinds whose objects the plan generates from the CSV's install strategy, named by OLM v0 with a hash olm-rs
/// does not reproduce (`rbac_names` follows OLM's shape, not its Go hash).
const GENERATED_KINDS: [&str; 4] = ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"];

/// The objects `steps` (one bundle's steps, in plan order) stand for, from the steps OLM v0 would build from
/// `bundle` in `namespace`. A step is matched by kind, group, version and name; generated RBAC, whose names
/// carry OLM's hash, is matched by its position among the steps of its kind and takes the plan's name (a
/// binding's `roleRef` follows its role).
pub fn objects_for(
    steps: &[&Step],
    r: &UnpackedRef,
    bundle: &api::Bundle,
    namespace: &str,
) -> Result<Vec<String>, String> {
    let Some(first) = steps.first() else {
        return Ok(Vec::new());
    };
    let chosen = BundleStep {
        name: first.resolving.clone(),
        package: String::new(),
        channel: String::new(),
        version: String::new(),
        catalog: CatalogKey::new(&r.catalog_source_name, &r.catalog_source_namespace),
        bundle_path: String::new(),
        replaces: (!r.replaces.is_empty()).then(|| r.replaces.clone()),
        subscription: String::new(),
    };
    let source = Source {
        image: None,
        digest: None,
        files: Vec::new(),
    };
    let built = steps::bundle_steps(bundle, &chosen, &source, namespace, &BTreeMap::new())
        .map_err(|e| e.to_string())?;
    let renamed = generated_names(steps, &built);
    steps
        .iter()
        .map(|step| {
            let want = &step.resource;
            let found = built.iter().find(|s| {
                let name = renamed.get(&(s.resource.kind.clone(), s.resource.name.clone()));
                name.unwrap_or(&s.resource.name) == &want.name
                    && s.resource.kind == want.kind
                    && s.resource.group == want.group
                    && s.resource.version == want.version
            });
            let Some(found) = found else {
                return Err(format!(
                    "ConfigMap {}/{} (OLM v0's unpacked bundle {}) holds no {} {} for its step",
                    r.namespace, r.name, step.resolving, want.kind, want.name
                ));
            };
            if !GENERATED_KINDS.contains(&want.kind.as_str()) {
                return Ok(found.resource.manifest.clone());
            }
            let mut obj: serde_json::Value = serde_json::from_str(&found.resource.manifest)
                .map_err(|e| format!("{} {}: {e}", want.kind, want.name))?;
            obj["metadata"]["name"] = serde_json::Value::String(want.name.clone());
            let role_kind = if want.kind == "RoleBinding" {
                "Role"
            } else {
                "ClusterRole"
            };
            if let Some(role) = obj["roleRef"]["name"].as_str()
                && let Some(plan_role) = renamed.get(&(role_kind.to_string(), role.to_string()))
            {
                obj["roleRef"]["name"] = serde_json::Value::String(plan_role.clone());
            }
            Ok(obj.to_string())
        })
        .collect()
}

/// (kind, olm-rs's name) → the plan's name, for the generated RBAC kinds whose steps pair up one to one in
/// order.
fn generated_names(steps: &[&Step], built: &[Step]) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for kind in GENERATED_KINDS {
        let planned: Vec<&str> = steps
            .iter()
            .filter(|s| s.resource.kind == kind)
            .map(|s| s.resource.name.as_str())
            .collect();
        let ours: Vec<&str> = built
            .iter()
            .filter(|s| s.resource.kind == kind)
            .map(|s| s.resource.name.as_str())
            .collect();
        if planned.len() == ours.len() {
            for (o, p) in ours.into_iter().zip(planned) {
                out.insert((kind.to_string(), o.to_string()), p.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "unpacked_configmap_tests.rs"]
mod tests;
