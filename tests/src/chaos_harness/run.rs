//! One run of the chaos workload ([`one_run`]): fault-free (the baseline) or under one seed's faults, in
//! namespaces named after the seed (`chaos-<tag>-s<seed>`, so a rerun of the seed in the same process meets the
//! same object keys). Both operators run as [`Operator`]s (two replicas, leader election, their own
//! ServiceAccounts, each behind its API proxy) from start to end: the actor and API faults stay on while
//! convergence is judged, the process faults come at their seeded moments, and nothing is restarted to help the
//! run converge (a restart is only ever a fault, or a replica that exited on its own started again).

use super::grpc_catalog::GrpcCatalog;
use super::mid_run::{
    approve_side, copied_into_second, create_namespaces, create_temp, delete_namespaces,
    delete_temp, namespaces_gone, narrow_global, temp_gone, temp_installed, until_done,
};
use super::plan::{Fault, FaultPlan, Which, fault_plan};
use super::replicas::Operator;
use super::table::Row;
use super::workload::{CONVERGE, Scope, at_head, namespaces, workload};
use crate::api_faults::ApiFaults;
use crate::converge::{Raw, Snapshot, diff, invariants, may_set_apart, set_apart, snapshot_of};
use crate::rbac::DeployedRbac;
use crate::{Cluster, TestContext, dump_namespace, eventually};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use messages::msg::JournalEvent;
use olm_runtime::chaos::{ChaosConfig, replay};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One run: `tag` names the test process's runs, `seed` none is the fault-free run, `want` is the fault-free run's
/// end state (a seeded run must reach it within [`CONVERGE`] of its last process fault).
pub async fn one_run(
    cluster: &'static Cluster,
    tag: &str,
    seed: Option<u64>,
    want: Option<&Snapshot>,
) -> anyhow::Result<Row> {
    let label = seed.map_or("base".to_string(), |s| format!("s{s}"));
    let ctx = TestContext {
        client: cluster.client().await?,
        namespace: format!("chaos-{tag}-{label}"),
        cluster,
    };
    let scope = Scope::Full;
    eventually(
        CONVERGE,
        "the namespaces of an earlier run of this seed gone",
        || namespaces_gone(&ctx, scope),
    )
    .await?;
    create_namespaces(&ctx, scope).await?;
    let result = match DeployedRbac::apply(&ctx) {
        Ok(rbac) => {
            let result = run(&ctx, scope, seed, want, &rbac).await;
            rbac.delete_cluster_objects(&ctx);
            for binary in [Which::Catalog, Which::Olm].map(Which::binary) {
                let token = format!("olm-rs-token-{}-{binary}", ctx.namespace);
                let _ = std::fs::remove_file(std::env::temp_dir().join(token));
            }
            result
        }
        Err(e) => Err(e),
    };
    delete_namespaces(&ctx, scope).await;
    result
}

/// The moments the checker saw, as offsets from the workload's start: the temp namespace's deletion asked for
/// and seen gone, and each restart of kube-apiserver or etcd.
#[derive(Debug, Default)]
struct Seen {
    temp_deleted: Option<Duration>,
    temp_gone: Option<Duration>,
    restarts: Vec<Duration>,
}

async fn run(
    ctx: &TestContext,
    scope: Scope,
    seed: Option<u64>,
    want: Option<&Snapshot>,
    rbac: &DeployedRbac,
) -> anyhow::Result<Row> {
    let plan = seed.map(fault_plan).transpose()?;
    let watched: Vec<String> = namespaces(&ctx.namespace, scope)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    let api = |which| match &plan {
        Some(p) => Ok(p.api_for(which)),
        None => ApiFaults::parse("seed=0"),
    };
    let actors = plan.as_ref().map(|p| p.actors.as_str());
    let mut grpc = GrpcCatalog::start(&ctx.namespace, scope).await?;
    let ops = [
        tokio::sync::Mutex::new(
            Operator::start(
                ctx,
                Which::Catalog,
                &watched,
                rbac,
                api(Which::Catalog)?,
                actors,
            )
            .await?,
        ),
        tokio::sync::Mutex::new(
            Operator::start(ctx, Which::Olm, &watched, rbac, api(Which::Olm)?, actors).await?,
        ),
    ];
    let op = |which: Which| &ops[which as usize];
    workload(ctx, &grpc.address(), scope).await?;
    let t0 = Instant::now();
    let seen = Mutex::new(Seen::default());
    let note = |f: &dyn Fn(&mut Seen)| f(&mut seen.lock().unwrap_or_else(PoisonError::into_inner));
    let mut process_faults: Vec<&'static str> = Vec::new();
    let faulting = async {
        for (at, fault) in plan.iter().flat_map(|p| p.events.iter()) {
            // The moment of a fault (not a wait for state).
            tokio::time::sleep_until((t0 + *at).into()).await;
            match *fault {
                Fault::KillLeader(which) => op(which).lock().await.kill_leader().await?,
                Fault::RestartApiserver | Fault::RestartEtcd => {
                    let command = match fault {
                        Fault::RestartApiserver => "restart-apiserver",
                        _ => "restart-etcd",
                    };
                    let cluster = ctx.cluster;
                    note(&|s| s.restarts.push(t0.elapsed()));
                    tokio::task::spawn_blocking(move || cluster.plane(command)).await??;
                }
                Fault::RegistryDown => grpc.down(),
                Fault::RegistryUp => grpc.up()?,
                Fault::RegistrySlow(delay) => grpc.forwarder.set_delay(delay),
                Fault::RegistryFast => grpc.forwarder.set_delay(Duration::ZERO),
            }
            process_faults.extend(fault.counted());
            for o in &ops {
                o.lock().await.restart_exited().await?;
            }
        }
        anyhow::Ok(())
    };
    let approving = async {
        if let Some(p) = &plan {
            // The moment the user approves (not a wait for state).
            tokio::time::sleep_until((t0 + p.approve_at).into()).await;
        }
        approve_side(ctx).await
    };
    // The mid-run changes of the workload: at the seed's moments, or (the baseline) once the state they change
    // is reached.
    let narrowing = async {
        match &plan {
            Some(p) => tokio::time::sleep_until((t0 + p.narrow_at).into()).await,
            None => {
                eventually(
                    CONVERGE,
                    "the global CSV copied into the second namespace",
                    || copied_into_second(ctx),
                )
                .await?
            }
        }
        until_done("the global group narrowed", || narrow_global(ctx)).await
    };
    let temp = async {
        if let Some(p) = &plan {
            tokio::time::sleep_until((t0 + p.temp_at).into()).await;
        }
        until_done("the temp namespace created", || create_temp(ctx)).await?;
        match &plan {
            Some(p) => tokio::time::sleep_until((t0 + p.temp_until).into()).await,
            None => {
                eventually(
                    CONVERGE,
                    "the temp CSV installed with its cluster RBAC",
                    || temp_installed(ctx),
                )
                .await?
            }
        }
        note(&|s| s.temp_deleted = Some(t0.elapsed()));
        until_done("the temp namespace deleted", || delete_temp(ctx)).await?;
        // Not an error when it never goes: the end state check says what is left.
        if eventually(CONVERGE, "the temp namespace gone", || temp_gone(ctx))
            .await
            .is_ok()
        {
            note(&|s| s.temp_gone = Some(t0.elapsed()));
        }
        anyhow::Ok(())
    };
    let (faulted, approved, narrowed, temped) = tokio::join!(faulting, approving, narrowing, temp);
    faulted?;
    approved?;
    narrowed?;
    temped?;
    let from = t0 + plan.as_ref().map_or(Duration::ZERO, FaultPlan::faults_end);
    let seen = seen.into_inner().unwrap_or_else(PoisonError::into_inner);
    let deadline = CONVERGE.saturating_sub(from.elapsed());
    let converged = eventually(
        deadline,
        "the workload at its end state, faults on",
        || async {
            for o in &ops {
                o.lock().await.restart_exited().await?;
            }
            at_head(ctx, scope).await
        },
    )
    .await;
    if let Err(e) = &converged {
        explain(ctx, scope, &e.to_string(), &ops).await;
    }
    let spaces = namespaces(&ctx.namespace, scope);
    let roles: Vec<(&str, &str)> = spaces.iter().map(|(r, n)| (*r, n.as_str())).collect();
    let apart_allowed = may_set_apart(seen.temp_deleted, seen.temp_gone, &seen.restarts);
    // `at_head` reads CSVs, Subscriptions, Deployments and what must be gone; RBAC and plans may settle a moment
    // later, so the end state is compared within the same deadline: read again until it equals the fault-free
    // run's, and keep the last reading when it never does.
    let settled = match (&converged, want) {
        (Ok(()), Some(want)) => eventually(
            CONVERGE.saturating_sub(from.elapsed()),
            "the end state equal to the fault-free run's",
            || async {
                let state = compared_state(ctx, &roles, apart_allowed).await?;
                Ok(diff(want, &state.0).is_empty().then_some(state))
            },
        )
        .await
        .ok(),
        _ => None,
    };
    let converge_time = from.elapsed();
    let (snapshot, raw, set_apart) = match settled {
        Some(found) => found,
        None => compared_state(ctx, &roles, apart_allowed).await?,
    };
    let mut row = Row {
        seed,
        converged: converged.is_ok(),
        converge_time,
        broken: invariants(&raw),
        snapshot,
        set_apart,
        ..Row::default()
    };
    for name in process_faults {
        *row.faults.entry(name.to_string()).or_insert(0) += 1;
    }
    let config = plan
        .as_ref()
        .map(|p| ChaosConfig::parse(&p.actors))
        .transpose()?;
    for o in &ops {
        let mut o = o.lock().await;
        row.exits += o.exits;
        for (kind, n) in o.proxy.counts() {
            *row.faults.entry(format!("api-{kind}")).or_insert(0) += n;
        }
        for journal in o.journals().await? {
            row.dropped += journal.dropped();
            if let Some(config) = &config {
                row.unreplayed += replay(config, journal.entries()).len();
            }
            for entry in journal.entries() {
                if let JournalEvent::Fault { fault, .. } = &entry.event {
                    *row.faults.entry(fault.clone()).or_insert(0) += 1;
                    *row.actor_faults.entry(o.which).or_insert(0) += 1;
                    row.journal.push(entry.clone());
                }
            }
        }
    }
    Ok(row)
}

/// The run's end state as compared with the fault-free run's: the snapshot of its namespaces, without what the
/// control plane left of the namespace deleted mid-run once that namespace is gone, when `apart_allowed`
/// (`converge::may_set_apart`; the keys set apart are the third value, listed in the row).
async fn compared_state(
    ctx: &TestContext,
    roles: &[(&str, &str)],
    apart_allowed: bool,
) -> anyhow::Result<(Snapshot, Raw, Vec<String>)> {
    let (snap, raw) = snapshot_of(&ctx.client, roles).await?;
    let nsd = format!("{}-d", ctx.namespace);
    let gone = Api::<Namespace>::all(ctx.client.clone())
        .get_opt(&nsd)
        .await?
        .is_none();
    Ok(if gone && apart_allowed {
        set_apart(snap, raw, "nsd")
    } else {
        (snap, raw, Vec::new())
    })
}

/// A run that did not converge: the namespaces and the last log lines of each running replica, to stderr.
async fn explain(ctx: &TestContext, scope: Scope, why: &str, ops: &[tokio::sync::Mutex<Operator>]) {
    eprintln!("namespace {} did not converge: {why}", ctx.namespace);
    for (_, ns) in namespaces(&ctx.namespace, scope) {
        dump_namespace(&ctx.client, &ns).await;
    }
    for o in ops {
        let o = o.lock().await;
        for p in o.processes() {
            eprintln!("--- last log lines of a replica of {}:", p.name);
            eprintln!("{}", p.log_tail(60));
        }
    }
}
