//! OLM v0 itself on the full cluster, for the takeover test: its image (hack/peers.sh builds the commands from
//! the operator-lifecycle-manager module and assembles the image without a container engine), its CRDs from that
//! module's deploy/chart/crds, and its Deployments and packageserver CSV from `olm.yaml` beside this file. Also
//! what the test records of a namespace to prove that nothing rolled, was deleted or was duplicated.

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Subscription;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `bash hack/peers.sh ARGS...` from the repo root: the last line it prints.
fn peers(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("bash")
        .arg(repo_root().join("hack/peers.sh"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .context("run hack/peers.sh")?;
    if !out.status.success() {
        bail!(
            "hack/peers.sh {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string())
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// OLM v0's image archive (localhost/olm-v0/olm:VERSION) and its name.
pub fn image() -> anyhow::Result<(PathBuf, String)> {
    let archive = PathBuf::from(peers(&["image", "olm-v0"])?);
    let version = peers(&["version", "olm-v0"])?;
    Ok((archive, format!("localhost/olm-v0/olm:{version}")))
}

/// The CRDs OLM v0's release ships (deploy/chart/crds of its module).
pub fn crds_dir() -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from(peers(&["source", "olm-v0"])?).join("deploy/chart/crds");
    anyhow::ensure!(dir.is_dir(), "{} is not a folder", dir.display());
    Ok(dir)
}

/// kubectl (of the pinned Kubernetes release) against one cluster.
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// kubectl from `hack/control-plane.sh build`, against `kubeconfig`.
    pub fn new(kubeconfig: &Path) -> anyhow::Result<Self> {
        let out = Command::new("bash")
            .arg(repo_root().join("hack/control-plane.sh"))
            .arg("build")
            .output()
            .context("hack/control-plane.sh build")?;
        let dir = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_string();
        Ok(Self {
            bin: PathBuf::from(dir).join("kubectl"),
            kubeconfig: kubeconfig.to_path_buf(),
        })
    }

    /// `kubectl ARGS...`, its stdout.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new(&self.bin)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .output()
            .with_context(|| format!("run kubectl {}", args.join(" ")))?;
        if !out.status.success() {
            bail!(
                "kubectl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Delete `names` of `kind` (in `olm` unless cluster-scoped), absent ones ignored, waiting up to 180 s.
    pub fn delete(&self, kind: &str, names: &[&str]) -> anyhow::Result<()> {
        let cluster_scoped = matches!(kind, "apiservice" | "namespace");
        let mut args = if cluster_scoped {
            vec!["delete", kind]
        } else {
            vec!["-n", "olm", "delete", kind]
        };
        args.extend_from_slice(names);
        args.extend_from_slice(&["--ignore-not-found", "--wait=true", "--timeout=180s"]);
        self.run(&args).map(|_| ())
    }
}

/// OLM v0 installed as its release installs it: its CRDs, then olm.yaml with `image`.
pub fn install(kubectl: &Kubectl, image: &str) -> anyhow::Result<()> {
    let crds = crds_dir()?.display().to_string();
    kubectl.run(&["apply", "--server-side", "--force-conflicts", "-f", &crds])?;
    kubectl.run(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "-f",
        &crds,
    ])?;
    let manifest = include_str!("olm.yaml").replace("OLM_IMAGE", image);
    let file = std::env::temp_dir().join(format!("olm-v0-{}.yaml", std::process::id()));
    std::fs::write(&file, manifest)?;
    let applied = kubectl.run(&["apply", "-f", &file.display().to_string()]);
    let _ = std::fs::remove_file(&file);
    applied.map(|_| ())
}

/// OLM v0 stopped as docs/migrating.md says: first its packageserver CSV deleted while OLM v0 still runs (it owns
/// the package API's Deployment, Service and APIService, and OLM v0 removes its cleanup finalizer), then its two
/// operators' Deployments (olm-rs's have the same names).
pub fn stop(kubectl: &Kubectl) -> anyhow::Result<()> {
    kubectl.delete("csv", &["packageserver"])?;
    kubectl.delete("deployment", &["olm-operator", "catalog-operator"])
}

/// olm-rs stopped for the way back, as `uninstall.sh` removes it but keeping the namespace and its objects: its
/// APIService, Deployments and default catalog (its image holds no `opm` for OLM v0's registry Pod to run).
pub fn stop_olm_rs(kubectl: &Kubectl) -> anyhow::Result<()> {
    kubectl.delete("apiservice", &["v1.packages.operators.coreos.com"])?;
    kubectl.delete(
        "deployment",
        &[
            "olm-operator",
            "catalog-operator",
            "package-server",
            "olm-rs-catalog",
        ],
    )?;
    kubectl.delete("catalogsource", &["olm-rs-catalog"])
}

/// What a namespace holds that a takeover must keep: each Deployment's UID and generation, its ReplicaSets,
/// the operator pods, and the OLM objects by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub deployments: BTreeMap<String, (String, i64)>,
    pub replica_sets: Vec<String>,
    pub pods: BTreeMap<String, String>,
    pub csvs: Vec<String>,
    pub subscriptions: Vec<String>,
    pub install_plans: Vec<String>,
}

/// The names of every `K` in `ns`, sorted.
async fn names<K>(client: &Client, ns: &str) -> anyhow::Result<Vec<String>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let mut names: Vec<String> = Api::<K>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(|o| o.name_any())
        .collect();
    names.sort();
    Ok(names)
}

pub async fn record(client: &Client, ns: &str) -> anyhow::Result<Record> {
    let lp = ListParams::default();
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&lp)
        .await?
        .into_iter()
        .map(|d| {
            let g = d.metadata.generation.unwrap_or_default();
            (d.name_any(), (d.uid().unwrap_or_default(), g))
        })
        .collect();
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&lp)
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
        .collect();
    Ok(Record {
        deployments,
        replica_sets: names::<ReplicaSet>(client, ns).await?,
        pods,
        csvs: names::<ClusterServiceVersion>(client, ns).await?,
        subscriptions: names::<Subscription>(client, ns).await?,
        install_plans: names::<InstallPlan>(client, ns).await?,
    })
}
