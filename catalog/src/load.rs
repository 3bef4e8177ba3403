//! Loading a catalog from a path, detecting its format (FBC, package manifests,
//! registry+v1 bundle folders, ConfigMap file), and merging several paths into one catalog.

use std::path::Path;

use crate::error::{LoadError, Result};
use crate::model::Catalog;
use crate::{bundle_dir, configmap, documents, fbc, manifests, validate};

/// The on-disk formats a catalog can come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Fbc,
    PackageManifests,
    Bundles,
    ConfigMap,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Fbc => "fbc",
            Format::PackageManifests => "package-manifests",
            Format::Bundles => "bundles",
            Format::ConfigMap => "configmap",
        }
    }

    pub fn from_wire(s: &str) -> Option<Format> {
        match s {
            "fbc" => Some(Format::Fbc),
            "package-manifests" => Some(Format::PackageManifests),
            "bundles" => Some(Format::Bundles),
            "configmap" => Some(Format::ConfigMap),
            _ => None,
        }
    }
}

/// Guesses the format of `path`: a ConfigMap file, a bundle folder (or a tree of them),
/// a package-manifest folder (`*.package.yaml`/`packagemanifest.yaml`), else FBC.
pub fn detect(path: &Path) -> Result<Format> {
    if path.is_file() {
        let docs = documents::read_documents(path)?;
        return Ok(if docs.iter().any(|d| configmap::is_configmap(&d.value)) {
            Format::ConfigMap
        } else {
            Format::Fbc
        });
    }
    let mut package_manifest = false;
    for entry in walkdir::WalkDir::new(path).max_depth(4) {
        let entry = entry.map_err(|source| LoadError::Walk {
            path: path.to_path_buf(),
            source,
        })?;
        if entry.file_type().is_dir() && bundle_dir::is_bundle_dir(entry.path()) {
            return Ok(Format::Bundles);
        }
        let name = entry.file_name().to_string_lossy();
        if entry.depth() <= 2 && (name.ends_with(".package.yaml") || name == "packagemanifest.yaml")
        {
            package_manifest = true;
        }
    }
    Ok(if package_manifest {
        Format::PackageManifests
    } else {
        Format::Fbc
    })
}

/// Loads FBC file groups (see [`fbc::units`]) concurrently, one catalog per group, in order.
pub fn parallel_parts(units: &[Vec<std::path::PathBuf>]) -> Vec<Result<Catalog>> {
    crate::documents::parallel_map(units, |files| fbc::load_files(files))
}

/// Loads one path in the given format (no semantic validation).
pub fn load_as(path: &Path, format: Format) -> Result<Catalog> {
    match format {
        Format::Fbc => fbc::load_dir(path),
        Format::PackageManifests => manifests::load_dir(path),
        Format::Bundles => bundle_dir::load_tree(path),
        Format::ConfigMap => configmap::load_file(path),
    }
}

/// Loads one path, detecting its format (no semantic validation).
pub fn load_unchecked(path: &Path) -> Result<Catalog> {
    load_as(path, detect(path)?)
}

impl Catalog {
    /// Loads and merges every path (a package may come from only one), then validates.
    pub fn load<P: AsRef<Path>>(paths: &[P]) -> Result<Catalog> {
        let mut catalog = Catalog::default();
        for p in paths {
            catalog
                .merge(load_unchecked(p.as_ref())?)
                .map_err(LoadError::DuplicatePackage)?;
        }
        validate::validate(&catalog)?;
        Ok(catalog)
    }
}
