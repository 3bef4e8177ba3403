//! A bundle's objects read as OLM reads them (`messages::go_json`: Go's decoding, `null` as the zero value,
//! unknown fields kept), and refused, where OLM refuses them, with a message that names the bundle, its image
//! and digest, the file, the object and the field. Pure.

use messages::crd::csv::ClusterServiceVersion;
use messages::go_json;
use serde_json::Value;
use std::fmt;

/// Where a bundle's objects came from: its image (when it was unpacked) and the file of each object, in the order
/// of `api.Bundle.object`. A catalog that serves objects inline names no files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    pub image: Option<String>,
    pub digest: Option<String>,
    pub files: Vec<String>,
}

impl Source {
    fn file(&self, index: Option<usize>) -> Option<&str> {
        index.and_then(|i| self.files.get(i)).map(String::as_str)
    }
}

/// A refusal of one object of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub bundle: String,
    pub image: Option<String>,
    pub digest: Option<String>,
    pub file: Option<String>,
    /// `ClusterServiceVersion etcdoperator.v0.9.4`; the object's position when it has no kind or name.
    pub object: String,
    /// The field path (`metadata.annotations.createdAt`); empty for the object as a whole.
    pub path: String,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bundle {}", self.bundle)?;
        match (&self.image, &self.digest) {
            (Some(image), Some(digest)) if !image.contains(digest.as_str()) => {
                write!(f, " (image {image}, digest {digest})")?
            }
            (Some(image), _) => write!(f, " (image {image})")?,
            _ => {}
        }
        if let Some(file) = &self.file {
            write!(f, ", file {file}")?;
        }
        write!(f, ", {}", self.object)?;
        if !self.path.is_empty() {
            write!(f, ", field {}", self.path)?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// How to name an object in a refusal: kind and name when it has them.
fn describe(value: &Value, index: Option<usize>) -> String {
    let kind = value["kind"].as_str().filter(|k| !k.is_empty());
    let name = value["metadata"]["name"].as_str().filter(|n| !n.is_empty());
    match (kind, name, index) {
        (Some(k), Some(n), _) => format!("{k} {n}"),
        (Some(k), None, Some(i)) => format!("{k} (object {} of the bundle)", i + 1),
        (Some(k), None, None) => k.to_string(),
        (None, _, Some(i)) => format!("object {} of the bundle", i + 1),
        (None, _, None) => "the ClusterServiceVersion".to_string(),
    }
}

/// Reads one object of bundle `bundle`: JSON text (as the registry API and the unpacker give it), then Go's
/// decoding: the whole object for a CSV (OLM decodes it into its typed struct), the metadata for every other kind
/// (OLM keeps those unstructured; the API server judges the rest). `index` is its position in `source.files`.
pub fn read(
    bundle: &str,
    source: &Source,
    index: Option<usize>,
    text: &str,
) -> Result<Value, Box<Refusal>> {
    let refuse = |value: &Value, path: String, reason: String| {
        Box::new(Refusal {
            bundle: bundle.to_string(),
            image: source.image.clone(),
            digest: source.digest.clone(),
            file: source.file(index).map(str::to_string),
            object: describe(value, index),
            path,
            reason,
        })
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| refuse(&Value::Null, String::new(), format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(refuse(
            &value,
            String::new(),
            "not a Kubernetes object (a JSON object with apiVersion and kind)".into(),
        ));
    }
    let normalized = if catalog::csv::is_csv(&value) {
        go_json::normalize::<ClusterServiceVersion>(&value)
    } else {
        go_json::normalize_metadata(&value)
    };
    normalized.map_err(|e| refuse(&value, e.path, e.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn image_source() -> Source {
        Source {
            image: Some("quay.io/community/etcd:v0.9.4".into()),
            digest: Some("sha256:ab12".into()),
            files: vec![
                "manifests/etcd.clusterserviceversion.yaml".into(),
                "manifests/etcd-config.configmap.yaml".into(),
            ],
        }
    }

    #[test]
    fn a_csv_with_an_empty_annotation_is_read_as_olm_reads_it() {
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "etcd.v0.9.4", "annotations": {"createdAt": null, "containerImage": null}},
            "spec": {"install": {"strategy": "deployment", "spec": {"deployments": []}}}});
        let read = read("etcd.v0.9.4", &image_source(), Some(0), &csv.to_string()).expect("read");
        assert_eq!(read["metadata"]["annotations"]["createdAt"], "");
        assert_eq!(read["metadata"]["annotations"]["containerImage"], "");
    }

    #[rstest]
    #[case::number_annotation_on_the_csv(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "etcd.v0.9.4", "annotations": {"replicas": 3}}}),
        Some(0),
        "bundle etcd.v0.9.4 (image quay.io/community/etcd:v0.9.4, digest sha256:ab12), file manifests/etcd.clusterserviceversion.yaml, ClusterServiceVersion etcd.v0.9.4, field metadata.annotations.replicas: invalid type: integer `3`, expected a string"
    )]
    #[case::bool_label_on_a_configmap(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "etcd-config", "labels": {"enabled": true}}}),
        Some(1),
        "bundle etcd.v0.9.4 (image quay.io/community/etcd:v0.9.4, digest sha256:ab12), file manifests/etcd-config.configmap.yaml, ConfigMap etcd-config, field metadata.labels.enabled: invalid type: boolean `true`, expected a string"
    )]
    #[case::a_list_for_a_csv_field(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "etcd.v0.9.4"}, "spec": {"install": {"strategy": "deployment", "spec": {"deployments": [{"name": "etcd", "spec": {"replicas": "two"}}]}}}}),
        Some(0),
        "bundle etcd.v0.9.4 (image quay.io/community/etcd:v0.9.4, digest sha256:ab12), file manifests/etcd.clusterserviceversion.yaml, ClusterServiceVersion etcd.v0.9.4, field spec.install.spec.deployments[0].spec.replicas: invalid type: string \"two\", expected i32"
    )]
    #[case::not_an_object(json!(["a"]), Some(1), "bundle etcd.v0.9.4 (image quay.io/community/etcd:v0.9.4, digest sha256:ab12), file manifests/etcd-config.configmap.yaml, object 2 of the bundle: not a Kubernetes object (a JSON object with apiVersion and kind)")]
    fn a_refusal_names_bundle_image_file_object_and_field(
        #[case] object: Value,
        #[case] index: Option<usize>,
        #[case] message: &str,
    ) {
        let e =
            read("etcd.v0.9.4", &image_source(), index, &object.to_string()).expect_err("refused");
        assert_eq!(e.to_string(), message);
    }

    #[test]
    fn an_inline_bundle_names_no_file() {
        let e = read(
            "etcd.v0.9.4",
            &Source::default(),
            Some(2),
            r#"{"kind": "Service", "metadata": {"name": "s", "annotations": {"a": 1}}}"#,
        )
        .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "bundle etcd.v0.9.4, Service s, field metadata.annotations.a: invalid type: integer `1`, expected a string"
        );
    }
}
