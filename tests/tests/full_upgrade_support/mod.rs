//! The bundle pair of the full cluster's CRD-changing upgrade: hawtio-operator 0.5.0 → 1.0.0 from the community
//! bundles (its `replaces` edge; the Hawtio CRD gains `v1` as its storage version, `v1alpha1` stays served), the
//! only such pair in the corpus without webhooks. Copied into a temporary tree with two changes, both needed
//! offline: each Deployment runs the local test-operator image (the operator's own image is on docker.io/quay.io,
//! which this machine cannot reach), and 0.5.0 is also listed in `stable-v1` (upstream it is only in `alpha`, so
//! its edge to 1.0.0 crosses channels). CRDs, RBAC, install modes and `replaces` are the corpus's, unchanged.

use anyhow::Context;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub const PACKAGE: &str = "hawtio-operator";
pub const OLD: &str = "hawtio-operator.v0.5.0";
pub const NEW: &str = "hawtio-operator.v1.0.0";
pub const CHANNEL: &str = "stable-v1";
pub const CRD: &str = "hawtios.hawt.io";
const VERSIONS: [&str; 2] = ["0.5.0", "1.0.0"];
/// Two more community packages installed from the same catalog image beside the upgrade, so that three real
/// packages install from bundle images in the pods: (package, channel, its head CSV). Every version of each is
/// copied. Both support OwnNamespace, and every CSV of theirs is valid under OLM's published CRD schema (odoo-operator
/// and apicurito, which the default catalog lists, are not: a CSV without `resources[].name` is refused).
pub const EXTRA: [(&str, &str, &str); 2] = [
    ("pcc-operator", "stable", "pcc-operator.v0.2.0"),
    ("sonar-operator", "stable", "sonar-operator.v3.3.0"),
];
const TEST_IMAGE: &str = "localhost/olm-rs/test-operator:dev";

/// The pod template of the test operator in place of the operator's (its ServiceAccount kept).
fn runnable(pod_spec: &Value, container: &str) -> Value {
    let mut spec = json!({
        "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": container, "image": TEST_IMAGE, "imagePullPolicy": "IfNotPresent",
            "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
            "resources": {"requests": {"cpu": "5m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}}}]
    });
    if let Some(sa) = pod_spec.get("serviceAccountName") {
        spec["serviceAccountName"] = sa.clone();
    }
    spec
}

/// A CSV whose Deployments run the test operator.
fn rewrite_csv(mut csv: Value) -> anyhow::Result<Value> {
    let deployments = csv
        .pointer_mut("/spec/install/spec/deployments")
        .and_then(Value::as_array_mut)
        .context("CSV without deployments")?;
    for d in deployments {
        let pod = d
            .pointer_mut("/spec/template/spec")
            .context("deployment without a pod template")?;
        let name = pod
            .pointer("/containers/0/name")
            .and_then(Value::as_str)
            .unwrap_or("operator")
            .to_string();
        *pod = runnable(pod, &name);
    }
    Ok(csv)
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// `corpus/<package>/<version>` copied to `root/<package>/<version>`, each CSV's Deployments running the test
/// operator.
fn copy_rewritten(
    corpus: &Path,
    root: &Path,
    package: &str,
    version: &str,
) -> anyhow::Result<PathBuf> {
    let from = corpus.join(package).join(version);
    let to = root.join(package).join(version);
    copy_dir(&from, &to).with_context(|| format!("copy {}", from.display()))?;
    for entry in std::fs::read_dir(to.join("manifests"))? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        let doc: Value =
            serde_saphyr::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
        if doc["kind"] == "ClusterServiceVersion" {
            // JSON is YAML: the bundle reader takes it as is.
            std::fs::write(&path, serde_json::to_vec_pretty(&rewrite_csv(doc)?)?)?;
        }
    }
    Ok(to)
}

/// The pair and the [`EXTRA`] packages copied from `corpus` (the community `operators/` folder) into
/// `dir/bundles`, rewritten as the header says. Returns the tree's root (for `push_tree`).
pub fn build_tree(corpus: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let root = dir.join("bundles");
    for version in VERSIONS {
        let to = copy_rewritten(corpus, &root, PACKAGE, version)?;
        if version == "0.5.0" {
            let annotations = to.join("metadata/annotations.yaml");
            let text = std::fs::read_to_string(&annotations)?;
            let changed = text.replace(
                "operators.operatorframework.io.bundle.channels.v1: alpha",
                "operators.operatorframework.io.bundle.channels.v1: alpha,stable-v1",
            );
            anyhow::ensure!(changed != text, "0.5.0's channels annotation not found");
            std::fs::write(&annotations, changed)?;
        }
    }
    for (package, ..) in EXTRA {
        for entry in std::fs::read_dir(corpus.join(package))? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                let version = entry.file_name().to_string_lossy().into_owned();
                copy_rewritten(corpus, &root, package, &version)?;
            }
        }
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rewritten_csv_runs_the_test_operator_and_keeps_its_service_account() {
        let csv = json!({"kind": "ClusterServiceVersion", "spec": {"install": {"spec": {"deployments": [
            {"name": "op", "spec": {"template": {"spec": {"serviceAccountName": "sa", "volumes": [{"name": "v"}],
                "containers": [{"name": "hawtio-operator", "image": "quay.io/x:1", "command": ["op"]}]}}}}]}}}});
        let out = rewrite_csv(csv).expect("rewrite");
        let pod = &out["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], "sa");
        assert_eq!(pod["containers"][0]["name"], "hawtio-operator");
        assert_eq!(pod["containers"][0]["image"], TEST_IMAGE);
        assert!(pod["containers"][0].get("command").is_none());
        assert!(pod.get("volumes").is_none());
    }
}
