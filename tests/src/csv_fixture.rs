//! What the CSV cluster tests share (csv_lifecycle, csv_requirements, csv_chains): a CSV and group built as a
//! user writes them, waits on phases and deletions, Events and metrics of olm-operator, and one olm-operator
//! process per test watching that test's namespace; `webhooks`, what csv_webhooks adds.

use crate::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use anyhow::Context;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use messages::crd::annotations;
use messages::crd::csv::{
    ClusterServiceVersion, CrdDescription, CsvPhase, CsvReason, CustomResourceDefinitions,
    InstallModeType,
};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::{Csv, Og, app_deployment, rule};
use std::future::Future;
use std::time::Duration;

pub mod webhooks;

pub const DEADLINE: Duration = Duration::from_secs(90);

/// A CSV installing one deployment `deployment` (one replica of `image`, as ServiceAccount `<deployment>-sa`,
/// which may read ConfigMaps of its namespace and list namespaces), optionally replacing `replaces`; OwnNamespace
/// only.
pub fn csv(
    name: &str,
    version: &str,
    replaces: Option<&str>,
    deployment: &str,
    image: &str,
) -> ClusterServiceVersion {
    let sa = format!("{deployment}-sa");
    let mut spec = app_deployment(deployment, "operator", image);
    spec.replicas = Some(1);
    if let Some(pod) = spec.template.spec.as_mut() {
        pod.service_account_name = Some(sa.clone());
    }
    let csv = Csv::named(name)
        .display_name("Test operator")
        .version(version)
        .install_mode_list(&[
            (InstallModeType::OwnNamespace, true),
            (InstallModeType::AllNamespaces, false),
        ])
        .permission(
            &sa,
            vec![rule(&[""], &["configmaps"], &["get", "list", "watch"])],
        )
        .cluster_permission(&sa, vec![rule(&[""], &["namespaces"], &["list"])])
        .deployment_spec(deployment, spec);
    match replaces {
        Some(replaced) => csv.replaces(replaced),
        None => csv,
    }
    .build()
}

/// The first Deployment of a CSV's install strategy, to change it.
pub fn first_deployment(csv: &mut ClusterServiceVersion) -> anyhow::Result<&mut DeploymentSpec> {
    csv.spec
        .install
        .spec
        .as_mut()
        .and_then(|s| s.deployments.first_mut())
        .map(|d| &mut d.spec)
        .context("the CSV has no deployment")
}

/// The first container of [`first_deployment`].
pub fn first_container(csv: &mut ClusterServiceVersion) -> anyhow::Result<&mut Container> {
    first_deployment(csv)?
        .template
        .spec
        .as_mut()
        .and_then(|p| p.containers.first_mut())
        .context("the CSV's deployment has no container")
}

pub async fn create_csv(ctx: &TestContext, csv: ClusterServiceVersion) -> anyhow::Result<()> {
    Api::<ClusterServiceVersion>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&PostParams::default(), &csv)
        .await?;
    Ok(())
}

pub async fn create_group(ctx: &TestContext) -> anyhow::Result<()> {
    let og: OperatorGroup = Og::named("og").targets(&[&ctx.namespace]).build();
    Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&PostParams::default(), &og)
        .await?;
    Ok(())
}

/// The group and [`csv`] `op.v1.0.0` (Deployment `op` of `example.com/op:1`), once it is Succeeded.
pub async fn install_op(ctx: &TestContext) -> anyhow::Result<ClusterServiceVersion> {
    create_group(ctx).await?;
    create_csv(
        ctx,
        csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1"),
    )
    .await?;
    await_phase(
        ctx,
        "op.v1.0.0",
        CsvPhase::Succeeded,
        CsvReason::InstallSucceeded,
    )
    .await
}

pub fn csvs(ctx: &TestContext) -> Api<ClusterServiceVersion> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

pub async fn await_phase(
    ctx: &TestContext,
    name: &str,
    phase: CsvPhase,
    reason: CsvReason,
) -> anyhow::Result<ClusterServiceVersion> {
    let what = format!("phase {phase} reason {reason}");
    await_object(
        &csvs(ctx),
        name,
        DEADLINE,
        &what,
        move |c: Option<&ClusterServiceVersion>| {
            c.is_some_and(|c| c.phase() == phase && c.reason() == reason)
        },
    )
    .await
}

/// Every CSV of the namespace `csvs` reads, with its phase (in list order).
pub async fn csv_phases(
    csvs: &Api<ClusterServiceVersion>,
) -> anyhow::Result<Vec<(String, CsvPhase)>> {
    Ok(csvs
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|c| (c.metadata.name.clone().unwrap_or_default(), c.phase()))
        .collect())
}

/// The CSV owning Deployment `name` (its `olm.owner` label), when the Deployment exists.
pub async fn deployment_owner(
    deployments: &Api<Deployment>,
    name: &str,
) -> anyhow::Result<Option<String>> {
    Ok(deployments
        .get_opt(name)
        .await?
        .and_then(|d| d.metadata.labels)
        .and_then(|l| l.get(annotations::OWNER).cloned()))
}

pub async fn await_gone<K>(api: &Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(DEADLINE, &format!("{name} deleted"), || async {
        Ok(api.get_opt(name).await?.is_none().then_some(()))
    })
    .await
}

/// Event reasons recorded for one object, oldest first.
pub async fn event_reasons(ctx: &TestContext, object: &str) -> anyhow::Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut list = events
        .list(&ListParams::default().fields(&format!("involvedObject.name={object}")))
        .await?
        .items;
    list.sort_by(|a, b| {
        a.metadata
            .creation_timestamp
            .cmp(&b.metadata.creation_timestamp)
    });
    Ok(list.into_iter().filter_map(|e| e.reason).collect())
}

/// The metrics text of the operator listening on `port` (a plain HTTP/1.0 GET).
pub async fn metrics(port: u16) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    Ok(body)
}

/// The value of an unlabelled metric.
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// Run `body` with an olm-operator watching a fresh namespace (`body` gets its HTTP port); the operator lives
/// until `body` ends, and its log is printed when `body` fails.
pub async fn with_operator<F, Fut>(prefix: &str, body: F) -> anyhow::Result<()>
where
    F: FnOnce(TestContext, u16) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let cluster = Cluster::shared()?;
    with_namespace(cluster, prefix, |ctx| async move {
        let op = OperatorProcess::start(
            ctx.cluster,
            "olm-operator",
            &["--watched-namespaces", &ctx.namespace.clone()],
        )
        .await?;
        let result = body(ctx, op.http_port).await;
        if result.is_err() {
            eprintln!(
                "===== olm-operator log (last 60 lines) =====\n{}",
                op.log_tail(60)
            );
        }
        drop(op);
        result
    })
    .await
}

/// A CustomResourceDefinition `widgets.<group>` (kind Widget, v1, namespaced).
pub fn widget_crd(
    group: &str,
) -> anyhow::Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
> {
    Ok(crate::widgets::widget_crd(group, &["v1"]))
}

/// `csv(...)` owning the CRD `widgets.<group>` (display name Widget).
pub fn owning_widgets(mut csv: ClusterServiceVersion, group: &str) -> ClusterServiceVersion {
    csv.spec.custom_resource_definitions = Some(CustomResourceDefinitions {
        owned: Some(vec![CrdDescription {
            name: format!("widgets.{group}"),
            version: "v1".into(),
            kind: "Widget".into(),
            display_name: Some("Widget".into()),
            ..CrdDescription::default()
        }]),
        required: None,
    });
    csv
}
