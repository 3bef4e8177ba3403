//! Benchmark (ignored by default; run with `--ignored --nocapture`): 30 Subscriptions installed one after
//! another from a ConfigMap catalog, each timed from creation to AtLatestKnown with its plan Complete (p50,
//! p99), then a 3-step upgrade, and the catalog-operator's RSS at the end.

mod catalog_fixture;

use catalog_fixture::*;
use messages::crd::subscription::SubscriptionState;
use olm_tests::{Cluster, with_namespace};
use serde_json::json;
use std::time::{Duration, Instant};

const INSTALLS: usize = 30;

fn rss_kib_of_process_serving(port: u16) -> Option<u64> {
    let needle = format!("127.0.0.1:{port}");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains("catalog-operator") && text.contains(&needle) {
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            return status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok();
        }
    }
    None
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::test]
#[ignore = "benchmark"]
async fn thirty_installs_and_a_three_step_upgrade() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subbench", |ctx| async move {
        let op = catalog_operator(&ctx, &[]).await?;
        let mut ops: Vec<Op> = (0..INSTALLS).map(|i| Op::new(&format!("bench{i}"), "1.0.0")).collect();
        ops.extend([Op::new("chain", "1.0.0"), Op::new("chain", "1.1.0").replaces("chain.v1.0.0"), Op::new("chain", "1.2.0").replaces("chain.v1.1.0"), Op::new("chain", "1.3.0").replaces("chain.v1.2.0")]);
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &Catalog::with(ops), 0).await?;
        let mut took = Vec::with_capacity(INSTALLS);
        for i in 0..INSTALLS {
            let name = format!("bench{i}");
            let started = Instant::now();
            subscription(&ctx, &name, &name, "cat", json!({})).await?;
            await_sub(&ctx, &name, "installed", |s| s.state == SubscriptionState::AtLatestKnown).await?;
            took.push(started.elapsed());
        }
        took.sort();
        let started = Instant::now();
        subscription(&ctx, "chain", "chain", "cat", json!({"startingCSV": "chain.v1.0.0"})).await?;
        await_sub(&ctx, "chain", "upgraded to the head", |s| s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "chain.v1.3.0").await?;
        let upgrade = started.elapsed();
        eprintln!(
            "BENCH Subscription created -> AtLatestKnown (plan Complete) over {INSTALLS} installs: p50 {:?}, p99 {:?}, max {:?}; install + 3-step upgrade (4 plans) {:?}; catalog-operator RSS {} KiB",
            percentile(&took, 0.5),
            percentile(&took, 0.99),
            took.last().copied().unwrap_or_default(),
            upgrade,
            rss_kib_of_process_serving(op.http_port).map(|k| k.to_string()).unwrap_or_else(|| "?".into())
        );
        Ok(())
    })
    .await
}
