//! Today's webhook operators end to end on the light cluster (docs/webhook-operators.md): real bundles from the
//! shared catalogs whose CSVs declare `minKubeVersion` ≥ 1.25 and `webhookdefinitions` (the conversion webhook's
//! operator declares 1.24, the newest such bundle there), served by the `registry` binary over gRPC, installed
//! by both operators. Subscription → InstallPlan Complete → CSV Succeeded (the node simulator makes Deployments
//! Available; no container runs, so nothing answers the webhooks, and nothing here sends an object they
//! intercept: each one's rules name only its operator's own resources). Each ValidatingWebhookConfiguration and
//! MutatingWebhookConfiguration carries the CA olm-operator made (`<deployment>-service-cert`, key `olmCAKey`);
//! a conversion webhook's CRDs get `spec.conversion.strategy: Webhook` pointing at the operator's Service with
//! that CA. Prints the time from CSV creation to Succeeded. The shared catalogs are the input: the tests fail
//! when they are absent.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlanPhase;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{
    Cluster, TestContext, await_csv_succeeded, await_object, shared_operators, with_namespace,
};
use std::time::{Duration, Instant};

/// One real operator and what installing it must produce.
struct Case {
    package: &'static str,
    channel: &'static str,
    /// The channel head the Subscription must end on.
    csv: &'static str,
    /// The Deployment serving the webhooks (its Secret `<deployment>-service-cert` holds the CA).
    deployment: &'static str,
    min_kube: &'static str,
    validating: usize,
    mutating: usize,
    /// CRDs a ConversionWebhook converts.
    conversion_crds: &'static [&'static str],
    /// Every CRD the bundle ships (deleted afterwards: CRDs are cluster-scoped).
    crds: &'static [&'static str],
    /// The install modes allow only AllNamespaces (a global OperatorGroup), else OwnNamespace.
    all_namespaces: bool,
}

const RSCT: Case = Case {
    package: "rsct-operator",
    channel: "alpha",
    csv: "rsct-operator.v0.0.1-alpha4",
    deployment: "rsct-operator-controller-manager",
    min_kube: "1.25.0",
    validating: 1,
    mutating: 0,
    conversion_crds: &[],
    crds: &["rscts.rsct.ibm.com"],
    all_namespaces: false,
};

const JUPYTER: Case = Case {
    package: "jupyter-notebook-validator-operator",
    channel: "stable",
    csv: "jupyter-notebook-validator-operator.v1.0.8",
    deployment: "notebook-validator-controller-manager",
    min_kube: "1.28.0",
    validating: 1,
    mutating: 1,
    conversion_crds: &[],
    crds: &["notebookvalidationjobs.mlops.mlops.dev"],
    all_namespaces: true,
};

const SELF_NODE_REMEDIATION: Case = Case {
    package: "self-node-remediation",
    channel: "stable",
    csv: "self-node-remediation.v0.13.0",
    deployment: "self-node-remediation-controller-manager",
    min_kube: "1.25.0",
    validating: 3,
    mutating: 1,
    conversion_crds: &[],
    crds: &[
        "selfnoderemediations.self-node-remediation.medik8s.io",
        "selfnoderemediationtemplates.self-node-remediation.medik8s.io",
        "selfnoderemediationconfigs.self-node-remediation.medik8s.io",
    ],
    all_namespaces: true,
};

const CLUSTER_AAS: Case = Case {
    package: "cluster-aas-operator",
    channel: "alpha",
    csv: "cluster-aas-operator.v0.1.5",
    deployment: "cluster-aas-operator-controller-manager",
    min_kube: "1.24.0",
    validating: 2,
    mutating: 1,
    conversion_crds: &[
        "clustertemplateinstances.clustertemplate.openshift.io",
        "clustertemplatequotas.clustertemplate.openshift.io",
    ],
    crds: &[
        "clustertemplates.clustertemplate.openshift.io",
        "clustertemplateinstances.clustertemplate.openshift.io",
        "clustertemplatequotas.clustertemplate.openshift.io",
        "config.clustertemplate.openshift.io",
        "clustertemplatesetup.clustertemplate.openshift.io",
    ],
    all_namespaces: true,
};

fn owner_selector(csv: &str, ns: &str) -> String {
    format!("olm.owner={csv},olm.owner.namespace={ns},olm.owner.kind=ClusterServiceVersion")
}

/// The CA olm-operator made for the deployment's webhooks.
async fn ca_of(ctx: &TestContext, deployment: &str) -> anyhow::Result<Vec<u8>> {
    let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ctx.namespace)
        .get(&format!("{deployment}-service-cert"))
        .await?;
    let ca = secret
        .data
        .unwrap_or_default()
        .get("olmCAKey")
        .map(|b| b.0.clone())
        .unwrap_or_default();
    anyhow::ensure!(
        !ca.is_empty(),
        "{deployment}-service-cert holds no olmCAKey"
    );
    Ok(ca)
}

/// Subscribe to the case's package and follow it to Succeeded; returns the CSV and the time from its creation
/// to Succeeded.
async fn install(
    ctx: &TestContext,
    case: &Case,
) -> anyhow::Result<(ClusterServiceVersion, Duration)> {
    subscription(
        ctx,
        sub_to(ctx, case.package, case.package, "community").channel(case.channel),
    )
    .await?;
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_object(&csvs, case.csv, Duration::from_secs(180), "created", |c| {
        c.is_some()
    })
    .await?;
    let created = Instant::now();
    let csv = await_csv_succeeded(
        &ctx.client,
        &ctx.namespace,
        case.csv,
        Duration::from_secs(180),
    )
    .await?;
    let took = created.elapsed();
    eprintln!("{}: CSV creation → Succeeded in {took:?}", case.csv);
    let sub = await_sub(ctx, case.package, "AtLatestKnown", |s| {
        s.state == SubscriptionState::AtLatestKnown
    })
    .await?;
    let status = sub.status.unwrap_or_default();
    assert_eq!(
        status.installed_csv, case.csv,
        "the head of channel {}",
        case.channel
    );
    let plan = status.install_plan.map(|p| p.name).unwrap_or_default();
    await_object(&plans(ctx), &plan, DEADLINE, "Complete", |ip| {
        ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
    })
    .await?;
    assert_eq!(csv.spec.min_kube_version.as_deref(), Some(case.min_kube));
    Ok((csv, took))
}

/// Every admission webhook configuration of the CSV carries the CA; the counts match the bundle's definitions.
async fn assert_admission_webhooks(ctx: &TestContext, case: &Case) -> anyhow::Result<()> {
    let ca = ca_of(ctx, case.deployment).await?;
    let params = ListParams::default().labels(&owner_selector(case.csv, &ctx.namespace));
    let validating = Api::<ValidatingWebhookConfiguration>::all(ctx.client.clone())
        .list(&params)
        .await?
        .items;
    let mutating = Api::<MutatingWebhookConfiguration>::all(ctx.client.clone())
        .list(&params)
        .await?
        .items;
    assert_eq!(
        (validating.len(), mutating.len()),
        (case.validating, case.mutating),
        "one configuration per webhook definition"
    );
    let bundles: Vec<Option<Vec<u8>>> = validating
        .iter()
        .flat_map(|c| c.webhooks.iter().flatten())
        .map(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.clone()))
        .chain(
            mutating
                .iter()
                .flat_map(|c| c.webhooks.iter().flatten())
                .map(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.clone())),
        )
        .collect();
    assert_eq!(bundles.len(), case.validating + case.mutating);
    for bundle in bundles {
        assert_eq!(
            bundle.as_ref(),
            Some(&ca),
            "a webhook without olm-operator's CA"
        );
    }
    Ok(())
}

/// Each converted CRD points at the operator's Service with the CA.
async fn assert_conversion_webhooks(ctx: &TestContext, case: &Case) -> anyhow::Result<()> {
    let ca = ca_of(ctx, case.deployment).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    for name in case.conversion_crds {
        let crd = crds.get(name).await?;
        let conversion = crd.spec.conversion.clone().unwrap_or_default();
        assert_eq!(conversion.strategy, "Webhook", "{name}");
        let config = conversion
            .webhook
            .and_then(|w| w.client_config)
            .unwrap_or_default();
        assert_eq!(config.ca_bundle.map(|b| b.0), Some(ca.clone()), "{name}");
        let service = config.service.unwrap_or_default();
        assert_eq!(
            (service.name.as_str(), service.namespace.as_str()),
            (
                format!("{}-service", case.deployment).as_str(),
                ctx.namespace.as_str()
            ),
            "{name}"
        );
    }
    Ok(())
}

/// Run `case` in a fresh namespace with a registry serving its package (and `extra` catalogs' setup).
async fn run_case(case: &'static Case, stub: Option<Catalog>) -> anyhow::Result<()> {
    let package = shared_operators()?.join(case.package);
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "current", |ctx| async move {
        let port = free_port()?;
        let _registry = RegistryProcess::start(&[&package], port)?;
        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = olm_operator(&ctx).await?;
        if case.all_namespaces {
            create(&ctx, Og::named("global").build()).await?;
        } else {
            operator_group(&ctx).await?;
        }
        address_catalog(&ctx, "community", &format!("127.0.0.1:{port}")).await?;
        if let Some(stub) = &stub {
            configmap_catalog(&ctx, "stubs", stub, 0).await?;
        }
        let result = async {
            install(&ctx, case).await?;
            assert_admission_webhooks(&ctx, case).await?;
            assert_conversion_webhooks(&ctx, case).await?;
            anyhow::Ok(())
        }
        .await;
        // CRDs are cluster-scoped: leave the plane as it was.
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let stub_crds = stub
            .iter()
            .flat_map(|s| s.ops.iter().filter_map(|o| o.owns.as_ref().map(Crd::name)));
        for name in case.crds.iter().map(|s| s.to_string()).chain(stub_crds) {
            let _ = crds.delete(&name, &DeleteParams::default()).await;
        }
        result
    })
    .await
}

#[tokio::test]
async fn a_validating_webhook_operator_installs_with_its_ca() -> anyhow::Result<()> {
    run_case(&RSCT, None).await
}

#[tokio::test]
async fn a_mutating_and_validating_webhook_operator_installs_with_its_ca() -> anyhow::Result<()> {
    run_case(&JUPYTER, None).await
}

#[tokio::test]
async fn an_operator_with_four_admission_webhooks_installs_with_its_ca() -> anyhow::Result<()> {
    run_case(&SELF_NODE_REMEDIATION, None).await
}

/// cluster-aas-operator depends on GVK argoproj.io/v1alpha1 Application (Argo CD, left out of the shared
/// catalogs for its size): a stub package in a ConfigMap catalog provides it.
#[tokio::test]
async fn a_conversion_webhook_operator_patches_its_crds_with_its_ca() -> anyhow::Result<()> {
    let mut application = Crd::new("applications", "argoproj.io", "Application");
    application.versions = vec!["v1alpha1".into()];
    let stub = Catalog::with(vec![Op::new("argocd-stub", "1.0.0").owns(&application)]);
    run_case(&CLUSTER_AAS, Some(stub)).await
}
