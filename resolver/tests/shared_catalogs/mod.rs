//! Load the shared test catalogs (`../shared/catalogs`) as resolver snapshots: every file-based catalog
//! (grouped by directory; the community FBC is one catalog; read by `catalog::fbc`) and every tree of
//! registry+v1 bundle directories (`<root>/<package>/<version>/{manifests,metadata}`) as one catalog per root.
#![allow(
    dead_code,
    reason = "shared by the corpus test and the benchmark, which use different parts"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use catalog::documents::{Document, read_documents};
use resolver::{
    BundleEntry, CatalogKey, CatalogSnapshot, Gvk, PackageInfo, Property, from_catalog, requirement,
};
use serde_json::Value;

/// `$OLM_RS_SHARED/catalogs`, or `<crate>/../../shared/catalogs`; `None` when absent.
pub fn catalogs_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("OLM_RS_SHARED") {
        Some(shared) => PathBuf::from(shared).join("catalogs"),
        None => std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
        )
        .join("../../shared/catalogs"),
    };
    dir.is_dir().then_some(dir)
}

/// One catalog found on disk, or why it could not be loaded.
pub struct Loaded {
    pub label: String,
    pub snapshot: Result<CatalogSnapshot, String>,
}

fn yaml_docs(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "json") {
        // A JSON stream of documents.
        return serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: {e}", path.display()));
    }
    serde_saphyr::from_multiple::<Value>(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn is_fbc(docs: &[Document]) -> bool {
    docs.iter().any(|d| {
        matches!(
            d.value.get("schema").and_then(Value::as_str),
            Some("olm.package" | "olm.channel" | "olm.bundle")
        )
    })
}

/// The FBC root a file belongs to: `<root>/<package>/<file>` groups by `<root>`; any other file is its own catalog.
fn fbc_group(root: &Path, path: &Path, docs: &[Document]) -> PathBuf {
    let packages: Vec<&str> = docs
        .iter()
        .map(|d| &d.value)
        .filter(|d| d.get("schema").and_then(Value::as_str) == Some("olm.package"))
        .filter_map(|d| d.get("name").and_then(Value::as_str))
        .collect();
    // `.../catalogs/<version>/<package>/catalog.yaml`: one catalog per `<version>`.
    let below_root = |a: &&Path| a.starts_with(root) && *a != root;
    if let Some(v) = path.ancestors().filter(below_root).find(|a| {
        a.parent()
            .filter(below_root)
            .is_some_and(|p| p.file_name().is_some_and(|n| n == "catalogs"))
    }) {
        return v.to_owned();
    }
    let dir = path.parent();
    match (dir, packages.as_slice()) {
        (Some(dir), [one]) if dir.file_name().is_some_and(|n| n == *one) => {
            dir.parent().unwrap_or(dir).to_owned()
        }
        _ => path.to_owned(),
    }
}

/// The tree a bundle directory belongs to: the nearest `operators` ancestor, else `<root>` of `<root>/<package>/<version>`.
fn bundle_group(bundle: &Path) -> Option<PathBuf> {
    bundle
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "operators"))
        .map(Path::to_owned)
        .or_else(|| Some(bundle.parent()?.parent()?.to_owned()))
}

/// `updateGraph: semver-mode` in the package's `ci.yaml`: the pipeline orders the channel by version.
fn semver_mode(bundle: &Path) -> bool {
    bundle
        .ancestors()
        .map(|a| a.join("ci.yaml"))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|t| {
            t.lines()
                .any(|l| l.trim_start().starts_with("updateGraph:") && l.contains("semver-mode"))
        })
}

fn key_for(label: &str) -> CatalogKey {
    let name: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    CatalogKey::new(name.trim_matches('-').to_owned(), "olm")
}

/// Every catalog under `root`.
pub fn load_all(root: &Path) -> Vec<Loaded> {
    let mut fbc_groups: BTreeMap<PathBuf, Vec<Document>> = BTreeMap::new();
    let mut bundle_roots: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    let mut errors = Vec::new();
    for entry in walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.ends_with("metadata/annotations.yaml") {
            if let Some((bundle, group)) = path
                .parent()
                .and_then(Path::parent)
                .and_then(|b| Some((b, bundle_group(b)?)))
            {
                bundle_roots
                    .entry(group)
                    .or_default()
                    .push(bundle.to_owned());
            }
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str());
        if !matches!(ext, Some("yaml" | "yml" | "json"))
            || path
                .components()
                .any(|c| c.as_os_str() == "manifests" || c.as_os_str() == "metadata")
        {
            continue;
        }
        let Ok(docs) = read_documents(path) else {
            continue;
        };
        if !is_fbc(&docs) {
            continue;
        }
        fbc_groups
            .entry(fbc_group(root, path, &docs))
            .or_default()
            .extend(docs);
    }
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut out = Vec::new();
    for (dir, docs) in fbc_groups {
        let label = format!("fbc:{}", rel(&dir));
        let snapshot = catalog::fbc::from_documents(docs)
            .map_err(|e| e.to_string())
            .and_then(|c| {
                from_catalog::snapshot(key_for(&label), 0, &c).map_err(|e| e.to_string())
            });
        out.push(Loaded { label, snapshot });
    }
    for (dir, bundles) in bundle_roots {
        let label = format!("bundles:{}", rel(&dir));
        let key = key_for(&label);
        let snapshot = bundle_dirs(key, &bundles, &mut errors);
        out.push(Loaded { label, snapshot });
    }
    out
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

fn crd_gvks(list: Option<&Value>) -> Vec<Gvk> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let name = d.get("name")?.as_str()?;
            let group = name.split_once('.').map(|(_, g)| g).unwrap_or("");
            Some(Gvk::new(
                group,
                d.get("version")?.as_str()?,
                d.get("kind")?.as_str()?,
            ))
        })
        .collect()
}

fn apiservice_gvks(list: Option<&Value>) -> Vec<Gvk> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| {
            Some(Gvk::new(
                d.get("group")?.as_str()?,
                d.get("version")?.as_str()?,
                d.get("kind")?.as_str()?,
            ))
        })
        .collect()
}

/// A registry+v1 bundle tree as one catalog (the way `opm` would serve it).
fn bundle_dirs(
    key: CatalogKey,
    dirs: &[PathBuf],
    errors: &mut Vec<String>,
) -> Result<CatalogSnapshot, String> {
    let mut bundles = Vec::new();
    let mut defaults: BTreeMap<String, String> = BTreeMap::new();
    for dir in dirs {
        match one_bundle(dir) {
            Ok((entries, default)) => {
                if let (Some(first), Some(d)) = (entries.first(), default) {
                    defaults.insert(first.package.clone(), d);
                } else if let Some(first) = entries.first() {
                    defaults
                        .entry(first.package.clone())
                        .or_insert_with(|| first.channel.clone());
                }
                bundles.extend(entries);
            }
            Err(e) => errors.push(e),
        }
    }
    link_semver_mode(&mut bundles, &semver_packages(dirs));
    if bundles.is_empty() {
        return Err(format!(
            "no readable bundle ({} errors, first: {:?})",
            errors.len(),
            errors.first()
        ));
    }
    let packages = defaults
        .into_iter()
        .map(|(name, default_channel)| PackageInfo {
            name,
            default_channel,
        })
        .collect();
    Ok(CatalogSnapshot {
        key,
        priority: 0,
        packages,
        bundles,
    })
}

fn semver_packages(dirs: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = dirs
        .iter()
        .filter(|d| semver_mode(d))
        .filter_map(|d| yaml_docs(&d.join("metadata/annotations.yaml")).ok())
        .filter_map(|docs| {
            docs.first()
                .and_then(|d| {
                    str_at(
                        d,
                        &[
                            "annotations",
                            "operators.operatorframework.io.bundle.package.v1",
                        ],
                    )
                })
                .map(str::to_owned)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// In semver-mode packages each entry without `replaces` replaces the next lower version of its channel.
fn link_semver_mode(bundles: &mut [BundleEntry], packages: &[String]) {
    let mut by_channel: BTreeMap<(String, String), Vec<(semver::Version, String)>> =
        BTreeMap::new();
    for b in bundles.iter().filter(|b| packages.contains(&b.package)) {
        by_channel
            .entry((b.package.clone(), b.channel.clone()))
            .or_default()
            .push((b.version.clone(), b.name.clone()));
    }
    for list in by_channel.values_mut() {
        list.sort();
    }
    for b in bundles
        .iter_mut()
        .filter(|b| packages.contains(&b.package) && b.replaces.is_none())
    {
        let Some(list) = by_channel.get(&(b.package.clone(), b.channel.clone())) else {
            continue;
        };
        b.replaces = list
            .iter()
            .rfind(|(v, _)| v < &b.version)
            .map(|(_, n)| n.clone());
    }
}

fn one_bundle(dir: &Path) -> Result<(Vec<BundleEntry>, Option<String>), String> {
    let ann_docs = yaml_docs(&dir.join("metadata/annotations.yaml"))?;
    let ann = ann_docs
        .first()
        .and_then(|d| d.get("annotations"))
        .ok_or("annotations.yaml lacks annotations")?;
    let package = str_at(ann, &["operators.operatorframework.io.bundle.package.v1"])
        .ok_or("no package annotation")?
        .to_owned();
    let channels: Vec<String> = str_at(ann, &["operators.operatorframework.io.bundle.channels.v1"])
        .unwrap_or("")
        .split(',')
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    let default = str_at(
        ann,
        &["operators.operatorframework.io.bundle.channel.default.v1"],
    )
    .map(str::to_owned);
    let mut csv = None;
    for e in std::fs::read_dir(dir.join("manifests"))
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
    {
        let p = e.path();
        if !p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            continue;
        }
        let Ok(docs) = yaml_docs(&p) else { continue };
        if let Some(d) = docs
            .into_iter()
            .find(|d| d.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"))
        {
            csv = Some(d);
            break;
        }
    }
    let csv = csv.ok_or_else(|| format!("{}: no ClusterServiceVersion", dir.display()))?;
    let name = str_at(&csv, &["metadata", "name"])
        .ok_or("CSV without name")?
        .to_owned();
    let version_text =
        str_at(&csv, &["spec", "version"]).ok_or_else(|| format!("{name}: no spec.version"))?;
    let version = semver::Version::parse(version_text)
        .map_err(|e| format!("{name}: version `{version_text}`: {e}"))?;
    let spec = csv.get("spec").cloned().unwrap_or(Value::Null);
    let crds = spec.get("customresourcedefinitions");
    let apis = spec.get("apiservicedefinitions");
    let mut provided = crd_gvks(crds.and_then(|c| c.get("owned")));
    provided.extend(apiservice_gvks(apis.and_then(|c| c.get("owned"))));
    let mut required = crd_gvks(crds.and_then(|c| c.get("required")));
    required.extend(apiservice_gvks(apis.and_then(|c| c.get("required"))));
    let mut properties = Vec::new();
    if let Ok(docs) = yaml_docs(&dir.join("metadata/dependencies.yaml")) {
        for d in docs
            .iter()
            .filter_map(|d| d.get("dependencies"))
            .filter_map(Value::as_array)
            .flatten()
        {
            if let (Some(t), Some(v)) = (d.get("type").and_then(Value::as_str), d.get("value")) {
                properties.extend(requirement::dependency_as_property(t, v));
            }
        }
    }
    if let Ok(docs) = yaml_docs(&dir.join("metadata/properties.yaml")) {
        for d in docs
            .iter()
            .filter_map(|d| d.get("properties"))
            .filter_map(Value::as_array)
            .flatten()
        {
            if let Ok(p) = serde_json::from_value::<Property>(d.clone()) {
                properties.push(p);
            }
        }
    }
    let skips = spec
        .get("skips")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let entries = channels
        .iter()
        .map(|channel| BundleEntry {
            name: name.clone(),
            package: package.clone(),
            channel: channel.clone(),
            version: version.clone(),
            replaces: str_at(&spec, &["replaces"])
                .filter(|r| !r.is_empty())
                .map(str::to_owned),
            skips: skips.clone(),
            skip_range: str_at(&csv, &["metadata", "annotations", "olm.skipRange"])
                .map(str::to_owned),
            provided_apis: provided.clone(),
            required_apis: required.clone(),
            properties: properties.clone(),
            bundle_path: dir.display().to_string(),
            deprecated: false,
        })
        .collect();
    Ok((entries, default))
}
