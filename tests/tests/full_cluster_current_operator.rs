//! A current operator's webhooks, called by the real API server (full cluster: kubelet, containerd, runc; Kubernetes
//! of `hack/versions.env`). cluster-aas-operator 0.1.5 from `../shared/catalogs/community-operators-prod-bundles`
//! declares a ConversionWebhook for two CRDs, a MutatingAdmissionWebhook and two ValidatingAdmissionWebhooks
//! (docs/webhook-operators.md; its `minKubeVersion` 1.24 is the newest of the shared bundles that convert). Its
//! own images cannot be pulled offline, so its Deployment runs the repo's `test-webhook` image on the CSV's
//! `targetPort`, which answers on the CSV's own webhook paths; everything else is the bundle's: the CRDs, the
//! webhook definitions, the permissions, the install modes. Its CRDs ship one version, and the API server converts
//! nothing between a version and itself, so `clustertemplateinstances` gets a second served version (`v1alpha2`,
//! the same schema) to read through.
//!
//! The API server calls each webhook through what olm-operator made (Service, serving certificate, `caBundle`s,
//! the CRD's conversion): a create labelled `olm-rs.io/deny` is denied by the validating webhook, an allowed create
//! comes back annotated by the mutating one, and a read at `v1alpha2` is converted by the conversion webhook
//! (annotated too). Prints the time from CSV creation to `Succeeded`.

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{Container, ContainerPort, EnvVar, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::{OperatorGroup, OperatorGroupSpec};
use olm_tests::test_webhook::{
    TEST_WEBHOOK_IMAGE, https_ready_probe, non_root_pod, restricted_container,
};
use olm_tests::{
    FullCluster, await_csv_succeeded, await_webhook_denial, dump_namespace, eventually,
    shared_catalogs,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

const BUNDLE: &str =
    "community-operators-prod-bundles/operators/cluster-aas-operator/0.1.5/manifests";
const CSV_FILE: &str = "cluster-aas-operator.clusterserviceversion.yaml";
const GROUP: &str = "clustertemplate.openshift.io";
const CONVERTED_CRD: &str = "clustertemplateinstances.clustertemplate.openshift.io";
const DEADLINE: Duration = Duration::from_secs(180);

fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    serde_saphyr::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The bundle's CRDs, `clustertemplateinstances` with a second served version of the same schema.
fn bundle_crds(dir: &Path) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !name.starts_with("clustertemplate.openshift.io_") {
            continue;
        }
        let mut crd: CustomResourceDefinition = read_yaml(&path)?;
        if crd.metadata.name.as_deref() == Some(CONVERTED_CRD) {
            let mut second = crd
                .spec
                .versions
                .first()
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("{name}: no version"))?;
            second.name = "v1alpha2".into();
            second.storage = false;
            crd.spec.versions.push(second);
        }
        crds.push(crd);
    }
    anyhow::ensure!(
        crds.len() == 5,
        "expected the bundle's 5 CRDs, read {}",
        crds.len()
    );
    Ok(crds)
}

/// The operator's Deployment, served by test-webhook on the webhooks' target port (its own images are not
/// pullable offline; the sidecar kube-rbac-proxy is left out for the same reason).
fn webhook_pod(spec: &mut DeploymentSpec, port: i32) {
    let container = Container {
        name: "manager".into(),
        image: Some(TEST_WEBHOOK_IMAGE.into()),
        image_pull_policy: Some("IfNotPresent".into()),
        env: Some(vec![EnvVar {
            name: "WEBHOOK_PORT".into(),
            value: Some(port.to_string()),
            ..EnvVar::default()
        }]),
        ports: Some(vec![ContainerPort {
            container_port: port,
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(https_ready_probe(port)),
        security_context: Some(restricted_container()),
        ..Container::default()
    };
    if let Some(pod) = spec.template.spec.as_mut() {
        pod.containers = vec![container];
        pod.security_context = Some(non_root_pod());
    }
}

fn instance(
    ns: &str,
    name: &str,
    labels: BTreeMap<String, String>,
) -> anyhow::Result<DynamicObject> {
    let mut object = DynamicObject::new(name, &instances_resource("v1alpha1")).within(ns);
    object.metadata.labels = Some(labels);
    object.data = serde_json::from_str(r#"{"spec": {"clusterTemplateRef": "none"}}"#)?;
    Ok(object)
}

fn instances_resource(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, version, "ClusterTemplateInstance"),
        "clustertemplateinstances",
    )
}

fn annotation(object: &DynamicObject, key: &str) -> Option<String> {
    object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key).cloned())
}

#[tokio::test]
async fn a_current_operators_webhooks_are_called_by_the_api_server() -> anyhow::Result<()> {
    let manifests = shared_catalogs()?.join(BUNDLE);
    let cluster = FullCluster::shared()?;
    let client = cluster.client().await?;
    let ns = format!("full-current-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    // The operator is global: while an earlier run's namespace terminates, its CSV is still copied into every
    // namespace, this one's too. Wait until none is left.
    eventually(DEADLINE, "earlier runs' namespaces gone", || {
        let namespaces = namespaces.clone();
        async move {
            let left = namespaces.list(&kube::api::ListParams::default()).await?;
            let earlier = left.items.iter().any(|n| {
                n.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("full-current-"))
            });
            Ok((!earlier).then_some(()))
        }
    })
    .await?;
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.clone()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    let crds = bundle_crds(&manifests)?;
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let result = proof(&client, &ns, &manifests, &crds).await;
    if let Err(error) = &result {
        eprintln!("current-operator proof failed: {error:#}");
        dump_namespace(&client, &ns).await;
    }
    if std::env::var_os("OLM_TEST_NO_CLEANUP").is_none() {
        for crd in &crds {
            let _ = crd_api
                .delete(
                    crd.metadata.name.as_deref().unwrap_or_default(),
                    &DeleteParams::default(),
                )
                .await;
        }
        let _ = namespaces.delete(&ns, &DeleteParams::background()).await;
    }
    result
}

async fn proof(
    client: &kube::Client,
    ns: &str,
    manifests: &Path,
    crds: &[CustomResourceDefinition],
) -> anyhow::Result<()> {
    let pp = PostParams::default();
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        // A run before this one may have left its CRDs terminating: wait until they are gone.
        let name = crd.metadata.name.clone().unwrap_or_default();
        let _ = crd_api.delete(&name, &DeleteParams::default()).await;
        eventually(DEADLINE, &format!("{name} gone"), || {
            let (api, name) = (crd_api.clone(), name.clone());
            async move { Ok(api.get_opt(&name).await?.is_none().then_some(())) }
        })
        .await?;
        crd_api.create(&pp, crd).await?;
    }
    // Conversion webhooks are for operators installed in AllNamespaces mode only (the CSV supports only that).
    let group = OperatorGroup::new("global", OperatorGroupSpec::default());
    Api::<OperatorGroup>::namespaced(client.clone(), ns)
        .create(&pp, &group)
        .await?;

    let mut csv: ClusterServiceVersion = read_yaml(&manifests.join(CSV_FILE))?;
    let hooks = csv.spec.webhook_definitions.clone().unwrap_or_default();
    anyhow::ensure!(
        hooks.len() == 4,
        "the bundle declares 4 webhooks, read {}",
        hooks.len()
    );
    let port = hooks
        .first()
        .and_then(|h| h.target_port.clone())
        .map_or(9443, |p| match p {
            IntOrString::Int(port) => port,
            IntOrString::String(_) => 9443,
        });
    if let Some(install) = csv.spec.install.spec.as_mut() {
        for deployment in &mut install.deployments {
            webhook_pod(&mut deployment.spec, port);
        }
    }
    let name = csv.metadata.name.clone().unwrap_or_default();
    csv.metadata.namespace = Some(ns.to_string());
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    csvs.create(&pp, &csv).await?;
    await_csv_succeeded(client, ns, &name, DEADLINE).await?;
    eprintln!(
        "full cluster: {name} (1 conversion, 1 mutating, 2 validating webhooks): CSV creation -> Succeeded in {:?}",
        start.elapsed()
    );

    // Validating: the API server calls it on create (the first calls may race the endpoints becoming ready).
    let v1alpha1: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &instances_resource("v1alpha1"));
    let denied = instance(
        ns,
        "denied",
        BTreeMap::from([("olm-rs.io/deny".to_string(), "true".to_string())]),
    )?;
    let refusal = await_webhook_denial(
        &v1alpha1,
        &denied,
        "an instance labelled olm-rs.io/deny=true",
    )
    .await?;
    eprintln!("denied by the validating webhook: {refusal}");

    // Mutating: the allowed create comes back with the webhook's annotation.
    let created = v1alpha1
        .create(&pp, &instance(ns, "allowed", BTreeMap::new())?)
        .await?;
    anyhow::ensure!(
        annotation(&created, "olm-rs.io/mutated-by").as_deref() == Some("test-webhook"),
        "the mutating webhook's patch is missing: {:?}",
        created.metadata.annotations
    );

    // Conversion: olm-operator pointed the CRD at the operator's Service; a read at v1alpha2 goes through it.
    let crd = crd_api.get(CONVERTED_CRD).await?;
    let conversion = crd.spec.conversion.as_ref();
    anyhow::ensure!(
        conversion.map(|c| c.strategy.as_str()) == Some("Webhook"),
        "{CONVERTED_CRD}: conversion {conversion:?}"
    );
    let ca = conversion
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref())
        .and_then(|c| c.ca_bundle.as_ref())
        .map_or(0, |b| b.0.len());
    anyhow::ensure!(
        ca > 0,
        "{CONVERTED_CRD}: the conversion webhook has no caBundle"
    );
    let v1alpha2: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &instances_resource("v1alpha2"));
    let read = v1alpha2.get("allowed").await?;
    anyhow::ensure!(
        read.types.as_ref().map(|t| t.api_version.as_str())
            == Some("clustertemplate.openshift.io/v1alpha2"),
        "read at v1alpha2: {:?}",
        read.types
    );
    anyhow::ensure!(
        annotation(&read, "olm-rs.io/converted-by").as_deref() == Some("test-webhook"),
        "not converted by the webhook: {:?}",
        read.metadata.annotations
    );
    let _ = v1alpha1.delete("allowed", &DeleteParams::default()).await;
    csvs.delete(&name, &DeleteParams::default()).await?;
    Ok(())
}
