//! Chaos runs on a private control plane (`Cluster::chaos`, stopped when the tests end, passed or failed;
//! `OLM_RS_CHAOS_PLANE=2` selects a second one): the workload of `chaos_harness::workload` in four namespaces runs
//! under faults of every layer (`chaos_harness::plan`: inside the actors, at the API through each operator's
//! fault proxy, lost answers after applied writes included, and of the processes and parts), with each operator
//! as two replicas under leader election, as its own ServiceAccount of deploy/rbac (`chaos_harness::replicas`).
//! The faulted processes keep running, faults on: within a deadline after the last process fault, the namespaces
//! must reach the end state of a fault-free run of the same workload, object for object (`olm_tests::converge`),
//! with its invariants held. Every seeded run must have made every fault kind of every layer, each operator its
//! own actor faults, and journaled all it did (no entry dropped); a second run of one seed in the same namespaces
//! must journal the same fault for every decision both runs made (`olm_tests::fault_journal`).
//! Prints the table: seed, faults by kind, converged, time to converge, replica exits, objects set apart.
//!
//! Default suite: a fault-free baseline, seeds 1 and 2, seed 1 again, and the regression of a lost-status
//! restart. `OLM_RS_CHAOS_SEEDS=N cargo test -p olm-tests --test chaos -- --ignored --nocapture` runs N seeds (the
//! long run; `hack/chaos.sh N`).

use kube::Api;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use olm_tests::catalog_fixture::*;
use olm_tests::chaos_harness::grpc_catalog::GrpcCatalog;
use olm_tests::chaos_harness::mid_run::approve_side;
use olm_tests::chaos_harness::plan::Which;
use olm_tests::chaos_harness::run::one_run;
use olm_tests::chaos_harness::table::{Row, missing_kinds, print_table, required_kinds, row_line};
use olm_tests::chaos_harness::workload::{CONVERGE, HEAD, Scope, at_head, workload};
use olm_tests::converge::diff;
use olm_tests::fault_journal::compare;
use olm_tests::{
    Cluster, OperatorProcess, TestContext, dump_namespace, eventually, with_namespace,
};
use rand::Rng;

/// A rerun must share at least this many decisions with the first run of its seed, or the comparison says
/// nothing.
const MIN_COMMON_DECISIONS: usize = 20;

/// What is wrong with a seeded run.
fn failures_of(baseline: &Row, row: &Row, required: &[String]) -> Vec<String> {
    let mut wrong = Vec::new();
    if !row.converged {
        wrong.push("did not converge with the faults on".to_string());
    }
    let lines = diff(&baseline.snapshot, &row.snapshot);
    if !lines.is_empty() {
        wrong.push(format!(
            "differs from the fault-free run:\n    {}",
            lines.join("\n    ")
        ));
    }
    if !row.broken.is_empty() {
        wrong.push(format!("invariants broken: {:?}", row.broken));
    }
    if row.unreplayed > 0 {
        wrong.push(format!(
            "{} journaled faults do not replay from the seed",
            row.unreplayed
        ));
    }
    if row.dropped > 0 {
        wrong.push(format!("the journals dropped {} entries", row.dropped));
    }
    let missing = missing_kinds(required, &row.faults);
    if !missing.is_empty() {
        wrong.push(format!("fault kinds never made: {missing:?}"));
    }
    for which in [Which::Catalog, Which::Olm] {
        if row.actor_faults.get(&which).copied().unwrap_or(0) == 0 {
            wrong.push(format!("{} made no actor fault", which.binary()));
        }
    }
    wrong
}

/// The baseline, each seed of `list`, then `rerun` (a seed of the list) again; every seeded run must pass
/// [`failures_of`], and the rerun's journal must agree with the first run's.
async fn seeds(list: Vec<u64>, rerun: Option<u64>) -> anyhow::Result<()> {
    let plane = Cluster::chaos()?;
    let cluster = plane.cluster();
    let tag: String = {
        let mut rng = rand::rng();
        (0..5)
            .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
            .collect()
    };
    let baseline = one_run(cluster, &tag, None, None).await?;
    anyhow::ensure!(baseline.converged, "the fault-free run did not converge");
    anyhow::ensure!(
        baseline.broken.is_empty(),
        "baseline: {:?}",
        baseline.broken
    );
    let required = required_kinds();
    let mut rows = vec![];
    let mut failures = vec![];
    let runs = list
        .iter()
        .map(|s| (*s, false))
        .chain(rerun.map(|s| (s, true)));
    for (seed, again) in runs {
        // A harness error (the test's own client, a plane process that did not come back) fails the seed, not
        // the whole bench: a long run keeps going and reports it.
        let mut row = match one_run(cluster, &tag, Some(seed), Some(&baseline.snapshot)).await {
            Ok(row) => row,
            Err(error) => {
                eprintln!("row: {seed} | the harness failed: {error:#}");
                failures.push(format!("seed {seed}: the harness failed: {error:#}"));
                continue;
            }
        };
        row.rerun = again;
        let mut wrong = failures_of(&baseline, &row, &required);
        if again {
            let first = rows
                .iter()
                .find(|r: &&Row| r.seed == Some(seed) && !r.rerun)
                .ok_or_else(|| anyhow::anyhow!("no first run of seed {seed}"))?;
            let journals = compare(&first.journal, &row.journal);
            eprintln!(
                "rerun of seed {seed}: {} decisions in both runs, {} in the first only, {} in the rerun only",
                journals.common, journals.only_first, journals.only_second
            );
            if journals.common < MIN_COMMON_DECISIONS {
                wrong.push(format!(
                    "the rerun shares {} decisions with the first run (< {MIN_COMMON_DECISIONS})",
                    journals.common
                ));
            }
            if !journals.differ.is_empty() {
                wrong.push(format!(
                    "the rerun journaled other faults: {:?}",
                    journals.differ
                ));
            }
        }
        if !wrong.is_empty() {
            failures.push(format!("seed {seed}: {}", wrong.join("\n  ")));
        }
        // Each row as it is done (a long run stopped early keeps what it measured).
        eprintln!("row: {}", row_line(&row));
        rows.push(row);
    }
    rows.insert(0, baseline);
    print_table(&rows);
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

#[tokio::test]
async fn a_short_chaos_run_converges_to_the_fault_free_end_state() -> anyhow::Result<()> {
    // Seed 1 runs again at the end: its journal is compared with the first run's.
    seeds(vec![1, 2], Some(1)).await
}

#[tokio::test]
#[ignore = "bench: the long chaos run (OLM_RS_CHAOS_SEEDS, default 100; about a minute per seed)"]
async fn many_seeds_converge() -> anyhow::Result<()> {
    // `OLM_RS_CHAOS_SEED=77` (or `77,78`): those seeds only.
    if let Ok(list) = std::env::var("OLM_RS_CHAOS_SEED") {
        let list: Vec<u64> = list
            .split(',')
            .map(|s| s.trim().parse())
            .collect::<Result<_, _>>()?;
        return seeds(list, None).await;
    }
    let n: u64 = std::env::var("OLM_RS_CHAOS_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    seeds((1..=n).collect(), Some(1)).await
}

/// The head CSV Succeeded while the Subscription has no status at all (every write of it lost).
async fn head_without_status(ctx: &TestContext) -> anyhow::Result<Option<()>> {
    let sub = subs(ctx).get("chain").await?;
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let head = csvs.get_opt(HEAD).await?.map(|c| c.phase());
    anyhow::ensure!(
        sub.status.is_none(),
        "the Subscription's status was written: {:?}",
        sub.status
    );
    Ok((head == Some(CsvPhase::Succeeded)).then_some(()))
}

/// Regression (the short run's seed 1 under heavy load, session 6: "a Subscription's status never written after
/// the restart"): every status write of the Subscription is lost while resolution walks the chain on the
/// statuses it decided (held in memory only), then the catalog-operator restarts. The Subscription has no
/// reference and no current CSV, yet a Complete plan of its own made the CSV of its package; before the fix the
/// new process resolved it as fresh, proposed its starting bundle beside that CSV, and left it `ResolutionFailed`
/// with an empty state forever. Now it adopts its newest Complete plan (`catalog-operator` `namespace::adopt`).
/// Deterministic: the Subscription actor's every run fails (`fail=1`), whatever the seed and the machine's load.
#[tokio::test]
async fn a_subscription_whose_status_writes_were_all_lost_adopts_its_plans_after_a_restart()
-> anyhow::Result<()> {
    let plane = Cluster::chaos()?;
    with_namespace(plane.cluster(), "chaos-lost", |ctx| async move {
        let ns = ctx.namespace.as_str();
        let cat_args = ["--watched-namespaces", ns, "--namespace", ns];
        let mut cat = OperatorProcess::start_with_env(
            ctx.cluster,
            "catalog-operator",
            &cat_args,
            &[("OLM_RS_CHAOS", "seed=1,fail=1,only=Subscription")],
        )
        .await?;
        let olm =
            OperatorProcess::start(ctx.cluster, "olm-operator", &["--watched-namespaces", ns])
                .await?;
        let grpc = GrpcCatalog::start(ns, Scope::Primary).await?;
        workload(&ctx, &grpc.address(), Scope::Primary).await?;
        let ctx = &ctx;
        approve_side(ctx).await?;
        eventually(
            CONVERGE,
            "the head CSV Succeeded, the Subscription's status never written",
            || head_without_status(ctx),
        )
        .await?;
        cat.kill();
        let cat = OperatorProcess::start(ctx.cluster, "catalog-operator", &cat_args).await?;
        let converged = eventually(CONVERGE, "the chain at its head after the restart", || {
            at_head(ctx, Scope::Primary)
        })
        .await;
        if let Err(e) = &converged {
            eprintln!("did not converge: {e:#}");
            dump_namespace(&ctx.client, &ctx.namespace).await;
            for op in [&cat, &olm] {
                eprintln!("--- log of {}:\n{}", op.name, op.logs());
            }
        }
        converged
    })
    .await
}
