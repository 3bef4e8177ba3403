//! Benchmark (ignored by default; run with `--ignored --nocapture`): 50 Subscriptions installed one after
//! another from a ConfigMap catalog with both operators running, each timed from creation to AtLatestKnown
//! (plan Complete) and to CSV Succeeded (p50, p99), then an install + 3-step upgrade, and both operators' RSS.

use messages::crd::subscription::SubscriptionState;
use olm_tests::bench_figures::{percentile, pid_serving, rss_kib};
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, with_namespace};
use std::time::Instant;

const INSTALLS: usize = 50;

#[tokio::test]
#[ignore = "benchmark"]
async fn fifty_installs_and_a_three_step_upgrade() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subbench", |ctx| async move {
        let op = catalog_operator(&ctx, &[]).await?;
        let olm = olm_tests::OperatorProcess::start(ctx.cluster, "olm-operator", &["--watched-namespaces", &ctx.namespace]).await?;
        let csvs: kube::Api<messages::crd::csv::ClusterServiceVersion> = kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let mut succeeded = Vec::with_capacity(INSTALLS);
        let mut ops: Vec<Op> = (0..INSTALLS).map(|i| Op::new(&format!("bench{i}"), "1.0.0")).collect();
        ops.extend([Op::new("chain", "1.0.0"), Op::new("chain", "1.1.0").replaces("chain.v1.0.0"), Op::new("chain", "1.2.0").replaces("chain.v1.1.0"), Op::new("chain", "1.3.0").replaces("chain.v1.2.0")]);
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &Catalog::with(ops), 0).await?;
        let mut took = Vec::with_capacity(INSTALLS);
        for i in 0..INSTALLS {
            let name = format!("bench{i}");
            let started = Instant::now();
            subscription(&ctx, sub_to(&ctx, &name, &name, "cat")).await?;
            await_sub(&ctx, &name, "installed", |s| s.state == SubscriptionState::AtLatestKnown).await?;
            took.push(started.elapsed());
            olm_tests::await_object(&csvs, &format!("{name}.v1.0.0"), DEADLINE, "Succeeded", |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded")).await?;
            succeeded.push(started.elapsed());
        }
        took.sort();
        succeeded.sort();
        let started = Instant::now();
        subscription(&ctx, sub_to(&ctx, "chain", "chain", "cat").starting_csv("chain.v1.0.0")).await?;
        await_sub(&ctx, "chain", "upgraded to the head", |s| s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "chain.v1.3.0").await?;
        let upgrade = started.elapsed();
        eprintln!(
            "BENCH over {INSTALLS} installs: Subscription created -> AtLatestKnown (plan Complete) p50 {:?} p99 {:?}; -> CSV Succeeded p50 {:?} p99 {:?}; install + 3-step upgrade (4 plans) {:?}; RSS catalog-operator {} KiB, olm-operator {} KiB",
            percentile(&took, 0.5),
            percentile(&took, 0.99),
            percentile(&succeeded, 0.5),
            percentile(&succeeded, 0.99),
            upgrade,
            pid_serving("catalog-operator", op.http_port).and_then(rss_kib).map(|k| k.to_string()).unwrap_or_else(|| "?".into()),
            pid_serving("olm-operator", olm.http_port).and_then(rss_kib).map(|k| k.to_string()).unwrap_or_else(|| "?".into())
        );
        Ok(())
    })
    .await
}
