//! What the release tests share: the repo's paths, kubectl and helm (the test peer) run as commands, and
//! rendered manifests keyed by kind, namespace and name.
//! Each test crate uses part of it.

use anyhow::{Context, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `program args...`, its stdout, or an error with its stderr.
pub fn run(program: &Path, args: &[&str], env: &[(&str, &Path)]) -> anyhow::Result<String> {
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .current_dir(repo_root())
        .output()
        .with_context(|| format!("run {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "{} {}: {}{}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// kubectl of the pinned release: `hack/control-plane.sh build` builds it if needed and prints its folder.
pub fn kubectl() -> anyhow::Result<PathBuf> {
    let out = run(Path::new("bash"), &["hack/control-plane.sh", "build"], &[])?;
    let dir = out
        .lines()
        .last()
        .context("control-plane.sh build printed nothing")?;
    Ok(PathBuf::from(dir.trim()).join("kubectl"))
}

/// helm, the test peer (hack/peers.sh, HELM_VERSION of hack/versions.env).
pub fn helm() -> anyhow::Result<PathBuf> {
    Ok(crate::peer_bin_dir("helm")?.join("helm"))
}

/// The objects of a multi-document YAML stream, keyed `Kind namespace/name` (empty documents dropped).
pub fn objects(yaml: &str) -> anyhow::Result<BTreeMap<String, Value>> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).context("parse rendered YAML")?;
    let mut out = BTreeMap::new();
    for doc in docs.into_iter().filter(|d| d.is_object()) {
        let key = format!(
            "{} {}/{}",
            doc["kind"].as_str().unwrap_or_default(),
            doc["metadata"]["namespace"].as_str().unwrap_or_default(),
            doc["metadata"]["name"].as_str().unwrap_or_default()
        );
        if out.insert(key.clone(), doc).is_some() {
            bail!("{key} rendered twice");
        }
    }
    Ok(out)
}
