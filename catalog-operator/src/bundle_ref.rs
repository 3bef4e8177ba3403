//! InstallPlan steps that refer to an object of a bundle image instead of carrying it, as OLM keeps image-bundle
//! manifests out of its plans: etcd stores about 1.5 MiB per object, and one CRD can be 1 MiB. The step's
//! `manifest` is a small JSON document naming the image by digest, the file and the object's position:
//!
//! ```json
//! {"bundleImage":"quay.io/a/b@sha256:…","file":"manifests/big.crd.yaml","object":2}
//! ```
//!
//! A CSV's reference also holds what the plan changes in it (`replaces`, the annotations it adds). At execution
//! the object is read again from the image (the digest cache, or a pull by digest: the content cannot differ)
//! with the same Go-rule decoding, and checked against the step's kind and name. Pure, but for the image's
//! content, which the caller supplies.

use crate::bundle_content::{self, Source};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleObjectRef {
    /// The bundle image, pinned by digest.
    pub bundle_image: String,
    /// The file the object was read from (for people; `object` is what finds it).
    pub file: String,
    /// Its position among the bundle's objects.
    pub object: usize,
    /// For the CSV: the `spec.replaces` the resolver chose (`None`: a fresh install, the field removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// For the CSV: the annotations the plan adds (properties, trace context).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl BundleObjectRef {
    pub fn to_manifest(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The reference a step's manifest holds, if it holds one (an object has a `kind`; a reference has none).
    pub fn parse(manifest: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(manifest).ok()?;
        if v.get("kind").is_some() || v.get("bundleImage").is_none() {
            return None;
        }
        serde_json::from_value(v).ok()
    }
}

/// `image` pinned by `digest` (kept as it is when it already names one).
pub fn pinned_image(image: &str, digest: &str) -> String {
    if oci::publish::pinned_digest(image).is_some() {
        image.to_string()
    } else {
        oci::publish::pinned(image, digest)
    }
}

/// The CSV as the plan creates it: in `namespace`, without server fields or status, `spec.replaces` as the resolver
/// chose, and `annotations` added.
pub fn adjust_csv(
    csv: &mut Value,
    namespace: &str,
    replaces: Option<&str>,
    annotations: &BTreeMap<String, String>,
) {
    let Some(obj) = csv.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert("namespace".into(), Value::String(namespace.to_string()));
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            meta.remove(k);
        }
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(ann) = ann.as_object_mut() {
            for (k, v) in annotations {
                ann.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
    obj.remove("status");
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        match replaces {
            Some(r) => spec.insert("replaces".into(), Value::String(r.to_string())),
            None => spec.remove("replaces"),
        };
    }
}

/// What a step refers to, read again from the bundle image's `objects` (JSON texts, in the order the plan saw
/// them) and checked against the step's `kind` and `name`.
pub fn resolve(
    r: &BundleObjectRef,
    bundle: &str,
    objects: &[String],
    files: &[String],
    kind: &str,
    name: &str,
    namespace: &str,
) -> Result<Value, String> {
    let text = objects.get(r.object).ok_or_else(|| {
        format!(
            "bundle image {} has {} objects; the step for {kind} {name} names object {}",
            r.bundle_image,
            objects.len(),
            r.object + 1
        )
    })?;
    let source = Source {
        image: Some(r.bundle_image.clone()),
        digest: None,
        files: files.to_vec(),
    };
    let mut obj =
        bundle_content::read(bundle, &source, Some(r.object), text).map_err(|e| e.to_string())?;
    let found_kind = obj["kind"].as_str().unwrap_or_default();
    let found_name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let kind_matches = found_kind == kind || (kind == "BundleSecret" && found_kind == "Secret");
    if !kind_matches || found_name != name {
        return Err(format!(
            "bundle image {}, file {}: object {} is {found_kind} {found_name}, not the step's {kind} {name}",
            r.bundle_image,
            r.file,
            r.object + 1
        ));
    }
    if found_kind == "ClusterServiceVersion" {
        adjust_csv(
            &mut obj,
            namespace,
            r.replaces.as_deref(),
            &r.annotations.clone().unwrap_or_default(),
        );
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(object: usize) -> BundleObjectRef {
        BundleObjectRef {
            bundle_image: "r/b@sha256:ab".into(),
            file: "manifests/x.yaml".into(),
            object,
            replaces: Some("a.v1".into()),
            annotations: Some(BTreeMap::from([("olm.k".to_string(), "v".to_string())])),
        }
    }

    fn objects() -> Vec<String> {
        vec![
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "annotations": {"n": null}}})
                .to_string(),
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "metadata": {"name": "a.v2", "uid": "x"}, "spec": {"replaces": "a.v0"}, "status": {"phase": "Succeeded"}})
            .to_string(),
        ]
    }

    #[test]
    fn a_reference_round_trips_and_an_object_is_not_one() {
        let r = reference(1);
        assert_eq!(BundleObjectRef::parse(&r.to_manifest()), Some(r));
        assert_eq!(
            BundleObjectRef::parse(r#"{"kind":"ConfigMap","bundleImage":"x"}"#),
            None
        );
        assert_eq!(BundleObjectRef::parse("not json"), None);
    }

    #[test]
    fn a_csv_reference_is_read_and_adjusted_as_the_plan_made_it() {
        let csv = resolve(
            &reference(1),
            "a.v2",
            &objects(),
            &[],
            "ClusterServiceVersion",
            "a.v2",
            "ns",
        )
        .expect("resolved");
        assert_eq!(csv["metadata"]["namespace"], "ns");
        assert_eq!(csv["metadata"]["annotations"]["olm.k"], "v");
        assert_eq!(csv["spec"]["replaces"], "a.v1");
        assert!(csv.get("status").is_none() && csv["metadata"].get("uid").is_none());
    }

    #[test]
    fn a_bundle_secret_reference_reads_its_secret_with_go_rules() {
        let s = resolve(
            &reference(0),
            "a.v2",
            &objects(),
            &[],
            "BundleSecret",
            "s",
            "ns",
        )
        .expect("resolved");
        assert_eq!(s["metadata"]["annotations"]["n"], "");
    }

    #[test]
    fn content_that_is_not_what_the_step_names_is_refused() {
        let e = resolve(
            &reference(0),
            "a.v2",
            &objects(),
            &[],
            "ConfigMap",
            "s",
            "ns",
        )
        .expect_err("refused");
        assert!(
            e.contains("object 1 is Secret s, not the step's ConfigMap s"),
            "{e}"
        );
        let e = resolve(&reference(5), "a.v2", &objects(), &[], "Secret", "s", "ns")
            .expect_err("refused");
        assert!(e.contains("has 2 objects"), "{e}");
    }
}
