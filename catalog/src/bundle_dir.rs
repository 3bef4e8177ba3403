//! registry+v1 bundle folders (`manifests/` + `metadata/`), alone or as a tree of them
//! (`<package>/<version>/{manifests,metadata}`, the community-operators layout with an optional
//! `<package>/ci.yaml`). Metadata files are told apart by content, as opm does.
//!
//! Channel graphs for a tree are built the way the SQLite-era `opm index add` did:
//! - replaces mode (default): a channel holds the bundles annotated with it plus everything
//!   reachable from them by `spec.replaces`; edges come from the CSVs.
//! - semver mode (`ci.yaml` `updateGraph: semver-mode`): within a channel each bundle replaces the
//!   next-lower version; `olm.skipRange` is kept, CSV `replaces`/`skips` are ignored.
//!   A package whose CSVs declare no `replaces`/`skips` at all also uses semver mode.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::csv::{self, BundleSource, CsvFacts};
use crate::documents::{is_manifest_file, read_documents};
use crate::error::{LoadError, Result};
use crate::model::{Bundle, Catalog, Channel, ChannelEntry, Package};

pub const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";
pub const CHANNELS_ANNOTATION: &str = "operators.operatorframework.io.bundle.channels.v1";
pub const DEFAULT_CHANNEL_ANNOTATION: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// How a tree's channel graph is built (`ci.yaml` `updateGraph`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphMode {
    Replaces,
    Semver,
}

impl GraphMode {
    pub fn from_wire(s: &str) -> Option<GraphMode> {
        match s {
            "replaces-mode" => Some(GraphMode::Replaces),
            "semver-mode" => Some(GraphMode::Semver),
            _ => None,
        }
    }
}

/// One bundle folder, read.
#[derive(Debug, Clone)]
pub struct BundleDir {
    pub path: PathBuf,
    pub package: String,
    pub channels: Vec<String>,
    pub default_channel: Option<String>,
    pub bundle: Bundle,
    pub facts: CsvFacts,
}

pub fn is_bundle_dir(dir: &Path) -> bool {
    dir.join("manifests").is_dir() && dir.join("metadata").is_dir()
}

/// YAML scalars such as `1.0` may parse as numbers; annotation values are strings.
fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|source| LoadError::Walk { path: dir.to_path_buf(), source })?;
        if entry.file_type().is_file() && is_manifest_file(entry.path()) {
            out.push(entry.path().to_path_buf());
        }
    }
    Ok(out)
}

pub fn read_bundle_dir(dir: &Path) -> Result<BundleDir> {
    let bad = |message: String| LoadError::Manifest { path: dir.to_path_buf(), message };
    let mut annotations: Option<serde_json::Map<String, Value>> = None;
    let mut dependencies = Vec::new();
    let mut properties = Vec::new();
    for f in files_in(&dir.join("metadata"))? {
        for doc in read_documents(&f)? {
            if let Some(a) = doc.value.get("annotations").and_then(Value::as_object) {
                annotations = Some(a.clone());
            }
            if let Some(d) = doc.value.get("dependencies").and_then(Value::as_array) {
                dependencies.extend(d.iter().cloned());
            }
            if let Some(p) = doc.value.get("properties").and_then(Value::as_array) {
                properties.extend(p.iter().cloned());
            }
        }
    }
    let annotations = annotations.ok_or_else(|| bad("metadata/ has no annotations document".into()))?;
    let ann = |k: &str| annotations.get(k).and_then(scalar_string).filter(|s| !s.is_empty());
    let package = ann(PACKAGE_ANNOTATION)
        .ok_or_else(|| bad(format!("metadata/annotations.yaml has no {PACKAGE_ANNOTATION}")))?;
    let channels: Vec<String> = ann(CHANNELS_ANNOTATION)
        .ok_or_else(|| bad(format!("metadata/annotations.yaml has no {CHANNELS_ANNOTATION}")))?
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut objects = Vec::new();
    for f in files_in(&dir.join("manifests"))? {
        objects.extend(read_documents(&f)?.into_iter().map(|d| d.value).filter(Value::is_object));
    }
    let csvs: Vec<&Value> = objects.iter().filter(|o| csv::is_csv(o)).collect();
    let csv_value = match csvs.as_slice() {
        [one] => (*one).clone(),
        other => return Err(bad(format!("manifests/ must hold exactly one ClusterServiceVersion, found {}", other.len()))),
    };
    let src = BundleSource {
        package: &package,
        csv: &csv_value,
        objects: &objects,
        dependencies: &dependencies,
        extra_properties: &properties,
        image: "",
    };
    let (bundle, facts) = csv::build_bundle(&src).map_err(bad)?;
    Ok(BundleDir {
        path: dir.to_path_buf(),
        package,
        channels,
        default_channel: ann(DEFAULT_CHANNEL_ANNOTATION),
        bundle,
        facts,
    })
}

/// Every bundle folder under `root` (not descending into bundle folders), sorted.
pub fn find_bundle_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut walker = walkdir::WalkDir::new(root).sort_by_file_name().into_iter();
    while let Some(entry) = walker.next() {
        let entry = entry.map_err(|source| LoadError::Walk { path: root.to_path_buf(), source })?;
        if entry.file_type().is_dir() && is_bundle_dir(entry.path()) {
            out.push(entry.path().to_path_buf());
            walker.skip_current_dir();
        }
    }
    Ok(out)
}

fn graph_mode(bundle_dir: &Path) -> GraphMode {
    let ci = bundle_dir.parent().map(|p| p.join("ci.yaml"));
    let Some(docs) = ci.filter(|p| p.is_file()).and_then(|p| read_documents(&p).ok()) else {
        return GraphMode::Replaces;
    };
    docs.iter()
        .find_map(|d| d.value.get("updateGraph").and_then(Value::as_str).and_then(GraphMode::from_wire))
        .unwrap_or(GraphMode::Replaces)
}

/// Loads one bundle folder or a tree of them into a catalog.
pub fn load_tree(root: &Path) -> Result<Catalog> {
    let mut by_package: BTreeMap<String, (GraphMode, Vec<BundleDir>)> = BTreeMap::new();
    for dir in find_bundle_dirs(root)? {
        let b = read_bundle_dir(&dir)?;
        let mode = graph_mode(&dir);
        by_package.entry(b.package.clone()).or_insert_with(|| (mode, Vec::new())).1.push(b);
    }
    let mut catalog = Catalog::default();
    for (name, (mut mode, dirs)) in by_package {
        // A package whose CSVs declare no edges at all can only be ordered by version.
        if dirs.iter().all(|d| d.facts.replaces.is_none() && d.facts.skips.is_empty()) {
            mode = GraphMode::Semver;
        }
        catalog.packages.insert(name.clone(), build_package(&name, mode, dirs)?);
    }
    Ok(catalog)
}

fn parsed_version(b: &BundleDir) -> semver::Version {
    semver::Version::parse(&b.facts.version).unwrap_or(semver::Version::new(0, 0, 0))
}

pub fn build_package(name: &str, mode: GraphMode, mut dirs: Vec<BundleDir>) -> Result<Package> {
    dirs.sort_by_key(parsed_version);
    let mut pkg = Package::new(name);
    pkg.default_channel = dirs
        .iter()
        .rev()
        .find_map(|d| d.default_channel.clone())
        .or_else(|| {
            let all: BTreeSet<&String> = dirs.iter().flat_map(|d| &d.channels).collect();
            (all.len() == 1).then(|| all.into_iter().next().cloned()).flatten()
        })
        .unwrap_or_default();
    let mut members: BTreeMap<String, Vec<&BundleDir>> = BTreeMap::new();
    for d in &dirs {
        for c in &d.channels {
            members.entry(c.clone()).or_default().push(d);
        }
    }
    let by_name: BTreeMap<&str, &BundleDir> = dirs.iter().map(|d| (d.facts.name.as_str(), d)).collect();
    for (channel_name, in_channel) in members {
        let mut channel = Channel::new(channel_name.clone());
        match mode {
            GraphMode::Semver => {
                let mut prev: Option<&str> = None;
                for d in &in_channel {
                    channel.entries.push(ChannelEntry {
                        name: d.facts.name.clone(),
                        replaces: prev.map(str::to_string),
                        skips: Vec::new(),
                        skip_range: d.facts.skip_range.clone(),
                    });
                    prev = Some(&d.facts.name);
                }
            }
            GraphMode::Replaces => {
                let mut seen = BTreeSet::new();
                let mut queue: Vec<&BundleDir> = in_channel.iter().rev().copied().collect();
                while let Some(d) = queue.pop() {
                    if !seen.insert(d.facts.name.clone()) {
                        continue;
                    }
                    channel.entries.push(d.facts.entry());
                    if let Some(next) = d.facts.replaces.as_deref().and_then(|r| by_name.get(r)) {
                        queue.push(next);
                    }
                }
            }
        }
        pkg.channels.insert(channel_name, channel);
    }
    for d in dirs {
        let bundle_name = d.bundle.name.clone();
        if pkg.bundles.insert(bundle_name.clone(), d.bundle).is_some() {
            return Err(LoadError::Manifest {
                path: d.path,
                message: format!("bundle {bundle_name:?} appears twice in package {name:?}"),
            });
        }
    }
    Ok(pkg)
}
