//! A registry+v1 bundle read from an unpacked bundle image: `/metadata/annotations.yaml` (package, channels)
//! and every object of `/manifests`, exactly one of them a ClusterServiceVersion. Pure.

use crate::error::PullError;
use crate::layers::Files;
use catalog::bundle_dir::{CHANNELS_ANNOTATION, DEFAULT_CHANNEL_ANNOTATION, PACKAGE_ANNOTATION};
use serde_json::Value;

/// What an InstallPlan needs from a bundle image.
#[derive(Debug, Clone, PartialEq)]
pub struct UnpackedBundle {
    /// The image's manifest digest.
    pub digest: String,
    pub package: String,
    pub channels: Vec<String>,
    pub default_channel: Option<String>,
    /// The CSV, as JSON.
    pub csv: Value,
    /// Every object of `/manifests` (the CSV included), in file order.
    pub objects: Vec<Value>,
    /// The file each of `objects` was read from (`manifests/etcd.crd.yaml`), for messages that name it.
    pub files: Vec<String>,
    /// Bytes of the manifests read (the cache's weight).
    pub bytes: u64,
}

impl UnpackedBundle {
    /// Each object as a JSON string (the shape of `api.Bundle.object`).
    pub fn object_strings(&self) -> Vec<String> {
        self.objects.iter().map(Value::to_string).collect()
    }
}

/// Which files of a bundle image to keep while unpacking.
pub fn keep(path: &str) -> bool {
    path.starts_with("manifests/") || path.starts_with("metadata/")
}

fn is_document(path: &str) -> bool {
    path.ends_with(".yaml") || path.ends_with(".yml") || path.ends_with(".json")
}

fn text<'a>(reference: &str, path: &str, bytes: &'a [u8]) -> Result<&'a str, PullError> {
    std::str::from_utf8(bytes).map_err(|e| PullError::InvalidManifest {
        reference: reference.to_string(),
        file: format!("/{path}"),
        message: format!("not UTF-8: {e}"),
    })
}

/// Reads the bundle out of `files`.
pub fn from_files(
    reference: &str,
    digest: &str,
    files: &Files,
) -> Result<UnpackedBundle, PullError> {
    let not_bundle = |message: &str| PullError::NotABundle {
        reference: reference.to_string(),
        message: message.to_string(),
    };
    if !files.keys().any(|k| k.starts_with("manifests/")) {
        return Err(not_bundle("it has no /manifests folder"));
    }
    let mut annotations: Option<serde_json::Map<String, Value>> = None;
    for (path, bytes) in files.range("metadata/".to_string()..) {
        if !path.starts_with("metadata/") {
            break;
        }
        if !is_document(path) {
            continue;
        }
        let docs = catalog::documents::parse_documents(text(reference, path, bytes)?).map_err(
            |message| PullError::InvalidManifest {
                reference: reference.to_string(),
                file: format!("/{path}"),
                message,
            },
        )?;
        if let Some(a) = docs
            .iter()
            .find_map(|d| d.get("annotations").and_then(Value::as_object))
        {
            annotations = Some(a.clone());
        }
    }
    let annotations = annotations.ok_or_else(|| {
        not_bundle("it has no /metadata/annotations.yaml with an annotations map")
    })?;
    let ann = |k: &str| {
        annotations
            .get(k)
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .filter(|s| !s.is_empty())
    };
    let package = ann(PACKAGE_ANNOTATION).ok_or_else(|| {
        not_bundle(&format!(
            "/metadata/annotations.yaml has no {PACKAGE_ANNOTATION}"
        ))
    })?;
    let channels = ann(CHANNELS_ANNOTATION)
        .map(|c| {
            c.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut objects = Vec::new();
    let mut origins = Vec::new();
    let mut bytes_read = 0u64;
    for (path, bytes) in files.range("manifests/".to_string()..) {
        if !path.starts_with("manifests/") {
            break;
        }
        if !is_document(path) {
            continue;
        }
        bytes_read += bytes.len() as u64;
        let docs = catalog::documents::parse_documents(text(reference, path, bytes)?).map_err(
            |message| PullError::InvalidManifest {
                reference: reference.to_string(),
                file: format!("/{path}"),
                message,
            },
        )?;
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            // As OLM's unstructured decoding: a kind is required, an apiVersion is not (a real bundle's
            // ClusterRole without one installs under OLM, which creates RBAC kinds with typed clients).
            let kind_ok = doc
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| !k.is_empty());
            if !doc.is_object() || !kind_ok {
                return Err(PullError::InvalidManifest {
                    reference: reference.to_string(),
                    file: format!("/{path}"),
                    message: "a document is not a Kubernetes object (a kind is required)".into(),
                });
            }
            objects.push(doc);
            origins.push(path.clone());
        }
    }
    let csvs: Vec<&Value> = objects.iter().filter(|o| catalog::csv::is_csv(o)).collect();
    let csv = match csvs.as_slice() {
        [one] => (*one).clone(),
        [] => {
            return Err(PullError::NoCsv {
                reference: reference.to_string(),
            });
        }
        many => {
            return Err(PullError::InvalidManifest {
                reference: reference.to_string(),
                file: "/manifests".into(),
                message: format!(
                    "{} ClusterServiceVersions; a bundle has exactly one",
                    many.len()
                ),
            });
        }
    };
    if csv["metadata"]["name"].as_str().is_none_or(str::is_empty) {
        return Err(PullError::InvalidManifest {
            reference: reference.to_string(),
            file: "/manifests".into(),
            message: "the ClusterServiceVersion has no metadata.name".into(),
        });
    }
    Ok(UnpackedBundle {
        digest: digest.to_string(),
        package,
        channels,
        default_channel: ann(DEFAULT_CHANNEL_ANNOTATION),
        csv,
        objects,
        files: origins,
        bytes: bytes_read,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const ANNOTATIONS: &str = "annotations:\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: alpha,stable\n";
    const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v1\nspec: {}\n";
    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.b\n";

    fn files(entries: &[(&str, &str)]) -> Files {
        entries
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn a_bundle_reads_its_package_channels_and_objects() {
        let f = files(&[
            ("metadata/annotations.yaml", ANNOTATIONS),
            ("manifests/etcd.csv.yaml", CSV),
            ("manifests/crd.yaml", CRD),
        ]);
        let b = from_files("img", "sha256:x", &f).expect("bundle");
        assert_eq!(b.package, "etcd");
        assert_eq!(b.channels, ["alpha", "stable"]);
        assert_eq!(b.csv["metadata"]["name"], "etcd.v1");
        assert_eq!(b.objects.len(), 2);
        assert_eq!(b.files, ["manifests/crd.yaml", "manifests/etcd.csv.yaml"]);
    }

    /// cluster-aas-operator 0.1.0 (community-operators) ships `argo_cd_cluster_role.yaml` with a kind and no
    /// apiVersion; OLM installs it.
    #[test]
    fn an_object_without_an_api_version_is_read() {
        let role =
            "---\nkind: ClusterRole\nmetadata:\n  name: claas-argocd-cluster-role\nrules: []\n";
        let f = files(&[
            ("metadata/annotations.yaml", ANNOTATIONS),
            ("manifests/etcd.csv.yaml", CSV),
            ("manifests/argo_cd_cluster_role.yaml", role),
        ]);
        let b = from_files("img", "sha256:x", &f).expect("bundle");
        assert_eq!(b.objects[0]["kind"], "ClusterRole");
        assert_eq!(b.files[0], "manifests/argo_cd_cluster_role.yaml");
    }

    #[rstest]
    #[case::no_manifests(&[("metadata/annotations.yaml", ANNOTATIONS)], "NotABundle")]
    #[case::no_metadata(&[("manifests/csv.yaml", CSV)], "NotABundle")]
    #[case::no_package(&[("metadata/annotations.yaml", "annotations: {}\n"), ("manifests/csv.yaml", CSV)], "NotABundle")]
    #[case::no_csv(&[("metadata/annotations.yaml", ANNOTATIONS), ("manifests/crd.yaml", CRD)], "NoClusterServiceVersion")]
    #[case::two_csvs(&[("metadata/annotations.yaml", ANNOTATIONS), ("manifests/a.yaml", CSV), ("manifests/b.yaml", CSV)], "InvalidManifest")]
    #[case::bad_yaml(&[("metadata/annotations.yaml", ANNOTATIONS), ("manifests/a.yaml", "kind: [unclosed\n")], "InvalidManifest")]
    #[case::not_an_object(&[("metadata/annotations.yaml", ANNOTATIONS), ("manifests/a.yaml", CSV), ("manifests/b.yaml", "just: a map\n")], "InvalidManifest")]
    fn bad_bundles_are_reported(#[case] entries: &[(&str, &str)], #[case] reason: &str) {
        let err = from_files("img", "sha256:x", &files(entries)).expect_err("must fail");
        assert_eq!(err.reason(), reason, "{err}");
    }
}
