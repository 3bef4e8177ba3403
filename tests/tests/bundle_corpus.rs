//! Every bundle of the shared corpus (`../shared/catalogs`: the 614 registry+v1 bundle folders of
//! community-operators-prod among them, and each version folder of the package-manifest trees) pushed to the
//! local registry as a bundle image, then taken through what catalog-operator does with a resolved bundle: pull,
//! digest check, unpack, Go-rule decoding (`catalog_operator::bundle_content`) and InstallPlan step building. It
//! prints how many plan and, by reason, how many are refused; every refusal must be one listed in [`REFUSED`],
//! with the reason OLM gives for it too.
//!
//! Needs the registry of `hack/control-plane.sh up` (no API server).

use catalog_operator::bundle_content::Source;
use catalog_operator::unpacker::pull_bundle;
use futures::StreamExt;
use oci::Auth;
use olm_tests::oci_fixture::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bundles of the corpus that OLM refuses too, by folder (relative to `shared/catalogs`), with the words their
/// refusal must contain.
const REFUSED: &[(&str, &str)] = &[
    // A package-manifest version folder of operator-registry's testdata that also holds the 0.9.0 CSV. Assembled
    // into a bundle image it has two CSVs; the registry+v1 format allows one per bundle.
    (
        "operator-registry-testdata/manifests/etcd/0.9.2",
        "2 ClusterServiceVersions; a bundle has exactly one",
    ),
];

/// One bundle folder to push: a registry+v1 bundle, or one assembled from a package-manifest version folder.
struct Candidate {
    /// Relative to `shared/catalogs`, for the report.
    label: String,
    dir: PathBuf,
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// registry+v1 bundle folders (`manifests/` beside `metadata/annotations.yaml`).
fn bundle_folders(root: &Path) -> anyhow::Result<Vec<Candidate>> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    let mut out = Vec::new();
    for f in files {
        let is_annotations = f.file_name().is_some_and(|n| n == "annotations.yaml")
            && f.parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "metadata");
        let Some(dir) = f.parent().and_then(Path::parent) else {
            continue;
        };
        if is_annotations && dir.join("manifests").is_dir() {
            out.push(Candidate {
                label: dir.strip_prefix(root)?.display().to_string(),
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(out)
}

/// Each version folder of a package-manifest tree (`<pkg>.package.yaml` beside version folders), assembled into a
/// bundle folder under `work` with the package's name and channels as its annotations.
fn package_manifest_folders(root: &Path, work: &Path) -> anyhow::Result<Vec<Candidate>> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    let mut out = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with(".package.yaml"))
    {
        let docs = catalog::documents::parse_documents(&std::fs::read_to_string(f)?)
            .map_err(anyhow::Error::msg)?;
        let Some(doc) = docs.first() else { continue };
        let package = doc["packageName"].as_str().unwrap_or_default().to_string();
        let channels: Vec<&str> = doc["channels"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        let Some(pkg_dir) = f.parent() else { continue };
        let mut versions: Vec<PathBuf> = std::fs::read_dir(pkg_dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        versions.sort();
        for version in versions {
            let label = version.strip_prefix(root)?.display().to_string();
            let dir = work.join(label.replace('/', "_"));
            std::fs::create_dir_all(dir.join("manifests"))?;
            std::fs::create_dir_all(dir.join("metadata"))?;
            for manifest in std::fs::read_dir(&version)?.filter_map(|e| e.ok()) {
                let path = manifest.path();
                if catalog::documents::is_manifest_file(&path) {
                    std::fs::copy(&path, dir.join("manifests").join(manifest.file_name()))?;
                }
            }
            std::fs::write(
                dir.join("metadata/annotations.yaml"),
                format!(
                    "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
                     operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
                     operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
                     operators.operatorframework.io.bundle.package.v1: {package}\n  \
                     operators.operatorframework.io.bundle.channels.v1: {}\n",
                    channels.join(",")
                ),
            )?;
            out.push(Candidate { label, dir });
        }
    }
    Ok(out)
}

/// What became of one bundle.
enum Outcome {
    Planned { steps: usize },
    Refused { reason: String },
}

async fn try_one(
    registry: &oci::Registry,
    prefix: &str,
    index: usize,
    c: &Candidate,
) -> anyhow::Result<Outcome> {
    let reference = format!("{prefix}/b{index}:latest");
    let digest = oci::publish::push_bundle(registry, &c.dir, &reference).await?;
    let image = oci::publish::pinned(&reference, &digest);
    let unpacked = match pull_bundle(registry, &image, &Auth::Anonymous).await {
        Ok(u) => u,
        Err(e) => {
            return Ok(Outcome::Refused {
                reason: format!("{}: {e}", e.reason()),
            });
        }
    };
    let (chosen, filled) = resolved(&unpacked, &image, None);
    assert_eq!(
        filled.source,
        Source {
            image: Some(image.clone()),
            digest: Some(digest),
            files: unpacked.files.clone(),
        }
    );
    Ok(
        match catalog_operator::steps::bundle_steps(
            &filled.bundle,
            &chosen,
            &filled.source,
            "corpus",
            &BTreeMap::new(),
        ) {
            Ok(steps) => Outcome::Planned { steps: steps.len() },
            Err(e) => Outcome::Refused {
                reason: e.to_string(),
            },
        },
    )
}

#[tokio::test]
async fn every_shared_bundle_plans_or_is_refused_as_olm_refuses_it() -> anyhow::Result<()> {
    let root = olm_tests::shared_catalogs()?;
    let work = std::env::temp_dir().join(format!("olm-rs-bundle-corpus-{}", std::process::id()));
    let mut candidates = bundle_folders(&root)?;
    let registry_v1 = candidates.len();
    candidates.extend(package_manifest_folders(&root, &work)?);
    assert!(
        registry_v1 >= 614,
        "registry+v1 bundle folders found: {registry_v1}"
    );
    let registry = oci::Registry::default();
    let prefix = format!("{}/corpus-{}", registry_addr(), std::process::id());
    let outcomes: Vec<(usize, anyhow::Result<Outcome>)> =
        futures::stream::iter(candidates.iter().enumerate())
            .map(|(i, c)| {
                let registry = &registry;
                let prefix = &prefix;
                async move { (i, try_one(registry, prefix, i, c).await) }
            })
            .buffer_unordered(8)
            .collect()
            .await;
    std::fs::remove_dir_all(&work).ok();

    let mut planned = 0usize;
    let mut steps = 0usize;
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    for (i, outcome) in outcomes {
        let label = candidates[i].label.clone();
        match outcome? {
            Outcome::Planned { steps: n } => {
                planned += 1;
                steps += n;
            }
            Outcome::Refused { reason } => {
                refused.insert(label, reason);
            }
        }
    }
    println!(
        "bundle corpus: {} bundles ({registry_v1} registry+v1 folders, {} package-manifest versions): {planned} planned ({steps} steps), {} refused",
        candidates.len(),
        candidates.len() - registry_v1,
        refused.len()
    );
    for (label, reason) in &refused {
        println!("  refused {label}: {reason}");
    }
    let unexpected: Vec<String> = refused
        .iter()
        .filter(|(label, reason)| {
            !REFUSED
                .iter()
                .any(|(l, words)| l == label && reason.contains(words))
        })
        .map(|(l, r)| format!("{l}: {r}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "refused and not listed with that reason:\n{}",
        unexpected.join("\n")
    );
    let missing: Vec<&str> = REFUSED
        .iter()
        .filter(|(l, _)| !refused.contains_key(*l))
        .map(|(l, _)| *l)
        .collect();
    assert!(
        missing.is_empty(),
        "listed as refused but planned: {missing:?}"
    );
    Ok(())
}
