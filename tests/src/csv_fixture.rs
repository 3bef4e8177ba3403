//! What the CSV cluster tests share (csv_lifecycle, csv_requirements, csv_chains): a CSV and group built as a
//! user writes them, waits on phases and deletions, Events and metrics of olm-operator, and one olm-operator
//! process per test watching that test's namespace; `webhooks`, what csv_webhooks adds.

use crate::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, CsvReason};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::Og;
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;

pub mod webhooks;

pub const DEADLINE: Duration = Duration::from_secs(90);

/// A CSV installing one deployment `deployment` running `image`, optionally replacing `replaces`.
pub fn csv(
    name: &str,
    version: &str,
    replaces: Option<&str>,
    deployment: &str,
    image: &str,
) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {
            "displayName": "Test operator", "version": version, "replaces": replaces,
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": false}],
            "install": {"strategy": "deployment", "spec": {
                "permissions": [{"serviceAccountName": format!("{deployment}-sa"), "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}],
                "clusterPermissions": [{"serviceAccountName": format!("{deployment}-sa"), "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]}],
                "deployments": [{"name": deployment, "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": deployment}},
                    "template": {"metadata": {"labels": {"app": deployment}},
                                 "spec": {"serviceAccountName": format!("{deployment}-sa"), "containers": [{"name": "operator", "image": image}]}}
                }}]
            }}
        }
    })
}

pub async fn create_csv(ctx: &TestContext, value: Value) -> anyhow::Result<()> {
    let csv: ClusterServiceVersion = serde_json::from_value(value)?;
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
            let text = std::fs::read_to_string(&op.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            eprintln!(
                "===== olm-operator log (last 60 lines) =====\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
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

/// `csv(...)` owning the CRD `widgets.<group>`.
pub fn owning_widgets(mut value: Value, group: &str) -> Value {
    value["spec"]["customresourcedefinitions"] = json!({"owned": [{
        "name": format!("widgets.{group}"), "version": "v1", "kind": "Widget", "displayName": "Widget"
    }]});
    value
}
