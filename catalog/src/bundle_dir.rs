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
//!
//! Real replaces-mode packages often have graphs the SQLite-era index tolerated but FBC
//! rejects (several heads, stranded entries). [`repair_channel`] keeps what the channel head
//! reaches and records what it left out in [`Catalog::notes`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::csv::{self, BundleSource, CsvFacts};
use crate::documents::{is_manifest_file, read_documents, read_first_document};
use crate::error::{LoadError, Result};
use crate::model::{Bundle, Catalog, Channel, ChannelEntry, Package};

pub const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";
pub const CHANNELS_ANNOTATION: &str = "operators.operatorframework.io.bundle.channels.v1";
pub const DEFAULT_CHANNEL_ANNOTATION: &str =
    "operators.operatorframework.io.bundle.channel.default.v1";

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
    /// Files of the folder with documents after the first, which were ignored (as OLM does).
    pub notes: Vec<String>,
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
        let entry = entry.map_err(|source| LoadError::Walk {
            path: dir.to_path_buf(),
            source,
        })?;
        if entry.file_type().is_file() && is_manifest_file(entry.path()) {
            out.push(entry.path().to_path_buf());
        }
    }
    Ok(out)
}

pub fn read_bundle_dir(dir: &Path) -> Result<BundleDir> {
    let bad = |message: String| LoadError::Manifest {
        path: dir.to_path_buf(),
        message,
    };
    let mut annotations: Option<serde_json::Map<String, Value>> = None;
    let mut dependencies = Vec::new();
    let mut properties = Vec::new();
    let mut notes = Vec::new();
    for f in files_in(&dir.join("metadata"))? {
        let first = read_first_document(&f)?;
        notes.extend(first.note);
        if let Some(doc) = first.document {
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
    let annotations =
        annotations.ok_or_else(|| bad("metadata/ has no annotations document".into()))?;
    let ann = |k: &str| {
        annotations
            .get(k)
            .and_then(scalar_string)
            .filter(|s| !s.is_empty())
    };
    let package = ann(PACKAGE_ANNOTATION).ok_or_else(|| {
        bad(format!(
            "metadata/annotations.yaml has no {PACKAGE_ANNOTATION}"
        ))
    })?;
    let channels: Vec<String> = ann(CHANNELS_ANNOTATION)
        .ok_or_else(|| {
            bad(format!(
                "metadata/annotations.yaml has no {CHANNELS_ANNOTATION}"
            ))
        })?
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut objects = Vec::new();
    for f in files_in(&dir.join("manifests"))? {
        let first = read_first_document(&f)?;
        notes.extend(first.note);
        objects.extend(first.document.map(|d| d.value).filter(Value::is_object));
    }
    let csvs: Vec<&Value> = objects.iter().filter(|o| csv::is_csv(o)).collect();
    let csv_value = match csvs.as_slice() {
        [one] => (*one).clone(),
        other => {
            return Err(bad(format!(
                "manifests/ must hold exactly one ClusterServiceVersion, found {}",
                other.len()
            )));
        }
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
        notes,
    })
}

/// Every bundle folder under `root` (not descending into bundle folders), sorted.
pub fn find_bundle_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut walker = walkdir::WalkDir::new(root).sort_by_file_name().into_iter();
    while let Some(entry) = walker.next() {
        let entry = entry.map_err(|source| LoadError::Walk {
            path: root.to_path_buf(),
            source,
        })?;
        if entry.file_type().is_dir() && is_bundle_dir(entry.path()) {
            out.push(entry.path().to_path_buf());
            walker.skip_current_dir();
        }
    }
    Ok(out)
}

fn graph_mode(bundle_dir: &Path) -> GraphMode {
    let ci = bundle_dir.parent().map(|p| p.join("ci.yaml"));
    let Some(docs) = ci
        .filter(|p| p.is_file())
        .and_then(|p| read_documents(&p).ok())
    else {
        return GraphMode::Replaces;
    };
    docs.iter()
        .find_map(|d| {
            d.value
                .get("updateGraph")
                .and_then(Value::as_str)
                .and_then(GraphMode::from_wire)
        })
        .unwrap_or(GraphMode::Replaces)
}

/// Loads one bundle folder or a tree of them into a catalog.
pub fn load_tree(root: &Path) -> Result<Catalog> {
    let mut by_package: BTreeMap<String, (GraphMode, Vec<BundleDir>)> = BTreeMap::new();
    let dirs = find_bundle_dirs(root)?;
    let read = crate::documents::parallel_map(&dirs, |d| read_bundle_dir(d));
    let mut notes = Vec::new();
    for (dir, b) in dirs.iter().zip(read) {
        let mut b = b?;
        notes.append(&mut b.notes);
        let mode = graph_mode(dir);
        by_package
            .entry(b.package.clone())
            .or_insert_with(|| (mode, Vec::new()))
            .1
            .push(b);
    }
    let mut catalog = Catalog {
        notes,
        ..Catalog::default()
    };
    for (name, (mut mode, dirs)) in by_package {
        // A package whose CSVs declare no edges at all can only be ordered by version.
        if dirs
            .iter()
            .all(|d| d.facts.replaces.is_none() && d.facts.skips.is_empty())
        {
            mode = GraphMode::Semver;
        }
        let pkg = build_package(&name, mode, dirs, &mut catalog.notes)?;
        catalog.packages.insert(name.clone(), pkg);
    }
    Ok(catalog)
}

fn parsed_version(b: &BundleDir) -> semver::Version {
    semver::Version::parse(&b.facts.version).unwrap_or(semver::Version::new(0, 0, 0))
}

/// Builds a package; repairs to legacy channel graphs are described in `notes`.
pub fn build_package(
    name: &str,
    mode: GraphMode,
    mut dirs: Vec<BundleDir>,
    notes: &mut Vec<String>,
) -> Result<Package> {
    dirs.sort_by_key(parsed_version);
    let mut pkg = Package::new(name);
    pkg.default_channel = dirs
        .iter()
        .rev()
        .find_map(|d| d.default_channel.clone())
        .or_else(|| {
            let all: BTreeSet<&String> = dirs.iter().flat_map(|d| &d.channels).collect();
            (all.len() == 1)
                .then(|| all.into_iter().next().cloned())
                .flatten()
        })
        .unwrap_or_default();
    let mut members: BTreeMap<String, Vec<&BundleDir>> = BTreeMap::new();
    for d in &dirs {
        for c in &d.channels {
            members.entry(c.clone()).or_default().push(d);
        }
    }
    let by_name: BTreeMap<&str, &BundleDir> =
        dirs.iter().map(|d| (d.facts.name.as_str(), d)).collect();
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
                let versions: BTreeMap<&str, semver::Version> = dirs
                    .iter()
                    .map(|d| (d.facts.name.as_str(), parsed_version(d)))
                    .collect();
                let dropped = repair_channel(&mut channel, |n| versions.get(n).cloned());
                if !dropped.is_empty() {
                    notes.push(format!(
                        "package {name:?}, channel {channel_name:?}: left out {} (not reachable from head {:?} by replaces or skips; the SQLite-era index tolerated this, FBC does not)",
                        dropped.join(", "),
                        channel.head().map(|h| h.name.as_str()).unwrap_or_default()
                    ));
                }
            }
        }
        pkg.channels.insert(channel_name, channel);
    }
    let in_channels: BTreeSet<String> = pkg
        .channels
        .values()
        .flat_map(|c| c.entries.iter().map(|e| e.name.clone()))
        .collect();
    let mut orphans = Vec::new();
    for d in dirs {
        if !in_channels.contains(&d.bundle.name) {
            orphans.push(d.bundle.name);
            continue;
        }
        let bundle_name = d.bundle.name.clone();
        if pkg.bundles.insert(bundle_name.clone(), d.bundle).is_some() {
            return Err(LoadError::Manifest {
                path: d.path,
                message: format!("bundle {bundle_name:?} appears twice in package {name:?}"),
            });
        }
    }
    if !orphans.is_empty() {
        notes.push(format!(
            "package {name:?}: {} bundle(s) are in no channel after the repair and are left out",
            orphans.len()
        ));
    }
    Ok(pkg)
}

/// Makes a replaces-mode channel valid FBC the way the old index served it from its head:
/// the head is the highest version among the candidate heads; entries reachable from it by
/// `replaces`, and entries they skip, are kept; the rest are removed and returned.
pub fn repair_channel(
    channel: &mut Channel,
    version: impl Fn(&str) -> Option<semver::Version>,
) -> Vec<String> {
    let heads: Vec<String> = channel.heads().iter().map(|e| e.name.clone()).collect();
    let Some(head) = heads
        .iter()
        .max_by_key(|n| (version(n), (*n).clone()))
        .cloned()
    else {
        return Vec::new(); // a loop with no head: left for validation to report
    };
    let by_name: BTreeMap<&str, &ChannelEntry> = channel
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let mut keep: BTreeSet<String> = BTreeSet::new();
    let mut cur = by_name.get(head.as_str()).copied();
    while let Some(e) = cur {
        if !keep.insert(e.name.clone()) {
            break;
        }
        cur = e.replaces.as_deref().and_then(|r| by_name.get(r)).copied();
    }
    let chain: Vec<String> = keep.iter().cloned().collect();
    for name in chain {
        if let Some(e) = by_name.get(name.as_str()) {
            keep.extend(
                e.skips
                    .iter()
                    .filter(|s| by_name.contains_key(s.as_str()))
                    .cloned(),
            );
        }
    }
    let mut dropped: Vec<String> = channel
        .entries
        .iter()
        .filter(|e| !keep.contains(&e.name))
        .map(|e| e.name.clone())
        .collect();
    channel.entries.retain(|e| keep.contains(&e.name));
    dropped.sort();
    dropped
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn entry(name: &str, replaces: Option<&str>, skips: &[&str]) -> ChannelEntry {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.map(Into::into),
            skips: skips.iter().map(|s| s.to_string()).collect(),
            skip_range: None,
        }
    }

    #[rstest]
    #[case::a_valid_chain_is_untouched(vec![entry("a.2", Some("a.1"), &[]), entry("a.1", None, &[])], vec![])]
    #[case::the_older_of_two_heads_is_left_out(vec![entry("a.2", None, &[]), entry("a.1", None, &[])], vec!["a.1"])]
    #[case::entries_behind_a_skip_are_left_out(vec![entry("a.3", None, &["a.2"]), entry("a.2", Some("a.1"), &[]), entry("a.1", None, &[])], vec!["a.1"])]
    fn legacy_channels_are_cut_to_what_the_head_reaches(
        #[case] entries: Vec<ChannelEntry>,
        #[case] dropped: Vec<&str>,
    ) {
        let mut c = Channel::new("stable");
        c.entries = entries;
        let got = repair_channel(&mut c, |n| {
            semver::Version::parse(&format!("{}.0.0", n.trim_start_matches("a."))).ok()
        });
        assert_eq!(got, dropped);
        assert!(
            crate::validate::check_graph(&c).is_empty(),
            "repaired channel is valid: {:?}",
            crate::validate::check_graph(&c)
        );
    }
}
