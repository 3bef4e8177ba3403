//! Benchmark (ignored by default): time from CSV creation to Succeeded over many CSVs whose deployments the
//! node simulator makes ready, and olm-operator's RSS idle and with 500 CSVs.
//!
//! `cargo test -p olm-tests --test csv_bench -- --ignored --nocapture` (env `OLM_RS_BENCH_CSVS`, default 60,
//! changes the number of CSVs with real deployments; `OLM_RS_BENCH_TOTAL`, default 500, the total).

use futures::{StreamExt, TryStreamExt, stream};
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::Og;
use olm_tests::bench_figures::{pid_serving, rss_kib};
use olm_tests::{Cluster, OperatorProcess, with_namespace};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn csv(name: &str, with_deployment: bool) -> Value {
    let deployments = if with_deployment {
        json!([{"name": name.replace('.', "-"), "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "operator", "image": "example.com/op:1"}]}}
        }}])
    } else {
        json!([])
    };
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "metadata": {"name": name},
        "spec": {"displayName": "bench", "version": "1.0.0", "installModes": [{"type": "OwnNamespace", "supported": true}],
                 "install": {"strategy": "deployment", "spec": {"deployments": deployments}}}
    })
}

fn rss_mib(pid: u32) -> f64 {
    rss_kib(pid).unwrap_or(0) as f64 / 1024.0
}

/// The operator's RSS once it has settled after the last burst: at least 3 s after the call, two probes in a
/// row agree within 0.5 MiB.
async fn settled_rss(pid: u32) -> anyhow::Result<f64> {
    let since = Instant::now();
    let last = std::cell::Cell::new(None::<f64>);
    olm_tests::eventually(
        Duration::from_secs(60),
        "olm-operator RSS to settle",
        || {
            let now = rss_mib(pid);
            let previous = last.replace(Some(now));
            let waited = since.elapsed() >= Duration::from_secs(3);
            async move {
                Ok(previous
                    .filter(|p| waited && (p - now).abs() < 0.5)
                    .map(|_| now))
            }
        },
    )
    .await
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn create_all(
    api: &Api<ClusterServiceVersion>,
    names: &[String],
    with_deployment: bool,
    created: &Arc<Mutex<BTreeMap<String, Instant>>>,
) -> anyhow::Result<()> {
    stream::iter(names.to_vec())
        .map(|name| {
            let (api, created) = (api.clone(), created.clone());
            async move {
                let obj: ClusterServiceVersion =
                    serde_json::from_value(csv(&name, with_deployment))?;
                created
                    .lock()
                    .map_err(|_| anyhow::anyhow!("poisoned"))?
                    .insert(name, Instant::now());
                api.create(&PostParams::default(), &obj)
                    .await
                    .map(|_| ())
                    .map_err(anyhow::Error::from)
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// When each CSV was first seen Installing (its deployments created) and Succeeded.
#[derive(Default)]
struct Seen {
    installing: BTreeMap<String, Instant>,
    succeeded: BTreeMap<String, Instant>,
}

/// Wait until `want` CSVs have been seen Succeeded; returns when each first was Installing and Succeeded.
async fn await_succeeded(
    api: &Api<ClusterServiceVersion>,
    want: usize,
    deadline: Duration,
) -> anyhow::Result<Seen> {
    let mut all = Seen::default();
    let seen = &mut all.succeeded;
    let installing = &mut all.installing;
    let stream = watcher(api.clone(), watcher::Config::default()).applied_objects();
    futures::pin_mut!(stream);
    let until = tokio::time::Instant::now() + deadline;
    while seen.len() < want {
        let next = tokio::time::timeout_at(until, stream.next())
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "only {} of {want} CSVs Succeeded within {deadline:?}",
                    seen.len()
                )
            })?;
        let Some(obj) = next else {
            anyhow::bail!("watch ended")
        };
        let obj = obj?;
        let Some(name) = obj.metadata.name.clone() else {
            continue;
        };
        match obj.phase() {
            CsvPhase::Installing => {
                installing.entry(name).or_insert_with(Instant::now);
            }
            CsvPhase::Succeeded => {
                seen.entry(name).or_insert_with(Instant::now);
            }
            _ => {}
        }
    }
    Ok(all)
}

/// Sorted durations from `from[name]` to `to[name]` for every name in both.
fn spans(from: &BTreeMap<String, Instant>, to: &BTreeMap<String, Instant>) -> Vec<Duration> {
    let mut out: Vec<Duration> = to
        .iter()
        .filter_map(|(n, at)| from.get(n).map(|f| at.saturating_duration_since(*f)))
        .collect();
    out.sort();
    out
}

fn summary(sorted: &[Duration]) -> String {
    if sorted.is_empty() {
        return "none".into();
    }
    format!(
        "p50 {:?}  p90 {:?}  p99 {:?}  max {:?}",
        percentile(sorted, 50.0),
        percentile(sorted, 90.0),
        percentile(sorted, 99.0),
        percentile(sorted, 100.0)
    )
}

#[tokio::test]
#[ignore = "benchmark: creates hundreds of CSVs"]
async fn csvs_reach_succeeded_quickly_and_the_operator_stays_small() -> anyhow::Result<()> {
    let with_deployments: usize = std::env::var("OLM_RS_BENCH_CSVS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let total: usize = std::env::var("OLM_RS_BENCH_TOTAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
        .max(with_deployments);
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "csv-bench", |ctx| async move {
        let ns = ctx.namespace.clone();
        let op = OperatorProcess::start(ctx.cluster, "olm-operator", &["--watched-namespaces", &ns]).await?;
        let pid = pid_serving("olm-operator", op.http_port).ok_or_else(|| anyhow::anyhow!("operator pid not found"))?;
        let og: OperatorGroup = Og::named("og").targets(&[&ns]).build();
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ns).create(&PostParams::default(), &og).await?;
        let idle = settled_rss(pid).await?;

        let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ns);
        let created = Arc::new(Mutex::new(BTreeMap::new()));
        let names: Vec<String> = (0..with_deployments).map(|i| format!("op{i:03}.v1.0.0")).collect();
        let waiter = tokio::spawn({
            let api = api.clone();
            async move { await_succeeded(&api, with_deployments, Duration::from_secs(300)).await }
        });
        let started = Instant::now();
        create_all(&api, &names, true, &created).await?;
        let seen = waiter.await??;
        let wall = started.elapsed();
        let created = created.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.clone();
        let latencies = spans(&created, &seen.succeeded);
        let to_installing = spans(&created, &seen.installing);
        let installing_to_succeeded = spans(&seen.installing, &seen.succeeded);
        let with_deps_rss = rss_mib(pid);

        let rest: Vec<String> = (with_deployments..total).map(|i| format!("empty{i:03}.v1.0.0")).collect();
        let waiter = tokio::spawn({
            let api = api.clone();
            async move { await_succeeded(&api, total, Duration::from_secs(600)).await }
        });
        let more = Arc::new(Mutex::new(BTreeMap::new()));
        create_all(&api, &rest, false, &more).await?;
        waiter.await??;
        let full = settled_rss(pid).await?;

        eprintln!("bench: {} CSVs with a deployment each, created in parallel (8 at a time), all Succeeded after {wall:?}", latencies.len());
        eprintln!("bench: creation -> Succeeded {}", summary(&latencies));
        eprintln!("bench:   creation -> Installing (olm-operator's checks, RBAC and Deployment writes) {}", summary(&to_installing));
        eprintln!("bench:   Installing -> Succeeded (controller-manager + node-sim make the Deployment Available) {}", summary(&installing_to_succeeded));
        eprintln!("bench: olm-operator RSS idle {idle:.1} MiB; with {with_deployments} CSVs {with_deps_rss:.1} MiB; with {total} CSVs ({} without deployments) {full:.1} MiB", total - with_deployments);
        assert_eq!(latencies.len(), with_deployments);
        drop(op);
        Ok(())
    })
    .await
}
