//! Package-manifest directories (the legacy format): `<pkg>/*.package.yaml` plus CSVs and
//! CRDs either in one folder per version or all flat in the package folder. Channels are
//! built by starting at each channel's `currentCSV` and following the CSVs' `spec.replaces`.
//! Also used by ConfigMap catalogs, which hold the same pieces as YAML strings.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::csv::{self, BundleSource};
use crate::documents::{Document, is_manifest_file, read_first_document};
use crate::error::{LoadError, Result};
use crate::model::{Catalog, Channel, Package};

/// The `package.yaml` document.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifest {
    pub package_name: String,
    #[serde(default)]
    pub channels: Vec<PackageChannel>,
    #[serde(default)]
    pub default_channel: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageChannel {
    pub name: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
}

/// True when a document looks like a package manifest (`packageName` + `channels`).
pub fn is_package_manifest(v: &Value) -> bool {
    v.get("packageName").is_some() && v.get("channels").is_some()
}

/// One CSV and the manifests that ship with it.
pub struct CsvBundle {
    pub csv: Value,
    pub objects: Vec<Value>,
}

/// Builds a package from its manifest and the CSVs found for it (keyed by CSV name).
pub fn build_package(
    manifest: &PackageManifest,
    csvs: &BTreeMap<String, CsvBundle>,
) -> Result<Package, String> {
    let mut pkg = Package::new(manifest.package_name.clone());
    pkg.default_channel = match (&manifest.default_channel, manifest.channels.as_slice()) {
        (Some(d), _) if !d.is_empty() => d.clone(),
        (_, [only]) => only.name.clone(),
        _ => String::new(),
    };
    for ch in &manifest.channels {
        let mut channel = Channel::new(ch.name.clone());
        let mut visited = HashSet::new();
        let mut next = Some(ch.current_csv.clone());
        while let Some(name) = next.take() {
            let Some(found) = csvs.get(&name) else {
                if channel.entries.is_empty() {
                    return Err(format!(
                        "channel {:?}: currentCSV {name:?} not found",
                        ch.name
                    ));
                }
                break; // the tail may replace a CSV that is not shipped
            };
            if !visited.insert(name.clone()) {
                break; // a cycle; validation reports it from the entries
            }
            if !pkg.bundles.contains_key(&name) {
                let src = BundleSource {
                    package: &manifest.package_name,
                    csv: &found.csv,
                    objects: &found.objects,
                    dependencies: &[],
                    extra_properties: &[],
                    image: "",
                };
                let (bundle, _) = csv::build_bundle(&src)?;
                pkg.bundles.insert(name.clone(), bundle);
            }
            let facts = csv::facts(&found.csv)?;
            next = facts.replaces.clone();
            channel.entries.push(facts.entry());
        }
        pkg.channels.insert(ch.name.clone(), channel);
    }
    Ok(pkg)
}

/// The CRDs a flat-layout CSV owns, picked by name from `crds`.
pub fn owned_crds<'a>(csv: &Value, crds: &'a [Value]) -> Vec<&'a Value> {
    let owned: HashSet<&str> = csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("name").and_then(Value::as_str))
        .collect();
    crds.iter()
        .filter(|c| {
            c.pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| owned.contains(n))
        })
        .collect()
}

/// Loads a folder that is one package (holds a package manifest) or holds several.
pub fn load_dir(root: &Path) -> Result<Catalog> {
    let mut catalog = Catalog::default();
    for pkg_dir in package_dirs(root)? {
        let pkg = load_package_dir(&pkg_dir, &mut catalog.notes)?;
        let name = pkg.name.clone();
        if catalog.packages.insert(name.clone(), pkg).is_some() {
            return Err(LoadError::DuplicatePackage(name));
        }
    }
    Ok(catalog)
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|source| LoadError::Read {
        path: dir.into(),
        source,
    })?;
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && is_manifest_file(p))
        .collect();
    out.sort();
    Ok(out)
}

fn has_package_manifest(dir: &Path) -> Result<bool> {
    for f in yaml_files(dir)? {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.ends_with(".package.yaml") || name == "packagemanifest.yaml" {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `root` itself if it holds a package manifest, else its sub-folders that do.
fn package_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    if has_package_manifest(root)? {
        return Ok(vec![root.to_path_buf()]);
    }
    let rd = std::fs::read_dir(root).map_err(|source| LoadError::Read {
        path: root.into(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for d in dirs {
        if has_package_manifest(&d)? {
            out.push(d);
        }
    }
    Ok(out)
}

/// Loads one package folder. Each file contributes its first document only, as operator-registry reads
/// package manifests; files with more are named in `notes`.
fn load_package_dir(dir: &Path, notes: &mut Vec<String>) -> Result<Package> {
    let bad = |message: String| LoadError::Manifest {
        path: dir.to_path_buf(),
        message,
    };
    let mut manifest = None;
    let mut flat: Vec<Document> = Vec::new();
    for f in yaml_files(dir)? {
        let first = read_first_document(&f)?;
        notes.extend(first.note);
        if let Some(doc) = first.document {
            if is_package_manifest(&doc.value) {
                let m = PackageManifest::deserialize(&doc.value)
                    .map_err(|e| bad(format!("{}: invalid package manifest: {e}", doc.origin)))?;
                manifest = Some(m);
            } else {
                flat.push(doc);
            }
        }
    }
    let manifest = manifest.ok_or_else(|| bad("no package manifest found".into()))?;
    let mut csvs = BTreeMap::new();
    // Flat layout: CSVs and CRDs side by side in the package folder.
    let crds: Vec<Value> = flat
        .iter()
        .filter(|d| csv::is_crd(&d.value))
        .map(|d| d.value.clone())
        .collect();
    for d in flat.iter().filter(|d| csv::is_csv(&d.value)) {
        let mut objects = vec![d.value.clone()];
        objects.extend(owned_crds(&d.value, &crds).into_iter().cloned());
        add_csv(&mut csvs, d.value.clone(), objects).map_err(bad)?;
    }
    // Versioned layout: one folder per version with a CSV and its manifests.
    let rd = std::fs::read_dir(dir).map_err(|source| LoadError::Read {
        path: dir.into(),
        source,
    })?;
    let mut subdirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        let mut docs = Vec::new();
        for f in yaml_files(&sub)? {
            let first = read_first_document(&f)?;
            notes.extend(first.note);
            docs.extend(first.document.map(|d| d.value));
        }
        let others: Vec<Value> = docs.iter().filter(|v| !csv::is_csv(v)).cloned().collect();
        for c in docs.iter().filter(|v| csv::is_csv(v)) {
            let mut objects = vec![c.clone()];
            objects.extend(others.iter().cloned());
            add_csv(&mut csvs, c.clone(), objects).map_err(bad)?;
        }
    }
    build_package(&manifest, &csvs).map_err(bad)
}

fn add_csv(
    csvs: &mut BTreeMap<String, CsvBundle>,
    csv_value: Value,
    objects: Vec<Value>,
) -> Result<(), String> {
    let name = csv::facts(&csv_value)?.name;
    csvs.insert(
        name,
        CsvBundle {
            csv: csv_value,
            objects,
        },
    );
    Ok(())
}
