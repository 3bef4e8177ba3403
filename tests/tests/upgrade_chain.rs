//! Issue 17's first defect, reproduced on the control plane: a Subscription with `startingCSV` at the start of a
//! four-CSV `replaces` chain (v1 → v2 → v3 → v4, each with one Deployment of the same name, Automatic approval,
//! a ConfigMap catalog in the operators' namespace: the fast case) must end with v4 alone, Succeeded, owning the
//! Deployment. Before the fix a CSV still Installing when its replacer appeared kept writing the Deployment
//! beside the chain's newest CSV, and the chain stalled until the install timeout.
//!
//! The race depends on timing, so each scenario runs several times (`OLM_RS_UPGRADE_CHAIN_RUNS`, default 5),
//! each run in its own namespace with its own operators, and reports how many runs converged before asserting
//! all did. Two scenarios: through a Subscription (the user's path; on this control plane the catalog-operator
//! paces the chain and it converged before the fix too), and the CSVs created directly with the timing of the
//! report (v3 and v4 arriving together while v2 is Installing), which reproduces the defect every time.

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::csv_fixture::{csv_phases, deployment_owner};
use olm_tests::{Cluster, TestContext, eventually, with_namespace};
use std::time::{Duration, Instant};

/// Far below the 5-minute install timeout a stalled chain waits for, far above a converging chain (~10-20 s).
const CONVERGE: Duration = Duration::from_secs(100);

/// Seconds each Deployment stays unavailable once its pod is ready.
const MIN_READY: u32 = 5;

const VERSIONS: [&str; 4] = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"];

fn runs() -> usize {
    std::env::var("OLM_RS_UPGRADE_CHAIN_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5)
}

/// Runs `body` in a fresh namespace `<prefix>-…`: the time it measured.
async fn timed<F, Fut>(cluster: &'static Cluster, prefix: &str, body: F) -> anyhow::Result<Duration>
where
    F: FnOnce(TestContext) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Duration>>,
{
    let took = std::sync::Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let out = took.clone();
    with_namespace(cluster, prefix, |ctx| async move {
        let measured = body(ctx).await?;
        *out.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = measured;
        Ok(())
    })
    .await?;
    let took = *took
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(took)
}

/// Prints how many of `total` runs converged and fails on any that did not.
fn report(label: &str, total: usize, failures: &[String], times: &[Duration]) {
    eprintln!(
        "{label}: {} of {total} runs converged (times {times:?})",
        total - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

async fn one_run(cluster: &'static Cluster) -> anyhow::Result<Duration> {
    timed(cluster, "chain", |ctx| async move {
        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        // Each Deployment stays unavailable a few seconds after its pod is ready, as a real operator's does
        // while it starts: the next CSVs of the chain arrive while one is still Installing.
        // Each version's Deployment differs (its container's environment names the version).
        let op = |v: &str| {
            Op::new("chain", v)
                .min_ready_seconds(MIN_READY)
                .versioned_deployment()
        };
        let mut ops = vec![op(VERSIONS[0])];
        for pair in VERSIONS.windows(2) {
            ops.push(op(pair[1]).replaces(&format!("chain.v{}", pair[0])));
        }
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &Catalog::with(ops), 0).await?;
        let start = Instant::now();
        subscription(
            &ctx,
            sub_to(&ctx, "chain", "chain", "cat")
                .starting_csv("chain.v1.0.0")
                .approval(Approval::Automatic),
        )
        .await?;
        let head = "chain.v1.3.0";
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let sub_api = subs(&ctx);
        let (csvs, deployments, sub_api) = (&csvs, &deployments, &sub_api);
        eventually(
            CONVERGE,
            "the chain handed over to its head alone",
            || async move {
                let sub = sub_api.get("chain").await?;
                let status = sub.status.unwrap_or_default();
                let chain = head_alone(csvs, deployments, head).await?;
                let done = status.state == SubscriptionState::AtLatestKnown
                    && status.installed_csv == head
                    && chain.is_ok();
                if done {
                    Ok(Some(()))
                } else {
                    Err(anyhow::anyhow!(
                        "subscription {:?} at {:?}; {}",
                        status.state,
                        status.installed_csv,
                        chain.err().unwrap_or_default()
                    ))
                }
            },
        )
        .await?;
        Ok(start.elapsed())
    })
    .await
}

/// Whether the chain handed over to `head` alone: it is the only CSV, Succeeded, and owns the Deployment;
/// otherwise, what the CSVs and the Deployment are.
async fn head_alone(
    csvs: &Api<ClusterServiceVersion>,
    deployments: &Api<Deployment>,
    head: &str,
) -> anyhow::Result<Result<(), String>> {
    let phases = csv_phases(csvs).await?;
    let owner = deployment_owner(deployments, "chain-operator").await?;
    if phases == [(head.to_string(), CsvPhase::Succeeded)] && owner.as_deref() == Some(head) {
        Ok(Ok(()))
    } else {
        Ok(Err(format!(
            "CSVs {phases:?}; deployment owned by {owner:?}"
        )))
    }
}

/// v1 installed; v2 created and caught Installing; then v3 and v4 created together (as an InstallPlan
/// executing two steps at once would).
async fn one_direct_run(cluster: &'static Cluster) -> anyhow::Result<Duration> {
    timed(cluster, "chaindirect", |ctx| async move {
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        let op = |i: usize| {
            let mut op = Op::new("chain", VERSIONS[i])
                .min_ready_seconds(MIN_READY)
                .versioned_deployment();
            if i > 0 {
                op = op.replaces(&format!("chain.v{}", VERSIONS[i - 1]));
            }
            op.csv()
        };
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let phase_is = |name: &'static str, phase: CsvPhase| {
            let csvs = csvs.clone();
            async move {
                olm_tests::await_object(&csvs, name, CONVERGE, &format!("{name} {phase}"), |c| {
                    c.is_some_and(|c| c.phase() == phase)
                })
                .await
            }
        };
        create_manifest::<ClusterServiceVersion>(&ctx, op(0)).await?;
        phase_is("chain.v1.0.0", CsvPhase::Succeeded).await?;
        let start = Instant::now();
        create_manifest::<ClusterServiceVersion>(&ctx, op(1)).await?;
        phase_is("chain.v1.1.0", CsvPhase::Installing).await?;
        create_manifest::<ClusterServiceVersion>(&ctx, op(2)).await?;
        create_manifest::<ClusterServiceVersion>(&ctx, op(3)).await?;
        let head = "chain.v1.3.0";
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let (csvs, deployments) = (&csvs, &deployments);
        eventually(
            CONVERGE,
            "the chain handed over to its head alone",
            || async move {
                match head_alone(csvs, deployments, head).await? {
                    Ok(()) => Ok(Some(())),
                    Err(state) => Err(anyhow::anyhow!("{state}")),
                }
            },
        )
        .await?;
        Ok(start.elapsed())
    })
    .await
}

#[tokio::test]
async fn csvs_arriving_while_one_installs_hand_over_serially_to_the_head() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let total = runs();
    let mut failures = Vec::new();
    let mut times = Vec::new();
    for run in 1..=total {
        match one_direct_run(cluster).await {
            Ok(took) => times.push(took),
            Err(error) => failures.push(format!("run {run}: {error:#}")),
        }
    }
    report("upgrade chain (direct)", total, &failures, &times);
    Ok(())
}

#[tokio::test]
async fn a_fast_upgrade_chain_hands_over_serially_to_its_head() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let total = runs();
    let mut failures = Vec::new();
    let mut times = Vec::new();
    // Two runs at a time: each has its own namespace and operators; the load is part of the timing.
    let mut run = 0;
    while run < total {
        let batch = (total - run).min(2);
        let results = futures::future::join_all((0..batch).map(|_| one_run(cluster))).await;
        for result in results {
            run += 1;
            match result {
                Ok(took) => times.push(took),
                Err(error) => failures.push(format!("run {run}: {error:#}")),
            }
        }
    }
    report("upgrade chain", total, &failures, &times);
    Ok(())
}
