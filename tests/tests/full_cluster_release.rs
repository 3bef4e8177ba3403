//! The release path on the full cluster (real pods), from a bare cluster: two releases built by
//! `hack/release.sh` (debug images, tags 0.0.1-test and 0.0.2-test, imported into the node's containerd; their
//! archives carry the OCI version and revision labels), then
//! 1. `uninstall.sh --delete-crds` leaves no olm-rs behind from earlier runs (the cluster is bare);
//! 2. `install.sh 0.0.1-test` (timed: the figure in docs/operations.md), then a Subscription in a namespace of its
//!    own installs the probe operator from the default catalog (an image catalog in the cluster's registry): a
//!    Succeeded CSV and its Ready pod;
//! 3. `install.sh 0.0.2-test` upgrades olm-rs: every Deployment runs the new tag, and the operator's pod is the
//!    same pod (UID), not restarted, its Deployment not rewritten (generation);
//! 4. `uninstall.sh` removes every olm-rs object (what is left is listed) and keeps the CRDs, the CSV and the
//!    operator's pod; `uninstall.sh --delete-crds` then removes the CRDs;
//! 5. the Helm chart: `helm install`, `helm upgrade` with changed values (tag, log level, replicas), `helm
//!    uninstall`, which keeps the CRDs (Helm never deletes a chart's crds/).
//!
//! The full cluster has no kube-proxy and no DNS: pods reach the API through the one DNAT rule of
//! hack/full-cluster.sh (the `kubernetes` Service), so the default catalog is made an image catalog
//! (OLM_RS_RELEASE_CATALOG_IMAGE) rather than the `registry serve` Deployment behind a Service name. Its bridge CNI
//! does not enforce NetworkPolicies: they are applied, not exercised.

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use olm_tests::release_fixture::{helm, kubectl, run};
use olm_tests::{FullCluster, await_object, dump_namespace};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const V1: &str = "0.0.1-test";
const V2: &str = "0.0.2-test";
const PACKAGE: &str = "release-probe";
const DEADLINE: Duration = Duration::from_secs(240);
const COMPONENTS: [&str; 3] = ["olm-operator", "catalog-operator", "package-server"];
const IMAGES: [&str; 4] = [
    "olm-operator",
    "catalog-operator",
    "package-server",
    "registry",
];

struct Release {
    cluster: &'static FullCluster,
    kubeconfig: String,
    dist: PathBuf,
}

/// The built releases (hundreds of MB) go with the test, whether it passed or not.
impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dist);
    }
}

impl Release {
    fn dir(&self, version: &str) -> PathBuf {
        self.dist.join(version)
    }

    /// `dist/VERSION/SCRIPT ARGS...` against the full cluster, with our kubectl.
    fn asset(&self, version: &str, script: &str, args: &[&str]) -> anyhow::Result<String> {
        let kubectl = kubectl()?;
        run(
            &self.dir(version).join(script),
            args,
            &[
                ("KUBECONFIG", Path::new(&self.kubeconfig)),
                ("KUBECTL", &kubectl),
            ],
        )
    }
}

#[tokio::test]
async fn release_installs_upgrades_and_uninstalls_olm_rs() -> anyhow::Result<()> {
    let cluster = FullCluster::bare()?;
    let client = cluster.client().await?;
    let registry_addr = cluster.oci_registry()?;
    let catalog = push_probe_catalog(&registry_addr).await?;
    let release = Release {
        cluster,
        kubeconfig: cluster.kubeconfig.display().to_string(),
        dist: std::env::temp_dir().join(format!("olm-rs-release-{}", std::process::id())),
    };
    for version in [V1, V2] {
        build_release(&release, version, &catalog, &registry_addr)?;
    }

    // 1. Bare: whatever an earlier run or `up` deployed goes.
    release.asset(V1, "uninstall.sh", &["--delete-crds"])?;
    assert_eq!(
        leftovers(&release, true)?,
        Vec::<String>::new(),
        "a bare cluster"
    );

    // 2. Install, and an operator from the default catalog.
    let started = Instant::now();
    release.asset(V1, "install.sh", &[V1])?;
    eprintln!(
        "install.sh {V1}: olm-rs ready {:.1} s after the start on a bare cluster",
        started.elapsed().as_secs_f64()
    );
    assert_images(&client, V1).await?;
    let ns = format!("release-{}", std::process::id());
    let result = operator_survives_upgrade_and_uninstall(&release, &client, &ns).await;
    if let Err(error) = &result {
        eprintln!("release phase failed: {error:#}");
        dump_namespace(&client, &ns).await;
        dump_namespace(&client, "olm").await;
    }
    result?;
    Api::<Namespace>::all(client.clone())
        .delete(&ns, &DeleteParams::background())
        .await?;

    // 5. Helm.
    helm_install_upgrade_uninstall(&release, &client, &catalog, &registry_addr).await
}

async fn operator_survives_upgrade_and_uninstall(
    release: &Release,
    client: &Client,
    ns: &str,
) -> anyhow::Result<()> {
    let pod = subscribe_and_await_pod(client, ns).await?;
    let uid = pod.uid().context("pod uid")?;
    let restarts = restart_count(&pod);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let operator_deployment = format!("{PACKAGE}-operator");
    let generation = deployments
        .get(&operator_deployment)
        .await?
        .metadata
        .generation;

    // 3. Upgrade olm-rs itself.
    release.asset(V2, "install.sh", &[V2])?;
    assert_images(client, V2).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let after = pods.get(&pod.name_any()).await?;
    assert_eq!(
        after.uid().as_deref(),
        Some(uid.as_str()),
        "the operator's pod is the same pod"
    );
    assert_eq!(
        restart_count(&after),
        restarts,
        "the operator's pod did not restart"
    );
    assert!(
        olm_tests::pod_ready(&after),
        "the operator's pod is still Ready"
    );
    assert_eq!(
        deployments
            .get(&operator_deployment)
            .await?
            .metadata
            .generation,
        generation,
        "the operator's Deployment was not rewritten"
    );
    eprintln!("olm-rs {V1} → {V2}: operator pod {uid} kept, restarts {restarts}");
    // The new olm-operator sees the CSV and keeps it Succeeded.
    await_csv_succeeded(client, ns).await?;

    // 4. Uninstall: olm-rs goes, the operator stays; the CRDs only when asked.
    release.asset(V2, "uninstall.sh", &[])?;
    assert_eq!(
        leftovers(release, false)?,
        Vec::<String>::new(),
        "olm-rs objects left by uninstall.sh"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    assert!(
        crds.get_opt("clusterserviceversions.operators.coreos.com")
            .await?
            .is_some(),
        "CRDs kept without --delete-crds"
    );
    let still = pods.get(&pod.name_any()).await?;
    assert_eq!(
        still.uid().as_deref(),
        Some(uid.as_str()),
        "uninstall.sh left the operator running"
    );
    release.asset(V2, "uninstall.sh", &["--delete-crds"])?;
    assert_eq!(
        leftovers(release, true)?,
        Vec::<String>::new(),
        "after --delete-crds"
    );
    Ok(())
}

/// Every olm-rs object still in the cluster: the `olm` namespace, the APIService, the release's cluster-wide
/// objects (ClusterRoles and bindings named olm-rs:*), the self-grants, the ClusterRoles olm-operator made for
/// objects of the olm namespace and, with `crds`, the operators.coreos.com CRDs. Listed by kubectl, which
/// tolerates kinds the API no longer serves.
fn leftovers(release: &Release, crds: bool) -> anyhow::Result<Vec<String>> {
    let kubectl = kubectl()?;
    let kc = Path::new(&release.kubeconfig);
    let get = |args: &[&str]| run(&kubectl, args, &[("KUBECONFIG", kc)]);
    let mut left = Vec::new();
    let names = get(&[
        "get",
        "namespaces,apiservices,clusterroles,clusterrolebindings,crds",
        "-o",
        "name",
    ])?;
    for name in names.lines() {
        let olm = name == "namespace/olm"
            || name.ends_with("/v1.packages.operators.coreos.com")
            || name.contains("/olm-rs:")
            || (crds
                && name.starts_with("customresourcedefinition")
                && name.ends_with(".operators.coreos.com"));
        if olm {
            left.push(name.to_string());
        }
    }
    for label in [
        "olm-rs.io/catalog-operator-grant",
        "olm-rs.io/olm-operator-grant",
        "olm-rs.io/impersonation-grant",
    ] {
        left.extend(
            get(&["get", "roles", "-A", "-l", label, "-o", "name"])?
                .lines()
                .map(String::from),
        );
    }
    // What olm-operator made for objects of the olm namespace (the olm-operators OperatorGroup's ClusterRoles).
    left.extend(
        get(&[
            "get",
            "clusterroles",
            "-l",
            "olm.owner.namespace=olm",
            "-o",
            "name",
        ])?
        .lines()
        .map(String::from),
    );
    if !crds {
        // Kept: the CRDs, as asked.
        left.retain(|n| !n.starts_with("customresourcedefinition"));
    }
    Ok(left)
}

async fn assert_images(client: &Client, version: &str) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "olm");
    for name in COMPONENTS {
        let d = deployments.get(name).await?;
        let image = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        assert_eq!(
            image,
            format!("localhost/olm-rs/{name}:{version}"),
            "{name}'s image"
        );
        let status = d.status.unwrap_or_default();
        assert_eq!(
            status.updated_replicas, status.replicas,
            "{name} rolled out"
        );
        assert!(
            status.available_replicas.unwrap_or(0) >= 1,
            "{name} available"
        );
    }
    Ok(())
}

/// hack/release.sh VERSION with debug images, the probe catalog as the default catalog, and checks of the assets
/// and of the archives' OCI labels; the archives imported into the node's containerd.
fn build_release(
    release: &Release,
    version: &str,
    catalog: &str,
    registry: &str,
) -> anyhow::Result<()> {
    let dir = release.dir(version);
    let dir_arg = dir.display().to_string();
    release.cluster.hack(
        "release.sh",
        &[version],
        &[
            ("OLM_RS_RELEASE_DIR", &dir_arg),
            ("OLM_RS_IMAGE_PROFILE", "debug"),
            ("OLM_RS_RELEASE_CATALOG_IMAGE", catalog),
            ("OLM_RS_RELEASE_INSECURE_REGISTRIES", registry),
        ],
    )?;
    for asset in ["crds.yaml", "olm-rs.yaml", "install.sh", "uninstall.sh"] {
        anyhow::ensure!(dir.join(asset).is_file(), "{asset} missing from {dir_arg}");
    }
    let revision = run(Path::new("git"), &["rev-parse", "HEAD"], &[])?;
    let mut archives = Vec::new();
    for image in IMAGES {
        let archive = dir.join("images").join(format!("{image}.oci.tar"));
        let layout = oci::layout::read_layout(&archive)?;
        let (_, config) = layout.blobs.first().context("config")?;
        let config: serde_json::Value = serde_json::from_slice(config)?;
        let labels = &config["config"]["Labels"];
        assert_eq!(
            labels["org.opencontainers.image.version"], version,
            "{image} version label"
        );
        let rev = labels["org.opencontainers.image.revision"]
            .as_str()
            .unwrap_or_default();
        assert!(
            rev.starts_with(revision.trim()),
            "{image} revision label {rev}"
        );
        assert!(
            labels["org.opencontainers.image.source"].is_string(),
            "{image} source label"
        );
        archives.push(archive.display().to_string());
    }
    let args: Vec<&str> = std::iter::once("import")
        .chain(archives.iter().map(String::as_str))
        .collect();
    release.cluster.hack("full-cluster.sh", &args, &[])?;
    Ok(())
}

/// One bundle whose operator runs the test-operator image, and a catalog image listing it, in the cluster's
/// registry; returns the catalog image's reference.
async fn push_probe_catalog(registry_addr: &str) -> anyhow::Result<String> {
    let dir = tempfile::Builder::new()
        .prefix("olm-rs-release-probe-")
        .tempdir()?;
    let root = dir.path();
    olm_tests::write_test_operator_bundle(root, PACKAGE)?;
    let registry = oci::Registry::new(&[registry_addr.to_string()]);
    let prefix = format!("{registry_addr}/release-probe");
    let published =
        oci::publish::push_tree(&registry, root, &[PACKAGE.to_string()], &prefix).await?;
    let fbc = root.join("catalog.json");
    std::fs::write(&fbc, &published.fbc)?;
    let image = format!("{prefix}/catalog:v1");
    let digest = oci::publish::push_catalog(&registry, &fbc, &image).await?;
    Ok(oci::publish::pinned(&image, &digest))
}

fn restart_count(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |c| c.iter().map(|c| c.restart_count).sum())
}

async fn await_csv_succeeded(client: &Client, ns: &str) -> anyhow::Result<()> {
    olm_tests::await_csv_succeeded(client, ns, &format!("{PACKAGE}.v1.0.0"), DEADLINE).await?;
    Ok(())
}

/// A namespace with an OperatorGroup and a Subscription to the probe package from the default catalog (the
/// global catalog namespace `olm`); the CSV Succeeded and its one pod Ready.
async fn subscribe_and_await_pod(client: &Client, ns: &str) -> anyhow::Result<Pod> {
    let pp = PostParams::default();
    olm_tests::widgets::create_namespace(client, ns).await?;
    let dynamic = |kind: &str, version: &str, plural: &str| {
        let resource = kube::api::ApiResource {
            group: "operators.coreos.com".into(),
            version: version.into(),
            api_version: format!("operators.coreos.com/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::<kube::api::DynamicObject>::namespaced_with(client.clone(), ns, &resource)
    };
    dynamic("OperatorGroup", "v1", "operatorgroups")
        .create(
            &pp,
            &serde_json::from_value(
                json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "og"}, "spec": {"targetNamespaces": [ns]}}),
            )?,
        )
        .await?;
    dynamic("Subscription", "v1alpha1", "subscriptions")
        .create(&pp, &serde_json::from_value(json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": PACKAGE},
            "spec": {"name": PACKAGE, "source": "olm-rs-catalog", "sourceNamespace": "olm", "channel": "stable"}}))?)
        .await?;
    await_csv_succeeded(client, ns).await?;
    olm_tests::await_ready_operator_pod(client, ns, PACKAGE, DEADLINE).await
}

/// The chart from a bare cluster: install with the first release's images, upgrade with changed values (the
/// second release's tag, log level, one olm-operator replica), uninstall; the CRDs stay (Helm keeps crds/), and
/// `uninstall.sh --delete-crds` leaves the cluster bare again.
async fn helm_install_upgrade_uninstall(
    release: &Release,
    client: &Client,
    catalog: &str,
    registry: &str,
) -> anyhow::Result<()> {
    let helm = helm()?;
    let kc = Path::new(&release.kubeconfig);
    let chart = release
        .cluster
        .repo_root
        .join("deploy/chart/olm-rs")
        .display()
        .to_string();
    let values = [
        format!("--set=defaultCatalog.image={catalog}"),
        format!("--set=insecureRegistries={registry}"),
    ];
    let mut install = vec![
        "install",
        "olm-rs",
        chart.as_str(),
        "--wait",
        "--timeout=5m",
        "--set=image.tag=0.0.1-test",
    ];
    install.extend(values.iter().map(String::as_str));
    let started = Instant::now();
    run(&helm, &install, &[("KUBECONFIG", kc)])?;
    eprintln!("helm install: {:.1} s", started.elapsed().as_secs_f64());
    assert_images(client, V1).await?;

    let upgrade = [
        "upgrade",
        "olm-rs",
        chart.as_str(),
        "--wait",
        "--timeout=5m",
        "--reuse-values",
        "--set=image.tag=0.0.2-test",
        "--set=logLevel=debug",
        "--set=olmOperator.replicas=1",
    ];
    run(&helm, &upgrade, &[("KUBECONFIG", kc)])?;
    assert_images(client, V2).await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "olm");
    await_object(
        &deployments,
        "olm-operator",
        DEADLINE,
        "one replica, RUST_LOG=debug",
        |d| {
            d.and_then(|d| d.spec.as_ref()).is_some_and(|s| {
                s.replicas == Some(1)
                    && s.template
                        .spec
                        .as_ref()
                        .and_then(|p| p.containers.first())
                        .is_some_and(|c| {
                            c.env.iter().flatten().any(|e| {
                                e.name == "RUST_LOG" && e.value.as_deref() == Some("debug")
                            })
                        })
            })
        },
    )
    .await?;

    run(
        &helm,
        &["uninstall", "olm-rs", "--wait", "--timeout=5m"],
        &[("KUBECONFIG", kc)],
    )?;
    // Helm deletes only what it rendered: the ClusterRoles olm-operator made for the olm-operators OperatorGroup
    // stay (docs/operations.md says how to delete them), nothing else.
    let left = leftovers(release, false)?;
    eprintln!("left by helm uninstall: {left:?}");
    let og_role =
        |n: &String| n.starts_with("clusterrole.rbac.authorization.k8s.io/olm.og.olm-operators.");
    assert!(
        left.iter().all(og_role),
        "olm-rs objects left by helm uninstall: {left:?}"
    );
    release.asset(V2, "uninstall.sh", &["--delete-crds"])?;
    assert_eq!(
        leftovers(release, true)?,
        Vec::<String>::new(),
        "bare again"
    );
    Ok(())
}
