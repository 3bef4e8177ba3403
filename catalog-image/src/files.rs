//! From a pulled catalog image to an indexed catalog: where its file-based catalog lives (the configs label, or
//! `/configs`), its files parsed as FBC documents (or, for an older index image, its sqlite index read as such
//! documents), the catalog indexed. Pure but for the sqlite index's temporary file.

use oci::{Image, Limits, PullError};
use registry::bodies::BodyMode;
use registry::store::Store;
use std::path::Path;

/// The folder of the FBC (relative, no slashes around) from the image's labels.
pub fn configs_dir(labels: &std::collections::BTreeMap<String, String>) -> String {
    labels
        .get(oci::CONFIGS_LABEL)
        .map(|d| d.trim_matches('/').to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| oci::DEFAULT_CONFIGS_DIR.to_string())
}

/// The catalog of `files` under `dir`.
pub fn catalog(
    reference: &str,
    dir: &str,
    files: &oci::Files,
) -> Result<catalog::Catalog, PullError> {
    let not_catalog = |message: String| PullError::NotACatalog {
        reference: reference.to_string(),
        message,
    };
    let prefix = format!("{dir}/");
    let mut docs = Vec::new();
    for (path, bytes) in files.iter().filter(|(p, _)| p.starts_with(&prefix)) {
        if !(path.ends_with(".json") || path.ends_with(".yaml") || path.ends_with(".yml")) {
            continue;
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| not_catalog(format!("/{path} is not UTF-8: {e}")))?;
        let values = catalog::documents::parse_documents(text)
            .map_err(|e| not_catalog(format!("/{path}: {e}")))?;
        docs.extend(catalog::documents::with_origins(
            Path::new(&format!("/{path}")),
            values,
        ));
    }
    if docs.is_empty()
        && let Some(db) = files.get(oci::SQLITE_INDEX)
    {
        // An older index image: its sqlite index read as the same FBC documents (crate::sqlite).
        let path = format!("/{}", oci::SQLITE_INDEX);
        let values =
            crate::sqlite::documents(db).map_err(|e| not_catalog(format!("{path}: {e}")))?;
        docs.extend(catalog::documents::with_origins(Path::new(&path), values));
    }
    if docs.is_empty() {
        return Err(not_catalog(format!(
            "no file-based catalog under /{dir} (label {}) and no sqlite index (/{})",
            oci::CONFIGS_LABEL,
            oci::SQLITE_INDEX
        )));
    }
    let catalog = catalog::fbc::from_documents(docs).map_err(|e| not_catalog(e.to_string()))?;
    if catalog.packages.is_empty() {
        return Err(not_catalog(format!(
            "the file-based catalog under /{dir} has no package"
        )));
    }
    Ok(catalog)
}

/// Bundle bodies (CSV JSON, objects) go to an unlinked file in the temp folder when it is writable, so a large
/// catalog keeps only its compact index in memory (as `registry serve` does); else they stay in memory.
fn body_mode() -> BodyMode {
    match registry::bodies::BodyWriter::new(BodyMode::Disk, &std::env::temp_dir()) {
        Ok(_) => BodyMode::Disk,
        Err(_) => BodyMode::Memory,
    }
}

/// Unpacks and indexes a pulled catalog image.
pub fn index(reference: &str, image: &Image) -> Result<Store, PullError> {
    let dir = configs_dir(&image.labels);
    let prefix = format!("{dir}/");
    let keep = |p: &str| p.starts_with(&prefix) || p == oci::SQLITE_INDEX;
    let files = oci::layers::unpack(reference, &image.layers, &keep, &Limits::CATALOG)?;
    let catalog = catalog(reference, &dir, &files)?;
    drop(files);
    Store::build_with(catalog, body_mode()).map_err(|e| PullError::NotACatalog {
        reference: reference.to_string(),
        message: format!("cannot index it: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::collections::BTreeMap;

    const FBC: &str = r#"{"schema":"olm.package","name":"a","defaultChannel":"stable"}
{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1"}]}
{"schema":"olm.bundle","name":"a.v1","package":"a","image":"r/a@sha256:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}
"#;

    fn files(entries: &[(&str, &str)]) -> oci::Files {
        entries
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect()
    }

    #[rstest]
    #[case::label(Some("/catalog/"), "catalog")]
    #[case::default(None, "configs")]
    #[case::empty_label(Some("/"), "configs")]
    fn the_configs_folder_comes_from_the_label(#[case] label: Option<&str>, #[case] dir: &str) {
        let labels: BTreeMap<String, String> = label
            .map(|l| (oci::CONFIGS_LABEL.to_string(), l.to_string()))
            .into_iter()
            .collect();
        assert_eq!(configs_dir(&labels), dir);
    }

    #[test]
    fn an_fbc_under_configs_is_a_catalog() {
        let c =
            catalog("img", "configs", &files(&[("configs/a/catalog.json", FBC)])).expect("catalog");
        assert_eq!(c.packages.keys().collect::<Vec<_>>(), ["a"]);
    }

    #[rstest]
    #[case::nothing(&[("bin/registry", "x")], "no file-based catalog under /configs")]
    #[case::sqlite(&[("database/index.db", "x")], "sqlite index")]
    #[case::not_fbc(&[("configs/a.json", "{not json")], "/configs/a.json")]
    fn an_image_without_a_catalog_says_why(#[case] entries: &[(&str, &str)], #[case] says: &str) {
        let err = catalog("img", "configs", &files(entries)).expect_err("not a catalog");
        assert_eq!(err.reason(), "NotACatalog");
        assert!(err.to_string().contains(says), "{err}");
    }
}
