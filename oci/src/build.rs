//! Building images without a container engine: reproducible tar layers (sorted, mtime 0, root-owned) from
//! folders or in-memory files, and the OCI image config carrying the labels. Pure (plus reading folders).

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

/// The media type of the layers we build.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// Labels of a registry+v1 bundle image (operator-registry's `bundle build`).
pub const BUNDLE_MEDIATYPE_LABEL: &str = "operators.operatorframework.io.bundle.mediatype.v1";
pub const BUNDLE_MANIFESTS_LABEL: &str = "operators.operatorframework.io.bundle.manifests.v1";
pub const BUNDLE_METADATA_LABEL: &str = "operators.operatorframework.io.bundle.metadata.v1";

/// An uncompressed tar of `files` (path → content), with their parent folders, in path order.
pub fn tar(files: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut builder = tar::Builder::new(Vec::new());
    let mut dirs: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for (path, content) in sorted {
        let mut prefix = String::new();
        for part in path
            .split('/')
            .collect::<Vec<_>>()
            .iter()
            .rev()
            .skip(1)
            .rev()
        {
            prefix.push_str(part);
            prefix.push('/');
            if dirs.insert(prefix.clone()) {
                let mut h = tar::Header::new_ustar();
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                h.set_mtime(0);
                builder.append_data(&mut h, &prefix, std::io::empty())?;
            }
        }
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(content.len() as u64);
        h.set_mtime(0);
        builder.append_data(&mut h, path, content.as_slice())?;
    }
    builder.into_inner()
}

/// A gzip-compressed [`tar`].
pub fn tar_gz(files: &[(String, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar(files)?)?;
    gz.finish()
}

/// Every regular file under `dir`, as `<under>/<relative path>` → content.
pub fn files_from_dir(dir: &Path, under: &str) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else if entry.file_type()?.is_file() {
                let rel = path
                    .strip_prefix(dir)
                    .map_err(std::io::Error::other)?
                    .to_string_lossy()
                    .replace('\\', "/");
                let name = if under.is_empty() {
                    rel
                } else {
                    format!("{under}/{rel}")
                };
                out.push((name, std::fs::read(&path)?));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

#[derive(Serialize)]
struct ImageConfig<'a> {
    architecture: &'static str,
    os: &'static str,
    config: RunConfig<'a>,
    rootfs: RootFs,
}

#[derive(Serialize)]
struct RunConfig<'a> {
    #[serde(rename = "Labels")]
    labels: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
struct RootFs {
    #[serde(rename = "type")]
    type_: &'static str,
    diff_ids: Vec<String>,
}

/// The digest of a layer's uncompressed tar (its `diff_id`), from its media type and bytes: container runtimes
/// refuse an image whose config does not list one per layer.
fn diff_id(media_type: &str, data: &[u8]) -> String {
    if media_type.ends_with("+gzip") || media_type.ends_with(".gzip") {
        let mut tar = Vec::new();
        if GzDecoder::new(data).read_to_end(&mut tar).is_ok() {
            return crate::digest::sha256_digest(&tar);
        }
    }
    crate::digest::sha256_digest(data)
}

/// An OCI image config (linux/amd64, no entrypoint) with `labels`, its `rootfs.diff_ids` those of `layers`
/// (media type, bytes).
pub fn image_config(labels: &BTreeMap<String, String>, layers: &[(String, Vec<u8>)]) -> Vec<u8> {
    let config = ImageConfig {
        architecture: "amd64",
        os: "linux",
        config: RunConfig { labels },
        rootfs: RootFs {
            type_: "layers",
            diff_ids: layers.iter().map(|(m, d)| diff_id(m, d)).collect(),
        },
    };
    serde_json::to_vec(&config).unwrap_or_default()
}

/// The labels of a bundle image (operator-registry's): media type, where manifests and metadata live, and the
/// annotations of `metadata/annotations.yaml`.
pub fn bundle_labels(annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut labels = annotations.clone();
    labels
        .entry(BUNDLE_MEDIATYPE_LABEL.into())
        .or_insert_with(|| "registry+v1".into());
    labels
        .entry(BUNDLE_MANIFESTS_LABEL.into())
        .or_insert_with(|| "manifests/".into());
    labels
        .entry(BUNDLE_METADATA_LABEL.into())
        .or_insert_with(|| "metadata/".into());
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_reproducible_whatever_the_input_order() {
        let a = vec![
            ("b/x".to_string(), b"1".to_vec()),
            ("a".to_string(), b"2".to_vec()),
        ];
        let b = vec![
            ("a".to_string(), b"2".to_vec()),
            ("b/x".to_string(), b"1".to_vec()),
        ];
        assert_eq!(tar_gz(&a).expect("tar"), tar_gz(&b).expect("tar"));
    }

    #[test]
    fn the_config_carries_the_labels_and_one_diff_id_per_layer() {
        let labels = BTreeMap::from([(crate::CONFIGS_LABEL.to_string(), "/configs".to_string())]);
        let files = vec![("configs/a.json".to_string(), b"{}".to_vec())];
        let layers = vec![
            (LAYER_MEDIA_TYPE.to_string(), tar_gz(&files).expect("tar")),
            (
                "application/vnd.oci.image.layer.v1.tar".to_string(),
                tar(&files).expect("tar"),
            ),
        ];
        let v: serde_json::Value =
            serde_json::from_slice(&image_config(&labels, &layers)).expect("json");
        assert_eq!(v["config"]["Labels"][crate::CONFIGS_LABEL], "/configs");
        let uncompressed = crate::digest::sha256_digest(&tar(&files).expect("tar"));
        assert_eq!(
            v["rootfs"]["diff_ids"],
            serde_json::json!([uncompressed, uncompressed]),
            "the digest of each layer's uncompressed tar, gzipped or not"
        );
    }
}
