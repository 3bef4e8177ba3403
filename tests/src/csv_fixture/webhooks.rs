//! What csv_webhooks' tests share: a webhook CSV and its definitions, the group, an olm-operator per test (as
//! the admin or as its own deploy/rbac account) and the checks on what a CSV serves.

use crate::rbac::{DeployedRbac, kubeconfig_as};
use crate::{Cluster, OperatorProcess, TestContext, await_object, with_namespace};
use anyhow::Context;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, InstallModeType};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::{Csv, Og, Webhook, app_deployment};
use sha2::Digest;
use std::future::Future;
use std::time::Duration;

/// `webhook` on widgets of `<ns>.test.olm-rs.io` (CREATE at v1) served on 9443 at `/validate`, with
/// `failurePolicy: Ignore` and no side effects.
pub fn hook(webhook: Webhook, ns: &str) -> Webhook {
    webhook
        .port(9443)
        .path("/validate")
        .failure_policy("Ignore")
        .side_effects("None")
        .review_versions(&["v1"])
        .rule(
            &[&format!("{ns}.test.olm-rs.io")],
            &["v1"],
            &["widgets"],
            &["CREATE"],
        )
}

/// A CSV with one deployment `deployment` (one replica of `example.com/webhook:1`) supporting every mode but
/// MultiNamespace; add webhooks and owned APIServices to it.
pub fn csv(name: &str, deployment: &str) -> Csv {
    let mut spec = app_deployment(deployment, "server", "example.com/webhook:1");
    spec.replicas = Some(1);
    Csv::named(name)
        .display_name("Webhook operator")
        .version("1.0.0")
        .install_modes(&[
            InstallModeType::OwnNamespace,
            InstallModeType::SingleNamespace,
            InstallModeType::AllNamespaces,
        ])
        .deployment_spec(deployment, spec)
}

pub async fn create_group(ctx: &TestContext) -> anyhow::Result<OperatorGroup> {
    let og = Og::named("og").targets(&[&ctx.namespace]).build();
    Ok(
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ctx.namespace)
            .create(&PostParams::default(), &og)
            .await?,
    )
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn owner_selector(csv: &str, ns: &str) -> String {
    format!("olm.owner={csv},olm.owner.namespace={ns},olm.owner.kind=ClusterServiceVersion")
}

/// Who olm-operator runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The test plane's admin kubeconfig.
    Admin,
    /// Its deploy/rbac ServiceAccount (`crate::rbac`), which reads and replaces certificate Secrets only
    /// through the per-CSV grant it makes itself (olm-operator/src/csv/served/cert_grant.rs).
    OwnAccount,
}

/// Run `body` with an olm-operator (extra env) watching a fresh namespace; its log is printed on failure.
pub async fn with_operator<F, Fut>(
    prefix: &str,
    env: &[(&str, &str)],
    body: F,
) -> anyhow::Result<()>
where
    F: FnOnce(TestContext) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    with_operator_as(Identity::Admin, prefix, env, body).await
}

/// [`with_operator`] as `identity`.
pub async fn with_operator_as<F, Fut>(
    identity: Identity,
    prefix: &str,
    env: &[(&str, &str)],
    body: F,
) -> anyhow::Result<()>
where
    F: FnOnce(TestContext) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let cluster = Cluster::shared()?;
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    with_namespace(cluster, prefix, |ctx| async move {
        let mut env: Vec<(String, String)> = env;
        let mut args = vec!["--watched-namespaces".to_string(), ctx.namespace.clone()];
        let rbac = match identity {
            Identity::Admin => None,
            Identity::OwnAccount => {
                let rbac = DeployedRbac::apply(&ctx)?;
                let kubeconfig = kubeconfig_as(&ctx, &rbac.user("olm-operator"))?;
                env.push(("KUBECONFIG".into(), kubeconfig.display().to_string()));
                env.push((
                    "OPERATOR_SERVICE_ACCOUNT".into(),
                    rbac.account("olm-operator"),
                ));
                args.extend(["--namespace".to_string(), ctx.namespace.clone()]);
                Some(rbac)
            }
        };
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let op = OperatorProcess::start_with_env(ctx.cluster, "olm-operator", &args, &env).await?;
        let result = body(ctx.clone()).await;
        if result.is_err() {
            eprintln!(
                "===== olm-operator log (last 80 lines) =====\n{}",
                op.log_tail(80)
            );
        }
        drop(op);
        if let Some(rbac) = rbac {
            rbac.delete_cluster_objects(&ctx);
        }
        result
    })
    .await
}

/// The CA a certificate Secret holds (`olmCAKey`).
pub fn ca_of(secret: &Secret) -> anyhow::Result<Vec<u8>> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get("olmCAKey"))
        .map(|b| b.0.clone())
        .context("olmCAKey in the Secret")
}

/// The CA bundle of the first webhook of the first validating configuration `owned` selects.
pub async fn webhook_bundle(
    configs: &Api<ValidatingWebhookConfiguration>,
    owned: &ListParams,
) -> anyhow::Result<Vec<u8>> {
    configs
        .list(owned)
        .await?
        .items
        .into_iter()
        .next()
        .and_then(|c| c.webhooks?.into_iter().next()?.client_config.ca_bundle)
        .map(|b| b.0)
        .context("the webhook's CA bundle")
}

/// CSV `name` once it is Succeeded with certificates rotating later than `rotate_at` (new certificates).
pub async fn await_rotated(
    csvs: &Api<ClusterServiceVersion>,
    name: &str,
    deadline: Duration,
    rotate_at: Time,
) -> anyhow::Result<ClusterServiceVersion> {
    await_object(
        csvs,
        name,
        deadline,
        "Succeeded with new certificates",
        move |c: Option<&ClusterServiceVersion>| {
            c.is_some_and(|c| {
                c.phase() == CsvPhase::Succeeded
                    && c.status.as_ref().and_then(|s| s.certs_rotate_at.clone())
                        > Some(rotate_at.clone())
            })
        },
    )
    .await
}

/// The CA hash (`olmcahash`) on the deployment's pod template.
pub fn ca_hash_of_deployment(d: &Deployment) -> Option<String> {
    d.spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get("olmcahash")
        .cloned()
}

/// Nothing was created for a CSV that failed validation.
pub async fn assert_nothing_served(
    ctx: &TestContext,
    csv: &str,
    service: &str,
) -> anyhow::Result<()> {
    let ns = ctx.namespace.as_str();
    let secret = Api::<Secret>::namespaced(ctx.client.clone(), ns)
        .get_opt(&format!("{service}-cert"))
        .await?;
    let svc = Api::<Service>::namespaced(ctx.client.clone(), ns)
        .get_opt(service)
        .await?;
    let params = ListParams::default().labels(&owner_selector(csv, ns));
    let validating = Api::<ValidatingWebhookConfiguration>::all(ctx.client.clone())
        .list(&params)
        .await?;
    let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), ns)
        .list(&params)
        .await?;
    assert!(secret.is_none(), "{csv}: no Secret");
    assert!(svc.is_none(), "{csv}: no Service");
    assert!(
        validating.items.is_empty(),
        "{csv}: no webhook configuration"
    );
    assert!(deployment.items.is_empty(), "{csv}: no deployment");
    Ok(())
}

/// A CRD `widgets.<group>` with versions v1 (stored) and v2, both served.
pub fn crd(group: &str) -> CustomResourceDefinition {
    crate::widgets::widget_crd(group, &["v1", "v2"])
}
