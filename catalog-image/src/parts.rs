//! An unpacked catalog image (a folder) indexed into a cache folder one part at a time: the file-based catalog
//! under the configs folder loaded one top-level folder at a time (one per core, as `registry cache-build`
//! does), each part's model dropped once indexed; a catalog whose folder refers to a package of another folder
//! is loaded whole; an older index image's sqlite index is read as FBC documents. Error texts name files as
//! the image has them (`/configs/a/catalog.json`), not where they were unpacked.

use catalog::{Catalog, LoadError};
use oci::PullError;
use registry::store::{BuildError, CacheError, Store};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum PartsError {
    /// The image's content is not a catalog (a parse error, no catalog at all, no package).
    #[error(transparent)]
    Image(PullError),
    /// The index or body file could not be written.
    #[error(transparent)]
    Cache(CacheError),
}

/// Index the catalog unpacked under `fs` (its FBC under `fs/<configs>`) into `out`; (packages, bundles).
pub fn write_cache(
    reference: &str,
    fs: &Path,
    configs: &str,
    out: &Path,
) -> Result<(usize, usize), PartsError> {
    let root_text = fs.display().to_string();
    let not_catalog = |message: String| {
        PartsError::Image(PullError::NotACatalog {
            reference: reference.to_string(),
            message: message.replace(&root_text, ""),
        })
    };
    let classify = |e: CacheError| match e {
        CacheError::Load(e) => not_catalog(error_line(&e)),
        CacheError::Build(BuildError::Bodies(_))
        | CacheError::Write { .. }
        | CacheError::Encode(_) => PartsError::Cache(e),
        other => not_catalog(error_line(&other)),
    };
    let root = fs.join(configs);
    let units = if root.is_dir() {
        catalog::fbc::units(&root).map_err(|e| not_catalog(error_line(&e)))?
    } else {
        Vec::new()
    };
    let counts = if !units.is_empty() {
        match by_parts(&units, out).map_err(classify)? {
            Some(counts) => counts,
            None => {
                let whole =
                    catalog::fbc::load_dir(&root).map_err(|e| not_catalog(error_line(&e)))?;
                whole_catalog(whole, out).map_err(classify)?
            }
        }
    } else if fs.join(oci::SQLITE_INDEX).is_file() {
        let path = format!("/{}", oci::SQLITE_INDEX);
        let values = crate::sqlite::documents_from_path(&fs.join(oci::SQLITE_INDEX))
            .map_err(|e| not_catalog(format!("{path}: {e}")))?;
        let docs = catalog::documents::with_origins(Path::new(&path), values);
        let whole = catalog::fbc::from_documents(docs).map_err(|e| not_catalog(e.to_string()))?;
        whole_catalog(whole, out).map_err(classify)?
    } else {
        return Err(not_catalog(format!(
            "no file-based catalog under /{configs} (label {}) and no sqlite index (/{})",
            oci::CONFIGS_LABEL,
            oci::SQLITE_INDEX
        )));
    };
    if counts.0 == 0 {
        return Err(not_catalog(format!(
            "the file-based catalog under /{configs} has no package"
        )));
    }
    Ok(counts)
}

/// A load error with its causes, on one line.
fn error_line(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn whole_catalog(catalog: Catalog, out: &Path) -> Result<(usize, usize), CacheError> {
    let counts = (catalog.packages.len(), catalog.bundle_count());
    Store::write_cache(catalog, out)?;
    Ok(counts)
}

/// `Ok(None)` when a part refers to a package of another part (load it whole instead).
fn by_parts(
    units: &[Vec<std::path::PathBuf>],
    out: &Path,
) -> Result<Option<(usize, usize)>, CacheError> {
    let width = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut chunks = units.chunks(width);
    let mut loaded: std::collections::VecDeque<Result<Catalog, LoadError>> = Default::default();
    let mut counts = (0usize, 0usize);
    let mut cross_reference = false;
    Store::write_cache_parts(out, || {
        if cross_reference {
            return None;
        }
        if loaded.is_empty() {
            loaded.extend(catalog::load::parallel_parts(chunks.next()?));
        }
        let part = match loaded.pop_front()? {
            Ok(part) => part,
            Err(LoadError::Invalid(d))
                if d.0
                    .iter()
                    .any(|x| matches!(x.problem, catalog::Problem::UnknownPackage(_))) =>
            {
                cross_reference = true;
                return None;
            }
            Err(e) => return Some(Err(e.into())),
        };
        counts.0 += part.packages.len();
        counts.1 += part.bundle_count();
        Some(Ok(part))
    })?;
    Ok((!cross_reference).then_some(counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FBC: &str = r#"{"schema":"olm.package","name":"a","defaultChannel":"stable"}
{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1"}]}
{"schema":"olm.bundle","name":"a.v1","package":"a","image":"r/a@sha256:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},{"type":"olm.csv.metadata","value":{"displayName":"A","description":"a body to write"}}]}
"#;

    #[test]
    fn a_full_disk_is_a_cache_error_naming_the_body_file() {
        let fs = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(fs.path().join("configs/a")).expect("mkdir");
        std::fs::write(fs.path().join("configs/a/catalog.json"), FBC).expect("write");
        let out = tempfile::tempdir().expect("tempdir");
        // Every write to /dev/full fails with ENOSPC, as a full disk does.
        std::os::unix::fs::symlink("/dev/full", out.path().join(registry::store::CACHE_BODIES))
            .expect("symlink");
        match write_cache("img", fs.path(), "configs", out.path()) {
            Err(PartsError::Cache(e)) => {
                let text = error_line(&e);
                assert!(
                    text.contains("No space left on device") || text.contains("os error 28"),
                    "{text}"
                );
            }
            Err(PartsError::Image(e)) => panic!("expected a cache error, got {e}"),
            Ok(counts) => panic!("expected a cache error, got {counts:?}"),
        }
    }
}
