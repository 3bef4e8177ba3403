//! The full local cluster (`hack/full-cluster.sh`: kube-scheduler, containerd, runc, bridge CNI and a kubelet,
//! with olm-rs deployed from deploy/ as real pods), for the tests that need real pods. Started (or attached to)
//! once per test process. On a machine that cannot run it (not root, no overlayfs) it is an error naming why:
//! those tests fail there, never pass unseen; `hack/test.sh` leaves them out on such a machine and says so.

use anyhow::{Context, bail};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

pub struct FullCluster {
    pub kubeconfig: PathBuf,
    pub repo_root: PathBuf,
}

static SHARED: OnceLock<Result<FullCluster, String>> = OnceLock::new();
static BARE: OnceLock<Result<FullCluster, String>> = OnceLock::new();

/// `bash` without the variables cargo sets for this test's package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...):
/// `up` builds the images with a nested `cargo build`, and build scripts that watch those variables (ring's
/// does) would otherwise be rebuilt there, and again by the next plain `cargo` command, with all that depends
/// on them (minutes on 2 cores, each time).
fn script_command() -> Command {
    let mut bash = Command::new("bash");
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let package_var = key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || matches!(
                key,
                "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "OUT_DIR"
            );
        if package_var {
            bash.env_remove(key);
        }
    }
    bash
}

impl FullCluster {
    /// The running full cluster, or why this machine cannot run one.
    pub fn shared() -> anyhow::Result<&'static FullCluster> {
        SHARED
            .get_or_init(|| Self::start(false).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow::anyhow!("full cluster: {e}"))
    }

    /// The running full cluster started without deploying olm-rs (`OLM_RS_FULL_BARE=1`; on a cluster already
    /// running, whatever is deployed stays, for the caller to remove), or why this machine cannot run one.
    pub fn bare() -> anyhow::Result<&'static FullCluster> {
        BARE.get_or_init(|| Self::start(true).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow::anyhow!("full cluster (bare): {e}"))
    }

    /// `bash hack/SCRIPT ARGS...` (with `envs`) without the test's cargo variables; its stdout, or an error with
    /// its stderr.
    pub fn hack(
        &self,
        script: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> anyhow::Result<String> {
        let out = script_command()
            .arg(self.repo_root.join("hack").join(script))
            .args(args)
            .envs(envs.iter().copied())
            .output()
            .with_context(|| format!("run hack/{script}"))?;
        if !out.status.success() {
            bail!(
                "hack/{script} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn start(bare: bool) -> anyhow::Result<FullCluster> {
        let repo_root = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
        )
        .parent()
        .context("repo root")?
        .to_path_buf();
        let script = repo_root.join("hack/full-cluster.sh");
        let check = script_command()
            .arg(&script)
            .arg("check")
            .output()
            .context("run hack/full-cluster.sh check")?;
        if !check.status.success() {
            bail!(
                "this machine cannot run real pods ({}); hack/test.sh leaves the full-cluster tests out here",
                String::from_utf8_lossy(&check.stdout).trim()
            );
        }
        let mut up = script_command();
        up.arg(&script).arg("up");
        if bare {
            up.env("OLM_RS_FULL_BARE", "1");
        } else {
            up.env_remove("OLM_RS_FULL_BARE");
        }
        let out = up.output().context("run hack/full-cluster.sh up")?;
        let kubeconfig = crate::cluster::kubeconfig_printed_by(&out, "hack/full-cluster.sh up")?;
        Ok(FullCluster {
            kubeconfig,
            repo_root,
        })
    }

    /// Deploy olm-rs again (`hack/full-cluster.sh up` on the running cluster, which waits for the operators'
    /// rollout) with olm-operator issuing certificates valid `seconds`, or OLM's two years with `None`.
    pub fn set_cert_validity(&self, seconds: Option<u64>) -> anyhow::Result<()> {
        let mut up = script_command();
        up.arg(self.repo_root.join("hack/full-cluster.sh"))
            .arg("up")
            .env_remove("OLM_RS_CERT_VALIDITY_SECONDS");
        if let Some(s) = seconds {
            up.env("OLM_RS_CERT_VALIDITY_SECONDS", s.to_string());
        }
        let out = up.output().context("run hack/full-cluster.sh up")?;
        if !out.status.success() {
            bail!(
                "hack/full-cluster.sh up (certificate validity {seconds:?}) failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// host:port of this cluster's OCI registry (`hack/full-cluster.sh registry`: plain HTTP on the host's
    /// address, where pods reach it).
    pub fn oci_registry(&self) -> anyhow::Result<String> {
        let out = script_command()
            .arg(self.repo_root.join("hack/full-cluster.sh"))
            .arg("registry")
            .output()
            .context("run hack/full-cluster.sh registry")?;
        if !out.status.success() {
            bail!(
                "hack/full-cluster.sh registry: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    pub async fn client(&self) -> anyhow::Result<Client> {
        let kc = Kubeconfig::read_from(&self.kubeconfig)?;
        let config =
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        Ok(Client::try_from(config)?)
    }
}

/// Runs `body` in the full cluster's namespace `ns`, created first: when it fails, says that `what` failed and
/// dumps the namespace; then deletes the namespace (kept with `OLM_TEST_NO_CLEANUP`).
pub async fn with_full_namespace<F, Fut>(
    client: &Client,
    ns: &str,
    what: &str,
    body: F,
) -> anyhow::Result<()>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    crate::widgets::create_namespace(client, ns).await?;
    let result = body().await;
    if let Err(error) = &result {
        eprintln!("{what} failed: {error:#}");
        crate::dump_namespace(client, ns).await;
    }
    if std::env::var_os("OLM_TEST_NO_CLEANUP").is_none() {
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(client.clone());
        let _ = namespaces
            .delete(ns, &kube::api::DeleteParams::background())
            .await;
    }
    result
}
