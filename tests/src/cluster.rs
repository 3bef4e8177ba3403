//! The shared control plane of a test run: `hack/control-plane.sh up` (idempotent: reuses a running one) with the
//! node simulator, then our CRDs from `deploy/crds` created or replaced (or, with `OLM_RS_CRDS=<dir>`, the CRDs
//! in that folder, e.g. OLM's own published ones from `hack/olm-crds.sh`). Each test builds its own kube `Client`
//! (a client is bound to the tokio runtime that created it, and every `#[tokio::test]` has its own runtime).

use crate::binaries::bin_path;
use anyhow::{Context, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::conditions;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock, PoisonError};

pub struct Cluster {
    pub kubeconfig: PathBuf,
    pub repo_root: PathBuf,
    /// The variables naming this plane for `hack/control-plane.sh` (empty: the shared plane).
    plane_env: Vec<(String, String)>,
}

static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
static CHAOS: Mutex<ChaosHolds> = Mutex::new(ChaosHolds {
    count: 0,
    cluster: None,
});

/// The tests holding the chaos plane, and the plane while any does.
struct ChaosHolds {
    count: usize,
    cluster: Option<&'static Cluster>,
}

/// A hold on the chaos tests' private control plane ([`Cluster::chaos`]). When the last hold of the process is
/// dropped (a test's end, passed, failed or panicking), the plane is stopped (`hack/control-plane.sh down`: etcd,
/// kube-apiserver, kube-controller-manager, the node simulator and the plane's registry), unless
/// `OLM_RS_KEEP_CLUSTER` is set (to look at it after a failure).
pub struct ChaosPlane {
    cluster: &'static Cluster,
}

impl ChaosPlane {
    pub fn cluster(&self) -> &'static Cluster {
        self.cluster
    }
}

impl Drop for ChaosPlane {
    fn drop(&mut self) {
        let mut holds = CHAOS.lock().unwrap_or_else(PoisonError::into_inner);
        holds.count = holds.count.saturating_sub(1);
        if holds.count > 0 {
            return;
        }
        holds.cluster = None;
        if std::env::var_os("OLM_RS_KEEP_CLUSTER").is_some() {
            eprintln!("OLM_RS_KEEP_CLUSTER is set: the chaos control plane is left running");
            return;
        }
        if let Err(e) = self.cluster.plane("down") {
            eprintln!("stopping the chaos control plane: {e:#}");
        }
    }
}

impl Cluster {
    /// Start or attach to the control plane once per process.
    pub fn shared() -> anyhow::Result<&'static Cluster> {
        SHARED
            .get_or_init(|| Self::start(&[]).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow::anyhow!("control plane: {e}"))
    }

    /// Start or attach to the chaos tests' private control plane: the one `OLM_RS_CHAOS_PLANE` names
    /// (`crate::chaos_plane`; unset: the first), never the shared one. The plane is held while the returned
    /// [`ChaosPlane`] lives; the last hold dropped stops it, whether its test passed or failed.
    pub fn chaos() -> anyhow::Result<ChaosPlane> {
        let mut holds = CHAOS.lock().unwrap_or_else(PoisonError::into_inner);
        let cluster = match holds.cluster {
            Some(cluster) => cluster,
            None => {
                let cache = std::env::var("HOME")
                    .map(|h| PathBuf::from(h).join(".cache/olm-rs"))
                    .context("HOME")?;
                let selector = std::env::var("OLM_RS_CHAOS_PLANE").ok();
                let plane = crate::chaos_plane::chaos_plane_env(selector.as_deref())?;
                let env: Vec<(String, String)> = plane
                    .iter()
                    .map(|(k, v)| {
                        let v = if k.ends_with("_DIR") {
                            cache.join(v).display().to_string()
                        } else {
                            v.to_string()
                        };
                        (k.to_string(), v)
                    })
                    .collect();
                let started = Self::start(&env).context("chaos control plane")?;
                // One per start of the plane in a test process (a test binary starts it once or a few times).
                let cluster: &'static Cluster = Box::leak(Box::new(started));
                holds.cluster = Some(cluster);
                cluster
            }
        };
        holds.count += 1;
        Ok(ChaosPlane { cluster })
    }

    fn start(env: &[(String, String)]) -> anyhow::Result<Cluster> {
        let repo_root = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
        )
        .parent()
        .context("repo root")?
        .to_path_buf();
        let script = repo_root.join("hack/control-plane.sh");
        let node_sim = bin_path("node-sim")?;
        let out = Command::new("bash")
            .arg(&script)
            .arg("up")
            .env("OLM_RS_NODE_SIM", &node_sim)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .context("run hack/control-plane.sh up")?;
        let kubeconfig = kubeconfig_printed_by(&out, "hack/control-plane.sh up")?;
        let cluster = Cluster {
            kubeconfig,
            repo_root,
            plane_env: env.to_vec(),
        };
        // Callers are usually inside a test's runtime, which must not be blocked on: use a thread of our own.
        let cluster = std::thread::scope(|scope| {
            scope
                .spawn(move || -> anyhow::Result<Cluster> {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    rt.block_on(cluster.install_crds())?;
                    Ok(cluster)
                })
                .join()
                .map_err(|_| anyhow::anyhow!("CRD installation panicked"))?
        })?;
        Ok(cluster)
    }

    /// `hack/control-plane.sh <command>` on this plane (e.g. `restart-apiserver`, a chaos fault). Refused on the
    /// shared plane, which other tests use at the same time. Blocks: call it from a blocking task.
    pub fn plane(&self, command: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.plane_env.is_empty(),
            "hack/control-plane.sh {command}: only on a private plane"
        );
        let out = Command::new("bash")
            .arg(self.repo_root.join("hack/control-plane.sh"))
            .arg(command)
            .envs(self.plane_env.iter().map(|(k, v)| (k, v)))
            .output()
            .with_context(|| format!("run hack/control-plane.sh {command}"))?;
        if !out.status.success() {
            bail!(
                "hack/control-plane.sh {command} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    pub async fn client(&self) -> anyhow::Result<Client> {
        let kc = Kubeconfig::read_from(&self.kubeconfig)?;
        let config =
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        Ok(Client::try_from(config)?)
    }

    /// The folder of the CRDs the suite runs on: `OLM_RS_CRDS` when set (OLM's published CRDs: `hack/olm-crds.sh`
    /// prints their folder), else our generated `deploy/crds`.
    pub fn crds_dir(&self) -> PathBuf {
        match std::env::var_os("OLM_RS_CRDS") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => self.repo_root.join("deploy/crds"),
        }
    }

    /// Create each CRD of [`Self::crds_dir`], or replace it when it exists and differs (CRDs are too large for
    /// client-side apply's last-applied annotation), then wait until all are Established.
    async fn install_crds(&self) -> anyhow::Result<()> {
        let client = self.client().await?;
        let api: Api<CustomResourceDefinition> = Api::all(client);
        let dir = self.crds_dir();
        let mut names = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("read {}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        files.sort();
        for path in files
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        {
            let text = std::fs::read_to_string(&path)?;
            let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)
                .with_context(|| format!("parse {}", path.display()))?;
            let name = crd.metadata.name.clone().context("CRD without a name")?;
            match api.get_opt(&name).await? {
                None => {
                    api.create(&PostParams::default(), &crd)
                        .await
                        .with_context(|| format!("create CRD {name}"))?;
                }
                Some(existing) if existing.spec != crd.spec => {
                    let mut replacement = crd.clone();
                    replacement.metadata.resource_version =
                        existing.metadata.resource_version.clone();
                    api.replace(&name, &PostParams::default(), &replacement)
                        .await
                        .with_context(|| format!("replace CRD {name}"))?;
                }
                Some(_) => {}
            }
            names.push(name);
        }
        for name in names {
            let established = kube::runtime::wait::await_condition(
                api.clone(),
                &name,
                conditions::is_crd_established(),
            );
            tokio::time::timeout(crate::DEFAULT_DEADLINE, established)
                .await
                .with_context(|| format!("CRD {name} not Established in time"))??;
        }
        Ok(())
    }

    /// `kubectl` against this cluster, returning stdout (fails with stderr).
    pub fn kubectl(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .output()
            .context("run kubectl")?;
        if !out.status.success() {
            bail!(
                "kubectl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// The kubeconfig path a plane's `up` (`what`) printed last, once it succeeded.
pub(crate) fn kubeconfig_printed_by(out: &Output, what: &str) -> anyhow::Result<PathBuf> {
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(PathBuf::from(
        stdout
            .lines()
            .last()
            .context("no kubeconfig path printed")?
            .trim(),
    ))
}
