//! Publishing real content without a container engine: a bundle folder (`manifests/`, `metadata/`) as a
//! bundle image, a file-based catalog as a catalog image, and a tree of bundle folders (the
//! community-operators layout) as bundle images plus one catalog image that references them by digest.

use crate::build::{self, LAYER_MEDIA_TYPE};
use crate::client::{Auth, Registry};
use crate::error::PullError;
use anyhow::{Context, Result};
use catalog::PropertyType;
use catalog::bundle_dir::{find_bundle_dirs, load_tree, read_bundle_dir};
use std::collections::BTreeMap;
use std::path::Path;

/// The digest pinned by a reference (`repo@sha256:…`).
pub fn pinned_digest(reference: &str) -> Option<&str> {
    reference
        .rsplit_once('@')
        .map(|(_, d)| d)
        .filter(|d| d.starts_with("sha256:"))
}

/// `repo@digest` of a reference pushed as `repo:tag` (or already pinned).
pub fn pinned(reference: &str, digest: &str) -> String {
    let reference = reference.split_once('@').map_or(reference, |(r, _)| r);
    let repo = match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => reference,
    };
    format!("{repo}@{digest}")
}

/// Pushes the bundle folder `dir` as `reference`; returns its digest.
pub async fn push_bundle(registry: &Registry, dir: &Path, reference: &str) -> Result<String> {
    let mut files = build::files_from_dir(&dir.join("manifests"), "manifests")
        .with_context(|| format!("reading {}/manifests", dir.display()))?;
    files.extend(
        build::files_from_dir(&dir.join("metadata"), "metadata")
            .with_context(|| format!("reading {}/metadata", dir.display()))?,
    );
    let mut annotations = BTreeMap::new();
    if let Some((_, text)) = files
        .iter()
        .find(|(p, _)| p.starts_with("metadata/annotations."))
    {
        let docs = catalog::documents::parse_documents(&String::from_utf8_lossy(text))
            .map_err(anyhow::Error::msg)?;
        if let Some(map) = docs.iter().find_map(|d| d["annotations"].as_object()) {
            for (k, v) in map {
                if let Some(s) = v.as_str() {
                    annotations.insert(k.clone(), s.to_string());
                }
            }
        }
    }
    let layer = build::tar_gz(&files)?;
    let digest = registry
        .push(
            reference,
            &Auth::Anonymous,
            vec![(LAYER_MEDIA_TYPE.into(), layer)],
            &build::bundle_labels(&annotations),
        )
        .await?;
    Ok(digest)
}

/// Pushes a file-based catalog (a folder, or one file) as a catalog image with its FBC under `/configs`.
pub async fn push_catalog(registry: &Registry, fbc: &Path, reference: &str) -> Result<String> {
    let files = if fbc.is_dir() {
        build::files_from_dir(fbc, crate::DEFAULT_CONFIGS_DIR)?
    } else {
        let name = fbc
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "catalog.json".into());
        vec![(
            format!("{}/{name}", crate::DEFAULT_CONFIGS_DIR),
            std::fs::read(fbc)?,
        )]
    };
    push_catalog_files(registry, files, reference)
        .await
        .map_err(Into::into)
}

/// Pushes in-memory FBC files (paths under `configs/`) as a catalog image.
pub async fn push_catalog_files(
    registry: &Registry,
    files: Vec<(String, Vec<u8>)>,
    reference: &str,
) -> Result<String, PullError> {
    let layer = build::tar_gz(&files).map_err(|e| PullError::Registry {
        reference: reference.to_string(),
        message: e.to_string(),
    })?;
    let labels = BTreeMap::from([(
        crate::CONFIGS_LABEL.to_string(),
        format!("/{}", crate::DEFAULT_CONFIGS_DIR),
    )]);
    registry
        .push(
            reference,
            &Auth::Anonymous,
            vec![(LAYER_MEDIA_TYPE.into(), layer)],
            &labels,
        )
        .await
}

/// What [`push_tree`] published.
#[derive(Debug, Default)]
pub struct Published {
    /// CSV name → `repo@digest` of its bundle image.
    pub bundles: BTreeMap<String, String>,
    /// The rendered FBC (JSON stream) referencing them.
    pub fbc: Vec<u8>,
}

/// Pushes every bundle folder under `root/<package>` for `packages` (all when empty) as
/// `<prefix>/<package>-bundle:v<version>`, and renders an FBC of those packages whose bundles reference the
/// images by digest and carry no inline objects (as real catalogs do).
pub async fn push_tree(
    registry: &Registry,
    root: &Path,
    packages: &[String],
    prefix: &str,
) -> Result<Published> {
    let mut out = Published::default();
    let mut catalog = catalog::Catalog::default();
    let names: Vec<String> = if packages.is_empty() {
        let mut v: Vec<String> = std::fs::read_dir(root)?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    } else {
        packages.to_vec()
    };
    for name in &names {
        let dir = root.join(name);
        let tree = load_tree(&dir).with_context(|| format!("loading {}", dir.display()))?;
        for bdir in find_bundle_dirs(&dir)? {
            let b = read_bundle_dir(&bdir)?;
            let tag = b.facts.version.replace('+', "_");
            let reference = format!("{prefix}/{}-bundle:v{tag}", b.package);
            let digest = push_bundle(registry, &bdir, &reference).await?;
            out.bundles
                .insert(b.bundle.name.clone(), pinned(&reference, &digest));
        }
        for (pname, mut pkg) in tree.packages {
            for bundle in pkg.bundles.values_mut() {
                if let Some(image) = out.bundles.get(&bundle.name) {
                    bundle.image = image.clone();
                }
                // As `opm render` of a bundle image: the CSV's display fields as `olm.csv.metadata` (what
                // packageserver shows), no inline objects.
                let csv = bundle
                    .objects()
                    .iter()
                    .filter_map(|o| serde_json::from_str::<serde_json::Value>(o).ok())
                    .find(catalog::csv::is_csv);
                bundle
                    .properties
                    .retain(|p| p.kind() != PropertyType::BundleObject);
                if let Some(csv) = csv
                    && bundle
                        .properties_of(PropertyType::CsvMetadata)
                        .next()
                        .is_none()
                {
                    bundle.properties.push(catalog::model::Property::new(
                        PropertyType::CsvMetadata,
                        catalog::csv_json::metadata_of(&csv),
                    ));
                }
            }
            catalog.packages.insert(pname, pkg);
        }
    }
    catalog::render::write_json(&catalog, &mut out.fbc)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::tag("127.0.0.1:25000/a/b:v1", "127.0.0.1:25000/a/b@sha256:x")]
    #[case::no_tag("127.0.0.1:25000/a/b", "127.0.0.1:25000/a/b@sha256:x")]
    fn a_pushed_tag_pins_to_its_digest(#[case] reference: &str, #[case] want: &str) {
        assert_eq!(pinned(reference, "sha256:x"), want);
    }
}
