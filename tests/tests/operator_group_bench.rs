//! Benchmark (ignored by default): an AllNamespaces operator copied into 1,000 namespaces. Prints the time
//! from the CSV's creation until every copy exists, olm-operator's RSS then, and the API requests its
//! OperatorGroup actor made for the copies per namespace (`olm_rs_operator_group_writes_total`).
//!
//! `cargo test -p olm-tests --test operator_group_bench -- --ignored --nocapture` (env `OLM_RS_BENCH_NAMESPACES`
//! changes the count).

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use messages::crd::csv::ClusterServiceVersion;
use olm_tests::{Cluster, OperatorProcess, await_object, eventually, with_namespace};
use std::time::{Duration, Instant};

use messages::testing::Og;
use olm_tests::bench_figures::{pid_serving, rss_kib};
use olm_tests::operator_group_fixture::{create_test_namespace, csv};

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next())
        .filter_map(|v| v.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
#[ignore = "benchmark: creates 1,000 namespaces"]
async fn copies_of_an_all_namespaces_operator_reach_a_thousand_namespaces() -> anyhow::Result<()> {
    let count: usize = std::env::var("OLM_RS_BENCH_NAMESPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "og-bench", |ctx| async move {
        let ns = ctx.namespace.clone();
        let names: Vec<String> = (0..count).map(|i| format!("{ns}-{i:04}")).collect();
        let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
        let started = Instant::now();
        stream::iter(names.clone())
            .map(|name| {
                let client = ctx.client.clone();
                async move { create_test_namespace(&client, &name).await }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<()>>()
            .await?;
        eprintln!("bench: created {count} namespaces in {:?}", started.elapsed());
        let result = async {
            let scope = std::iter::once(ns.clone()).chain(names.iter().cloned()).collect::<Vec<_>>().join(",");
            let op = OperatorProcess::start(ctx.cluster, "olm-operator", &["--watched-namespaces", &scope]).await?;
            let ogs = Api::namespaced(ctx.client.clone(), &ns);
            ogs.create(&PostParams::default(), &Og::named("global").build()).await?;
            let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ns);
            let t0 = Instant::now();
            csvs.create(&PostParams::default(), &csv("bench.v1.0.0", &["AllNamespaces"], &[])?).await?;
            await_object(&csvs, "bench.v1.0.0", Duration::from_secs(120), "Succeeded", |c: Option<&ClusterServiceVersion>| {
                c.is_some_and(|c| c.status.as_ref().is_some_and(|s| s.phase.as_str() == "Succeeded"))
            })
            .await?;
            let succeeded = t0.elapsed();
            let all: Api<ClusterServiceVersion> = Api::all(ctx.client.clone());
            let selector = format!("olm.copiedFrom={ns}");
            eventually(Duration::from_secs(600), &format!("{count} copies"), || {
                let all = all.clone();
                let selector = selector.clone();
                async move {
                    let list = all.list_metadata(&ListParams::default().labels(&selector)).await?;
                    Ok((list.items.len() == count).then_some(()))
                }
            })
            .await?;
            let copied = t0.elapsed();
            let rss = pid_serving("olm-operator", op.http_port).and_then(rss_kib);
            let (_, body) = op.get("/metrics").await?;
            let text = String::from_utf8_lossy(&body);
            let copy_requests = metric(&text, "olm_rs_operator_group_writes_total{kind=\"copied_csv\"}");
            eprintln!(
                "bench: {count} namespaces: parent Succeeded after {succeeded:?}; all copies after {copied:?}; olm-operator RSS {} MiB; copy requests {copy_requests} ({:.2} per namespace)",
                rss.map(|k| k / 1024).unwrap_or(0),
                copy_requests / count as f64
            );
            anyhow::ensure!(copy_requests >= count as f64, "every copy needs at least one request");
            anyhow::Ok(())
        }
        .await;
        stream::iter(names)
            .for_each_concurrent(32, |name| {
                let namespaces = namespaces.clone();
                async move {
                    let _ = namespaces.delete(&name, &DeleteParams::background()).await;
                }
            })
            .await;
        result
    })
    .await
}
