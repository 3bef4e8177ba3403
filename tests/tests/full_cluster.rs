//! olm-rs in-cluster as real pods (hack/full-cluster.sh: a kubelet, containerd and runc run them; deploy/ applied
//! as a user would). Skipped, saying why, where the machine cannot run real pods (not root, no overlayfs).
//!
//! One test, in phases that must run in order on the one cluster:
//! 1. both operators' pods (two replicas each) are Ready with the hardened settings, checked on the pod specs and
//!    on the running processes themselves (uid, seccomp mode, capabilities, no_new_privs, from /proc); exactly one
//!    replica of each holds its Lease; the default CatalogSource is served;
//! 2. a Subscription installs a real operator (the repo's tiny test-operator image) whose own Deployment runs as a
//!    real pod, Ready through its readiness probe;
//! 3. once a second install's InstallPlan exists, both operators lose their leader: catalog-operator's leader pod
//!    is deleted (grace period 0; the kubelet still sends SIGTERM, the Lease is released and the standby takes
//!    over), olm-operator's leader process is SIGKILLed from the host (no release; the kubelet restarts the
//!    container, which resumes the Lease it still holds, or the standby takes it once it expires); the install
//!    finishes with exactly one InstallPlan, CSV, Deployment, ReplicaSet and operator pod;
//! 4. from a catalog image in the cluster's OCI registry (bundle images pulled by catalog-operator's pods), a real
//!    community package installs and, with a custom resource present, upgrades across a `replaces` edge whose
//!    bundle changes its CRD (a new storage version): the CRD-upgrade safety check lists the custom resources,
//!    which deploy/rbac lets catalog-operator do only through the per-CRD grant it makes itself; then two more real
//!    community packages (pcc-operator, sonar-operator) install from the same catalog image, so three real packages
//!    run from bundle images in all.
//!
//! The default CatalogSource of phase 1 is itself an image catalog (hack/full-cluster.sh pushes real community
//! bundles and a catalog image to the cluster's registry).

use anyhow::Context;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, Resource};
use messages::crd::catalog_source::{CatalogSource, GrpcConnectionState};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Approval;
use messages::testing::{Catsrc, Og, Sub};
use olm_tests::{FullCluster, await_object, dump_namespace, eventually};
use serde_json::json;
use std::time::{Duration, Instant};

mod full_cluster_pod_security;
mod full_upgrade_support;

const OLM_NS: &str = "olm";
const OPERATORS: [&str; 2] = ["olm-operator", "catalog-operator"];
/// The process name (`comm`, 15 characters at most) of each operator's container.
const COMMS: [&str; 2] = ["olm-operator", "catalog-operato"];
const DEADLINE: Duration = Duration::from_secs(120);
/// Lease duration 15 s + a restart; generous for a busy 2-core machine.
const TAKEOVER_DEADLINE: Duration = Duration::from_secs(240);

#[tokio::test]
async fn olm_rs_runs_in_cluster_as_real_pods_and_survives_losing_its_leaders() -> anyhow::Result<()>
{
    let cluster = FullCluster::shared()?;
    let client = cluster.client().await?;
    operators_are_ready_and_hardened(&client).await?;
    full_cluster_pod_security::pod_security_is_enforced(&client).await?;
    default_catalog_is_served(&client).await?;
    package_manifests_are_served(cluster).await?;
    in_namespace(&client, "full-install", |ns| {
        let client = client.clone();
        async move { install_runs_a_real_operator_pod(&client, &ns).await }
    })
    .await?;
    in_namespace(&client, "full-kill", |ns| {
        let client = client.clone();
        async move { killing_the_leaders_mid_install_installs_once(&client, &ns).await }
    })
    .await?;
    in_namespace(&client, "full-upgrade", |ns| {
        let client = client.clone();
        async move { crd_changing_upgrade_from_an_image_catalog(cluster, &client, &ns).await }
    })
    .await
}

async fn in_namespace<F, Fut>(client: &Client, prefix: &str, body: F) -> anyhow::Result<()>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let name = format!("{prefix}-{}", std::process::id());
    olm_tests::widgets::create_namespace(client, &name).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let result = body(name.clone()).await;
    if let Err(error) = &result {
        eprintln!("full-cluster phase in {name} failed: {error:#}");
        dump_namespace(client, &name).await;
        dump_namespace(client, OLM_NS).await;
    } else if std::env::var_os("OLM_TEST_NO_CLEANUP").is_none() {
        namespaces
            .delete(&name, &DeleteParams::background())
            .await?;
    }
    result
}

async fn operator_pods(client: &Client, operator: &str) -> anyhow::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), OLM_NS);
    let list = pods
        .list(&ListParams::default().labels(&format!("app={operator}")))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

async fn lease_holder(client: &Client, operator: &str) -> anyhow::Result<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), OLM_NS);
    Ok(leases
        .get_opt(operator)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}

/// `/proc/<pid>/status` of every process in the pod's cgroup whose `comm` is `comm`.
fn processes_of_pod(uid: &str, comm: &str) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let Ok(cgroup) = std::fs::read_to_string(path.join("cgroup")) else {
            continue;
        };
        if !cgroup.contains(&format!("pod{uid}")) {
            continue;
        }
        let Ok(name) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        if name.trim() == comm
            && let Ok(status) = std::fs::read_to_string(path.join("status"))
        {
            found.push(status);
        }
    }
    Ok(found)
}

fn restart_count(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or(0, |c| c.restart_count)
}

fn status_field<'a>(status: &'a str, field: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .map(|v| v.trim_start_matches(':').trim())
}

async fn operators_are_ready_and_hardened(client: &Client) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), OLM_NS);
    for (operator, comm) in OPERATORS.into_iter().zip(COMMS) {
        await_object(&deployments, operator, DEADLINE, "2 ready replicas", |d| {
            d.and_then(|d| d.status.as_ref())
                .is_some_and(|s| s.ready_replicas == Some(2))
        })
        .await?;
        let pods = operator_pods(client, operator).await?;
        assert_eq!(pods.len(), 2, "{operator}: two replicas");
        for pod in &pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            assert!(olm_tests::pod_ready(pod), "{name} is Ready");
            let spec = pod.spec.as_ref().context("pod spec")?;
            let pod_sc = spec.security_context.clone().unwrap_or_default();
            assert_eq!(pod_sc.run_as_non_root, Some(true), "{name}: runAsNonRoot");
            assert_eq!(
                pod_sc.seccomp_profile.map(|p| p.type_),
                Some("RuntimeDefault".to_string()),
                "{name}: seccomp"
            );
            let container = spec.containers.first().context("container")?;
            let sc = container.security_context.clone().unwrap_or_default();
            assert_eq!(
                sc.read_only_root_filesystem,
                Some(true),
                "{name}: read-only root"
            );
            assert_eq!(
                sc.allow_privilege_escalation,
                Some(false),
                "{name}: no escalation"
            );
            assert_eq!(
                sc.capabilities.and_then(|c| c.drop),
                Some(vec!["ALL".to_string()]),
                "{name}: capabilities dropped"
            );
            assert!(
                container
                    .resources
                    .as_ref()
                    .and_then(|r| r.limits.as_ref())
                    .is_some(),
                "{name}: limits"
            );
            let env = container.env.clone().unwrap_or_default();
            assert!(
                !env.iter().any(|e| e.name == "KUBECONFIG"),
                "{name}: in-cluster config, no kubeconfig"
            );

            // The settings as the kernel applies them to the running process.
            let uid = pod.metadata.uid.clone().context("pod uid")?;
            let statuses = processes_of_pod(&uid, comm)?;
            let status = statuses
                .first()
                .with_context(|| format!("{name}: no {comm} process in the pod's cgroup"))?;
            let uids = status_field(status, "Uid").unwrap_or_default();
            assert!(
                uids.split_whitespace().all(|u| u == "65532"),
                "{name}: runs as 65532, not root ({uids})"
            );
            assert_eq!(
                status_field(status, "Seccomp"),
                Some("2"),
                "{name}: seccomp filter mode"
            );
            assert_eq!(
                status_field(status, "CapEff"),
                Some("0000000000000000"),
                "{name}: no capabilities"
            );
            assert_eq!(
                status_field(status, "NoNewPrivs"),
                Some("1"),
                "{name}: no_new_privs"
            );
        }
        // Held by one of these pods: right after a rollout (`up` on a running cluster applies a changed deploy/)
        // the old leader has released it and a new one takes it within a lease duration.
        let holder = eventually(
            DEADLINE,
            &format!("{operator}: Lease held by a current pod"),
            || async {
                let holder = lease_holder(client, operator).await?;
                Ok(holder.filter(|h| {
                    pods.iter()
                        .any(|p| p.metadata.name.as_deref() == Some(h.as_str()))
                }))
            },
        )
        .await?;
        assert!(
            pods.iter()
                .any(|p| p.metadata.name.as_deref() == Some(holder.as_str())),
            "{operator}: the Lease holder {holder} is one of its pods"
        );
    }
    Ok(())
}

async fn default_catalog_is_served(client: &Client) -> anyhow::Result<()> {
    let catalogs: Api<CatalogSource> = Api::namespaced(client.clone(), OLM_NS);
    await_object(
        &catalogs,
        "olm-rs-catalog",
        DEADLINE,
        "connection READY",
        |c| {
            c.and_then(|c| c.status.as_ref())
                .and_then(|s| s.connection_state.as_ref())
                .is_some_and(|s| s.last_observed_state == GrpcConnectionState::Ready)
        },
    )
    .await?;
    Ok(())
}

/// The PackageManifest API from package-server's pods, through the aggregator: the default catalog's package,
/// seen from another namespace (the catalog is global).
async fn package_manifests_are_served(cluster: &FullCluster) -> anyhow::Result<()> {
    eventually(
        DEADLINE,
        "kubectl get packagemanifests lists etcd",
        || async {
            let out = std::process::Command::new("kubectl")
                .args([
                    "get",
                    "packagemanifests",
                    "-n",
                    "default",
                    "-l",
                    "catalog=olm-rs-catalog",
                    "-o",
                    "name",
                ])
                .env("KUBECONFIG", &cluster.kubeconfig)
                .output()?;
            let names = String::from_utf8_lossy(&out.stdout).into_owned();
            Ok(names.lines().any(|l| l.ends_with("/etcd")).then_some(()))
        },
    )
    .await
}

/// A ConfigMap catalog with one package whose operator runs the test-operator image, hardened like ours.
fn test_catalog(package: &str) -> ConfigMap {
    let csv = olm_tests::test_operator_csv(package);
    let packages = json!([{"packageName": package, "defaultChannel": "stable",
                           "channels": [{"name": "stable", "currentCSV": format!("{package}.v1.0.0")}]}]);
    let data = [
        ("customResourceDefinitions", "[]".to_string()),
        ("clusterServiceVersions", json!([csv]).to_string()),
        ("packages", packages.to_string()),
    ];
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("test-catalog".into()),
            ..Default::default()
        },
        data: Some(data.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        ..ConfigMap::default()
    }
}

/// OperatorGroup, ConfigMap catalog and CatalogSource in `ns`, then the Subscription to `package`.
async fn subscribe(client: &Client, ns: &str, package: &str) -> anyhow::Result<()> {
    create_in(client, ns, &Og::named("og").targets(&[ns]).build()).await?;
    create_in(client, ns, &test_catalog(package)).await?;
    create_in(
        client,
        ns,
        &Catsrc::named("test-catalog")
            .config_map("test-catalog")
            .build(),
    )
    .await?;
    create_in(
        client,
        ns,
        &Sub::named(package)
            .package(package)
            .source("test-catalog", ns)
            .channel("stable")
            .approval(Approval::Automatic)
            .build(),
    )
    .await?;
    Ok(())
}

/// The CSV reaches Succeeded and its Deployment's single pod runs, Ready, on the real node.
async fn await_operator_running(
    client: &Client,
    ns: &str,
    package: &str,
    deadline: Duration,
) -> anyhow::Result<Pod> {
    olm_tests::await_csv_succeeded(client, ns, &format!("{package}.v1.0.0"), deadline).await?;
    olm_tests::await_ready_operator_pod(client, ns, package, DEADLINE).await
}

async fn install_runs_a_real_operator_pod(client: &Client, ns: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    subscribe(client, ns, "tiny").await?;
    let pod = await_operator_running(client, ns, "tiny", DEADLINE).await?;
    eprintln!(
        "Subscription to a Ready operator pod: {:?}",
        started.elapsed()
    );
    let status = pod.status.clone().context("pod status")?;
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let container = status.container_statuses.unwrap_or_default();
    let first = container.first().context("container status")?;
    assert!(
        first.ready
            && first
                .container_id
                .as_deref()
                .is_some_and(|id| id.starts_with("containerd://")),
        "a real container: {first:?}"
    );
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("olm-rs-full-node")
    );
    Ok(())
}

async fn killing_the_leaders_mid_install_installs_once(
    client: &Client,
    ns: &str,
) -> anyhow::Result<()> {
    let plans: Api<InstallPlan> = Api::namespaced(client.clone(), ns);
    subscribe(client, ns, "sturdy").await?;
    eventually(DEADLINE, "an InstallPlan", || {
        let plans = plans.clone();
        async move {
            Ok(plans
                .list(&ListParams::default())
                .await?
                .items
                .first()
                .map(|_| ()))
        }
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), OLM_NS);
    let olm_leader = lease_holder(client, "olm-operator")
        .await?
        .context("olm-operator Lease holder")?;
    let catalog_leader = lease_holder(client, "catalog-operator")
        .await?
        .context("catalog-operator Lease holder")?;
    let olm_pod = pods.get(&olm_leader).await?;
    let olm_uid = olm_pod.metadata.uid.clone().context("pod uid")?;
    let olm_restarts = restart_count(&olm_pod);
    for status in processes_of_pod(&olm_uid, "olm-operator")? {
        let pid = status_field(&status, "Pid").context("Pid")?.to_string();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()?;
        assert!(killed.success(), "kill -KILL {pid}");
    }
    pods.delete(
        &catalog_leader,
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await?;
    let killed_at = Instant::now();
    await_operator_running(client, ns, "sturdy", TAKEOVER_DEADLINE).await?;
    eprintln!(
        "install finished {:?} after both leaders were killed",
        killed_at.elapsed()
    );
    let now = lease_holder(client, "catalog-operator").await?;
    assert!(
        now.as_deref().is_some_and(|h| h != catalog_leader),
        "catalog-operator: the standby ({now:?}) replaced {catalog_leader}"
    );
    let restarted = pods.get_opt(&olm_leader).await?.map(|p| restart_count(&p));
    let now = lease_holder(client, "olm-operator").await?;
    assert!(
        restarted.is_some_and(|r| r > olm_restarts)
            || now.as_deref().is_some_and(|h| h != olm_leader),
        "olm-operator: the SIGKILLed leader {olm_leader} was restarted ({restarted:?} restarts) or replaced ({now:?})"
    );

    // Nothing was installed twice.
    let count = |n: usize, what: &str| assert_eq!(n, 1, "exactly one {what}");
    count(
        plans.list(&ListParams::default()).await?.items.len(),
        "InstallPlan",
    );
    count(listed::<ClusterServiceVersion>(client, ns).await?, "CSV");
    count(listed::<Deployment>(client, ns).await?, "Deployment");
    count(listed::<ReplicaSet>(client, ns).await?, "ReplicaSet");
    let running = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?;
    count(
        running
            .items
            .iter()
            .filter(|p| p.meta().deletion_timestamp.is_none())
            .count(),
        "operator pod",
    );
    Ok(())
}

/// Create `object` in namespace `ns`.
async fn create_in<K>(client: &Client, ns: &str, object: &K) -> anyhow::Result<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    <K as Resource>::DynamicType: Default,
{
    Ok(Api::<K>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), object)
        .await?)
}

/// How many objects of kind `K` namespace `ns` holds.
async fn listed<K>(client: &Client, ns: &str) -> anyhow::Result<usize>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    <K as Resource>::DynamicType: Default,
{
    Ok(Api::<K>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items
        .len())
}

async fn approve_plan_for(client: &Client, ns: &str, csv: &str) -> anyhow::Result<()> {
    let plans: Api<InstallPlan> = Api::namespaced(client.clone(), ns);
    let name = eventually(DEADLINE, &format!("an InstallPlan for {csv}"), || {
        let plans = plans.clone();
        async move {
            Ok(plans
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .find(|p| {
                    p.spec
                        .cluster_service_version_names
                        .iter()
                        .any(|n| n == csv)
                })
                .and_then(|p| p.metadata.name))
        }
    })
    .await?;
    olm_tests::catalog_fixture::approve_plan(&plans, &name).await?;
    Ok(())
}

async fn await_csv_succeeded(client: &Client, ns: &str, csv: &str) -> anyhow::Result<()> {
    olm_tests::await_csv_succeeded(client, ns, csv, TAKEOVER_DEADLINE).await?;
    Ok(())
}

async fn crd_changing_upgrade_from_an_image_catalog(
    cluster: &FullCluster,
    client: &Client,
    ns: &str,
) -> anyhow::Result<()> {
    use full_upgrade_support::{CHANNEL, CRD, EXTRA, NEW, OLD, PACKAGE};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{ApiResource, DynamicObject};

    let corpus = olm_tests::oci_fixture::community_bundles().context(
        "../shared/catalogs/community-operators-prod-bundles is absent (this phase's input)",
    )?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    // A CRD left by an earlier run on a reused cluster would make 0.5.0 a downgrade.
    if crds.get_opt(CRD).await?.is_some() {
        crds.delete(CRD, &DeleteParams::default()).await?;
        let crds = &crds;
        eventually(DEADLINE, "the earlier run's CRD deleted", || async move {
            Ok(crds.get_opt(CRD).await?.is_none().then_some(()))
        })
        .await?;
    }

    // Bundle images and a catalog image in the cluster's registry, pushed from the host.
    let registry_addr = cluster.oci_registry()?;
    let registry = oci::Registry::new(std::slice::from_ref(&registry_addr));
    let dir = std::env::temp_dir().join(format!("olm-rs-{ns}"));
    std::fs::create_dir_all(&dir)?;
    let root = full_upgrade_support::build_tree(&corpus, &dir)?;
    let prefix = format!("{registry_addr}/{ns}");
    let packages: Vec<String> = std::iter::once(PACKAGE)
        .chain(EXTRA.iter().map(|(package, ..)| *package))
        .map(String::from)
        .collect();
    let published = oci::publish::push_tree(&registry, &root, &packages, &prefix).await?;
    let fbc = dir.join("catalog.json");
    std::fs::write(&fbc, &published.fbc)?;
    let image = format!("{prefix}/catalog:v1");
    oci::publish::push_catalog(&registry, &fbc, &image).await?;
    std::fs::remove_dir_all(&dir)?;

    let pp = PostParams::default();
    create_in(client, ns, &Og::named("og").targets(&[ns]).build()).await?;
    create_in(client, ns, &Catsrc::named("hawtio").image(&image).build()).await?;
    create_in(
        client,
        ns,
        &Sub::named(PACKAGE)
            .package(PACKAGE)
            .source("hawtio", ns)
            .channel(CHANNEL)
            .starting_csv(OLD)
            .approval(Approval::Manual)
            .build(),
    )
    .await?;

    // 0.5.0 from its bundle image, running as a real pod.
    approve_plan_for(client, ns, OLD).await?;
    await_csv_succeeded(client, ns, OLD).await?;
    let plans: Api<InstallPlan> = Api::namespaced(client.clone(), ns);
    let first = plans.list(&ListParams::default()).await?.items;
    let lookups = serde_json::to_value(
        first
            .iter()
            .find_map(|p| p.status.as_ref().map(|s| s.bundle_lookups.clone())),
    )?;
    assert!(
        lookups.to_string().contains(&prefix),
        "the plan's bundleLookups name the bundle image in the cluster's registry: {lookups}"
    );

    // A custom resource of the old CRD version, then the upgrade whose bundle changes the CRD.
    let hawtio = ApiResource {
        group: "hawt.io".into(),
        version: "v1alpha1".into(),
        api_version: "hawt.io/v1alpha1".into(),
        kind: "Hawtio".into(),
        plural: "hawtios".into(),
    };
    let crs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &hawtio);
    crs.create(
        &pp,
        &serde_json::from_value(json!({"apiVersion": "hawt.io/v1alpha1", "kind": "Hawtio",
            "metadata": {"name": "existing"}, "spec": {"type": "Namespace", "replicas": 1}}))?,
    )
    .await?;
    approve_plan_for(client, ns, NEW).await?;
    await_csv_succeeded(client, ns, NEW).await?;

    let crd = crds.get(CRD).await?;
    let versions: Vec<(String, bool)> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.clone(), v.storage))
        .collect();
    assert_eq!(
        versions,
        vec![("v1".to_string(), true), ("v1alpha1".to_string(), false)],
        "the upgraded CRD"
    );
    assert!(
        crs.get_opt("existing").await?.is_some(),
        "the existing custom resource is kept"
    );
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    let csvs_ref = &csvs;
    eventually(DEADLINE, "the replaced CSV deleted", || async move {
        Ok(csvs_ref.get_opt(OLD).await?.is_none().then_some(()))
    })
    .await?;
    // Two more real packages from the same catalog image, Automatic approval: three in all run as real pods.
    for (package, channel, csv) in EXTRA {
        create_in(
            client,
            ns,
            &Sub::named(package)
                .package(package)
                .source("hawtio", ns)
                .channel(channel)
                .build(),
        )
        .await?;
        // The namespace also holds hawtio's Manual Subscription; whichever approval the plan gets, approving it
        // is harmless (an Automatic plan is approved already), and this phase is about installing from images.
        approve_plan_for(client, ns, csv).await?;
        await_csv_succeeded(client, ns, csv).await?;
    }
    // The safety check listed Hawtios as catalog-operator's ServiceAccount: through the grant it made itself,
    // owned by the CRD (deploy/rbac has no list on custom resources), and revoked once the check had listed (its
    // rules emptied; the object goes with the CRD).
    let grant = Api::<ClusterRole>::all(client.clone())
        .get(&format!("olm-rs:{OLM_NS}:catalog-operator:list:{CRD}"))
        .await
        .context("catalog-operator's list grant for the CRD")?;
    let owner = grant
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .next()
        .context("grant owner")?;
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CustomResourceDefinition", CRD)
    );
    assert!(
        grant.rules.unwrap_or_default().is_empty(),
        "the list grant is revoked once the safety check has listed"
    );
    Ok(())
}
