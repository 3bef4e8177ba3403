//! A real OLM v0 hands over to olm-rs, and olm-rs back to it, on the full cluster (real pods). OLM v0 (its
//! olm, catalog and package-server commands built from the operator-lifecycle-manager module at
//! OLM_V0_VERSION, run as its release runs them: Deployments in `olm`, its packageserver CSV, its CRDs) installs
//! from a catalog served by `opm serve` (behind an `address` CatalogSource; the full cluster has no DNS for
//! OLM's registry Services):
//! - `v0-auto`, Automatic approval, from a bundle image OLM v0 unpacks with a Job (util and opm containers) into
//!   a ConfigMap: Succeeded, its pod Ready;
//! - `v0-manual`, Manual approval: its InstallPlan waits in RequiresApproval, its steps references to OLM's
//!   unpacked-bundle ConfigMap.
//!
//! Then, as docs/migrating.md says, OLM v0's operators and its packageserver CSV are deleted and olm-rs is
//! deployed on the same objects: the installed operator's Deployment keeps its UID and generation, its pod and
//! ReplicaSets stay, the CSV stays Succeeded; the pending plan, approved, executes (olm-rs reads OLM's ConfigMap
//! references) and the second operator runs; no CSV, Subscription or InstallPlan is added or lost; the package
//! API is olm-rs's and answers for the catalog.
//!
//! The way back: olm-rs's Deployments, APIService and default catalog removed, OLM v0 installed again: both CSVs
//! Succeeded under OLM v0, the same objects, the same operator pods and ReplicaSets. OLM v0 rewrites each operator
//! Deployment with its own spec hash (the test prints the generations), which rolls no pod.

use anyhow::Context;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use messages::crd::catalog_source::CatalogSource;
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use messages::crd::operator_group::OperatorGroup;
use messages::crd::subscription::Subscription;
use olm_tests::{FullCluster, await_object, dump_namespace, eventually};
use olm_v0_support::{Kubectl, Record, record};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod olm_v0_support;

const DEADLINE: Duration = Duration::from_secs(300);
const NS: &str = "olm-v0-takeover";
const CATALOG: &str = "v0-catalog";
const AUTO: &str = "v0-auto";
const MANUAL: &str = "v0-manual";
const PACKAGE_API: &str = "v1.packages.operators.coreos.com";

/// `opm serve` of the test catalog on every address of the host (pods reach it at the host's address), killed
/// when dropped.
struct OpmServe(Child);

impl Drop for OpmServe {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The two packages as bundle images in the cluster's registry, and an FBC that references them by digest with
/// no inline objects (so OLM v0 unpacks them), served by `opm serve`; its address for pods.
async fn serve_catalog(registry_addr: &str, scratch: &Path) -> anyhow::Result<(OpmServe, String)> {
    let root = scratch.join("bundles");
    for package in [AUTO, MANUAL] {
        olm_tests::write_test_operator_bundle(&root, package)?;
    }
    let registry = oci::Registry::new(&[registry_addr.to_string()]);
    let published = oci::publish::push_tree(
        &registry,
        &root,
        &[AUTO.to_string(), MANUAL.to_string()],
        &format!("{registry_addr}/olm-v0-takeover"),
    )
    .await?;
    let configs = scratch.join("configs");
    std::fs::create_dir_all(&configs)?;
    std::fs::write(configs.join("catalog.json"), &published.fbc)?;
    let opm = olm_tests::peer_bin_dir("opm")?.join("opm");
    let port = std::net::TcpListener::bind("0.0.0.0:0")?
        .local_addr()?
        .port();
    let log = std::fs::File::create(scratch.join("opm.log"))?;
    let child = Command::new(opm)
        .arg("serve")
        .arg(&configs)
        .args(["-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("start opm serve")?;
    let host = registry_addr
        .rsplit_once(':')
        .map(|(h, _)| h.to_string())
        .context("registry address")?;
    let addr = format!("{host}:{port}");
    let mut served = OpmServe(child);
    let opm_log = scratch.join("opm.log");
    eventually(Duration::from_secs(120), "opm serve answers", || {
        let addr = addr.clone();
        let exited = served.0.try_wait().ok().flatten();
        let opm_log = opm_log.clone();
        async move {
            if let Some(status) = exited {
                let log = std::fs::read_to_string(&opm_log).unwrap_or_default();
                anyhow::bail!("opm serve exited with {status}: {log}");
            }
            let c = registry::client::RegistryClient::connect(
                &format!("http://{addr}"),
                registry::client::ClientOptions::default(),
            )?;
            Ok(c.list_packages().await.ok().map(|_| ()))
        }
    })
    .await?;
    Ok((served, addr))
}

fn typed<T: serde::de::DeserializeOwned>(yaml: &str) -> anyhow::Result<T> {
    serde_saphyr::from_str(yaml).context("test object")
}

/// The namespace, its OperatorGroup and the address CatalogSource in `olm`.
async fn prepare(client: &Client, catalog_addr: &str) -> anyhow::Result<()> {
    let pp = PostParams::default();
    Api::<CatalogSource>::namespaced(client.clone(), "olm")
        .create(
            &pp,
            &typed(&format!(
                "metadata: {{name: {CATALOG}}}\nspec: {{sourceType: grpc, address: '{catalog_addr}', displayName: takeover}}"
            ))?,
        )
        .await?;
    Api::<Namespace>::all(client.clone())
        .create(&pp, &typed(&format!("metadata: {{name: {NS}}}"))?)
        .await?;
    Api::<OperatorGroup>::namespaced(client.clone(), NS)
        .create(
            &pp,
            &typed(&format!(
                "metadata: {{name: og}}\nspec: {{targetNamespaces: [{NS}]}}"
            ))?,
        )
        .await?;
    Ok(())
}

/// A Subscription to `package` from the takeover catalog.
async fn subscribe(client: &Client, package: &str, approval: &str) -> anyhow::Result<()> {
    Api::<Subscription>::namespaced(client.clone(), NS)
        .create(
            &PostParams::default(),
            &typed(&format!(
                "metadata: {{name: {package}}}\nspec: {{name: {package}, channel: stable, source: {CATALOG}, \
                 sourceNamespace: olm, installPlanApproval: {approval}}}"
            ))?,
        )
        .await?;
    Ok(())
}

/// The Manual Subscription's InstallPlan once it waits for approval with its steps filled.
async fn pending_plan(client: &Client) -> anyhow::Result<InstallPlan> {
    let subs: Api<Subscription> = Api::namespaced(client.clone(), NS);
    let sub = await_object(&subs, MANUAL, DEADLINE, "an InstallPlan", |s| {
        s.and_then(|s| s.status.as_ref())
            .and_then(|s| s.install_plan_ref.as_ref())
            .is_some()
    })
    .await?;
    let plan_name = sub
        .status
        .and_then(|s| s.install_plan_ref)
        .and_then(|r| r.name)
        .context("installPlanRef name")?;
    let plans: Api<InstallPlan> = Api::namespaced(client.clone(), NS);
    await_object(
        &plans,
        &plan_name,
        DEADLINE,
        "RequiresApproval with steps",
        |p| {
            p.and_then(|p| p.status.as_ref()).is_some_and(|s| {
                s.phase == InstallPlanPhase::RequiresApproval && !s.plan.is_empty()
            })
        },
    )
    .await
}

async fn await_olm_rs_ready(client: &Client) -> anyhow::Result<()> {
    for name in ["olm-operator", "catalog-operator", "package-server"] {
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), "olm");
        await_object(&deployments, name, DEADLINE, "available", |d| {
            d.and_then(|d| d.status.as_ref())
                .is_some_and(|s| s.available_replicas.unwrap_or(0) >= 1)
        })
        .await?;
    }
    Ok(())
}

/// The package API is available and answers for `package` from the takeover catalog.
async fn package_api_answers(client: &Client, package: &str) -> anyhow::Result<()> {
    let apis: Api<APIService> = Api::all(client.clone());
    await_object(&apis, PACKAGE_API, DEADLINE, "Available", |a| {
        a.and_then(|a| a.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            })
    })
    .await?;
    let resource = kube::api::ApiResource {
        group: "packages.operators.coreos.com".into(),
        version: "v1".into(),
        api_version: "packages.operators.coreos.com/v1".into(),
        kind: "PackageManifest".into(),
        plural: "packagemanifests".into(),
    };
    let manifests: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), NS, &resource);
    eventually(
        DEADLINE,
        "the PackageManifest of the takeover catalog",
        || {
            let manifests = manifests.clone();
            async move {
                let found = manifests.get_opt(package).await.ok().flatten();
                Ok(found.filter(|m| m.data["status"]["catalogSource"] == CATALOG))
            }
        },
    )
    .await?;
    Ok(())
}

/// The pods behind the package API's Service belong to `deployment`'s ReplicaSets.
async fn package_api_served_by(client: &Client, deployment: &str) -> anyhow::Result<()> {
    let apis: Api<APIService> = Api::all(client.clone());
    let api = apis.get(PACKAGE_API).await?;
    let service = api
        .spec
        .and_then(|s| s.service)
        .context("the package APIService has no Service")?;
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(
        client.clone(),
        service.namespace.as_deref().unwrap_or("olm"),
    );
    let svc = services
        .get(service.name.as_deref().unwrap_or_default())
        .await?;
    let selector = svc
        .spec
        .and_then(|s| s.selector)
        .context("the package Service has no selector")?
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "olm");
    let behind = pods.list(&ListParams::default().labels(&selector)).await?;
    anyhow::ensure!(
        !behind.items.is_empty(),
        "no pod behind the package Service ({selector})"
    );
    for p in &behind.items {
        let owner = p
            .owner_references()
            .first()
            .map(|o| o.name.clone())
            .unwrap_or_default();
        anyhow::ensure!(
            owner.starts_with(&format!("{deployment}-")),
            "pod {} behind the package Service belongs to {owner}, not {deployment}",
            p.name_any()
        );
    }
    Ok(())
}

/// Whether a handover may write the operators' Deployments: olm-rs adopts them untouched; OLM v0 rewrites each
/// once or twice with its own `olm.deployment-spec-hash` (its behaviour, not olm-rs's), the pods staying.
#[derive(Clone, Copy, PartialEq)]
enum DeploymentWrites {
    None,
    WithoutRollout,
}

/// The operator objects a handover must keep: everything recorded before, the pods the same pods.
fn assert_kept(before: &Record, after: &Record, what: &str, writes: DeploymentWrites) {
    assert_eq!(after.csvs, before.csvs, "{what}: CSVs");
    assert_eq!(
        after.subscriptions, before.subscriptions,
        "{what}: Subscriptions"
    );
    assert_eq!(
        after.install_plans, before.install_plans,
        "{what}: InstallPlans"
    );
    assert_eq!(
        after.pods, before.pods,
        "{what}: operator pods (name → UID)"
    );
    assert_eq!(
        after.replica_sets, before.replica_sets,
        "{what}: ReplicaSets"
    );
    match writes {
        DeploymentWrites::None => assert_eq!(
            after.deployments, before.deployments,
            "{what}: Deployments (UID, generation)"
        ),
        DeploymentWrites::WithoutRollout => {
            let uids = |r: &Record| {
                r.deployments
                    .iter()
                    .map(|(n, (uid, _))| (n.clone(), uid.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(uids(after), uids(before), "{what}: Deployments (UID)");
            for (name, (_, generation)) in &after.deployments {
                let was = before.deployments.get(name).map_or(0, |(_, g)| *g);
                println!("{what}: Deployment {name} generation {was} -> {generation}");
            }
        }
    }
}

async fn await_ready(client: &Client, package: &str) -> anyhow::Result<()> {
    olm_tests::await_csv_succeeded(client, NS, &format!("{package}.v1.0.0"), DEADLINE).await?;
    olm_tests::await_ready_operator_pod(client, NS, package, DEADLINE).await?;
    Ok(())
}

/// The CSVs of `ns` without finalizers (OLM v0's and olm-rs's `csv-cleanup`), for a namespace deleted while no
/// operator runs. Nothing to do where the CRDs are gone (an earlier test deleted them).
async fn drop_csv_finalizers(client: &Client, ns: &str) -> anyhow::Result<()> {
    let no_finalizers: serde_json::Value = typed("metadata: {finalizers: null}")?;
    let csvs: Api<messages::crd::csv::ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    let listed = match csvs.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        other => other?,
    };
    for csv in listed {
        csvs.patch(
            &csv.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&no_finalizers),
        )
        .await?;
    }
    Ok(())
}

/// Earlier runs' objects gone and olm-rs's own `olm` namespace with them, so OLM v0 starts on a clean slate. A
/// run that died left CSVs with OLM v0's cleanup finalizer and no OLM v0 to remove it: it is dropped here.
async fn clean_slate(client: &Client, kubectl: &Kubectl) -> anyhow::Result<()> {
    // No operator may run to put a finalizer back: OLM v0's or olm-rs's, whichever an earlier test left.
    olm_v0_support::stop_olm_rs(kubectl)?;
    for ns in [NS, "olm"] {
        drop_csv_finalizers(client, ns).await?;
    }
    kubectl.delete("namespace", &[NS, "olm"])?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in [NS, "olm"] {
        eventually(DEADLINE, &format!("namespace {ns} deleted"), || {
            let namespaces = namespaces.clone();
            async move { Ok(namespaces.get_opt(ns).await?.is_none().then_some(())) }
        })
        .await?;
    }
    Ok(())
}

#[tokio::test]
async fn olm_v0_hands_over_to_olm_rs_and_back() -> anyhow::Result<()> {
    let cluster = FullCluster::bare()?;
    let client = cluster.client().await?;
    let kubectl = Kubectl::new(&cluster.kubeconfig)?;
    let scratch = std::env::temp_dir().join(format!("olm-v0-takeover-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = run(cluster, &client, &kubectl, &scratch).await;
    if result.is_err() {
        dump_namespace(&client, NS).await;
        dump_namespace(&client, "olm").await;
    }
    // Whatever happened, OLM v0 goes (the next full-cluster test deploys olm-rs on a cluster without it), and so
    // does the test's namespace, its CSVs without the finalizer no operator is left to remove.
    let _ = olm_v0_support::stop(&kubectl);
    let _ = drop_csv_finalizers(&client, NS).await;
    let _ = Api::<Namespace>::all(client.clone())
        .delete(NS, &DeleteParams::default())
        .await;
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

async fn run(
    cluster: &FullCluster,
    client: &Client,
    kubectl: &Kubectl,
    scratch: &Path,
) -> anyhow::Result<()> {
    clean_slate(client, kubectl).await?;
    let (archive, image) = olm_v0_support::image()?;
    cluster.hack(
        "full-cluster.sh",
        &["import", &archive.display().to_string()],
        &[],
    )?;

    // OLM v0 installs.
    olm_v0_support::install(kubectl, &image)?;
    let (_opm, catalog_addr) = serve_catalog(&cluster.oci_registry()?, scratch).await?;
    prepare(client, &catalog_addr).await?;
    // One after the other: OLM v0 resolves a namespace into one plan, which waits for approval if any of its
    // Subscriptions is Manual.
    subscribe(client, AUTO, "Automatic").await?;
    await_ready(client, AUTO).await?;
    subscribe(client, MANUAL, "Manual").await?;
    let plan = pending_plan(client).await?;
    let steps = plan
        .status
        .as_ref()
        .map(|s| s.plan.clone())
        .unwrap_or_default();
    assert!(
        steps
            .iter()
            .all(|s| s.resource.manifest.contains("\"catalogSourceName\"")),
        "OLM v0's pending plan refers to its unpacked-bundle ConfigMap in every step: {:?}",
        steps
            .iter()
            .map(|s| &s.resource.manifest)
            .collect::<Vec<_>>()
    );
    olm_tests::await_csv_succeeded(client, "olm", "packageserver", DEADLINE).await?;
    package_api_answers(client, AUTO).await?;
    package_api_served_by(client, "packageserver").await?;
    let under_v0 = record(client, NS).await?;

    // OLM v0 stopped, olm-rs deployed on the same objects.
    olm_v0_support::stop(kubectl)?;
    cluster.hack("full-cluster.sh", &["up"], &[])?;
    await_olm_rs_ready(client).await?;
    await_ready(client, AUTO).await?;
    package_api_answers(client, AUTO).await?;
    package_api_served_by(client, "package-server").await?;
    assert_kept(
        &under_v0,
        &record(client, NS).await?,
        "olm-rs took over",
        DeploymentWrites::None,
    );

    // The plan OLM v0 left, approved, executes under olm-rs.
    let plans: Api<InstallPlan> = Api::namespaced(client.clone(), NS);
    plans
        .patch(
            &plan.name_any(),
            &PatchParams::default(),
            &Patch::Merge(typed::<serde_json::Value>("spec: {approved: true}")?),
        )
        .await?;
    await_object(&plans, &plan.name_any(), DEADLINE, "Complete", |p| {
        p.and_then(|p| p.status.as_ref())
            .is_some_and(|s| s.phase == InstallPlanPhase::Complete)
    })
    .await?;
    await_ready(client, MANUAL).await?;
    let under_olm_rs = record(client, NS).await?;
    for (pod, uid) in &under_v0.pods {
        assert_eq!(
            under_olm_rs.pods.get(pod),
            Some(uid),
            "{pod}, running since OLM v0, still runs after olm-rs installed the second operator"
        );
    }
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), NS);
    for d in deployments.list(&ListParams::default()).await? {
        let writers: Vec<String> = d
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|m| {
                format!(
                    "{} {}",
                    m.manager.as_deref().unwrap_or("?"),
                    m.operation.as_deref().unwrap_or("?")
                )
            })
            .collect();
        println!(
            "under olm-rs: Deployment {} generation {} (written by {})",
            d.name_any(),
            d.metadata.generation.unwrap_or_default(),
            writers.join(", ")
        );
    }
    assert_eq!(
        under_olm_rs.install_plans, under_v0.install_plans,
        "olm-rs executed OLM v0's plan, no plan of its own"
    );

    // The way back: olm-rs removed, OLM v0 installed again.
    olm_v0_support::stop_olm_rs(kubectl)?;
    olm_v0_support::install(kubectl, &image)?;
    await_ready(client, AUTO).await?;
    await_ready(client, MANUAL).await?;
    olm_tests::await_csv_succeeded(client, "olm", "packageserver", DEADLINE).await?;
    package_api_answers(client, AUTO).await?;
    package_api_served_by(client, "packageserver").await?;
    assert_kept(
        &under_olm_rs,
        &record(client, NS).await?,
        "OLM v0 took back",
        DeploymentWrites::WithoutRollout,
    );
    Ok(())
}
