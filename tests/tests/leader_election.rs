//! Leader election with two replicas of olm-operator as real processes (light mode): only the holder of the
//! `coordination.k8s.io/v1` Lease starts watches and actors, the other stands by (healthy, ready, no actors,
//! `leader_election_master_status` 0), and when the leader is killed with SIGKILL (so it cannot release the Lease)
//! the standby takes over once the lease duration has passed and does the work.

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::Og;
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);
const LEASE: &str = "olm-operator";

fn csv(name: &str) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {
            "displayName": "Leader test", "version": "1.0.0",
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": false}],
            "install": {"strategy": "deployment", "spec": {"deployments": [{"name": name.replace('.', "-"), "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                             "spec": {"containers": [{"name": "operator", "image": "busybox:1.36"}]}}
            }}]}}
        }
    })
}

async fn replica(ctx: &TestContext, identity: &str) -> anyhow::Result<OperatorProcess> {
    let args = olm_tests::replica_args(&ctx.namespace, identity);
    OperatorProcess::start(ctx.cluster, "olm-operator", &args).await
}

fn holder(lease: Option<&Lease>) -> Option<&str> {
    lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.holder_identity.as_deref())
}

/// `leader_election_master_status{name="olm-operator"}` of a replica, once it shows `want`.
async fn leadership_gauge(op: &OperatorProcess, want: u8) -> anyhow::Result<()> {
    let line = format!("leader_election_master_status{{name=\"{LEASE}\"}} {want}");
    eventually(DEADLINE, &format!("{} reports {line}", op.name), || {
        let line = line.clone();
        async move {
            let (code, body) = op.get("/metrics").await?;
            Ok((code == 200 && String::from_utf8_lossy(&body).contains(&line)).then_some(()))
        }
    })
    .await
}

async fn await_succeeded(ctx: &TestContext, name: &str) -> anyhow::Result<()> {
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_object(&csvs, name, DEADLINE, "Succeeded", |c| {
        c.and_then(|c| c.status.as_ref())
            .is_some_and(|s| s.phase == CsvPhase::Succeeded)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn of_two_replicas_only_the_lease_holder_acts_and_the_other_takes_over_when_it_is_killed()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "leader", |ctx| async move {
        let leases: Api<Lease> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let og: OperatorGroup = Og::named("og").targets(&[&ctx.namespace]).build();
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ctx.namespace)
            .create(&PostParams::default(), &og)
            .await?;

        let mut a = replica(&ctx, "replica-a").await?;
        await_object(&leases, LEASE, DEADLINE, "held by replica-a", |l| {
            holder(l) == Some("replica-a")
        })
        .await?;
        let b = replica(&ctx, "replica-b").await?;
        leadership_gauge(&a, 1).await?;
        leadership_gauge(&b, 0).await?;

        csvs.create(
            &PostParams::default(),
            &serde_json::from_value(csv("first.v1"))?,
        )
        .await?;
        await_succeeded(&ctx, "first.v1").await?;
        let (code, body) = b.get("/readyz").await?;
        assert_eq!(code, 200, "a standby is ready to take over");
        assert!(
            String::from_utf8_lossy(&body).contains("standby"),
            "replica-b answers {:?} while replica-a should lead; the Lease: {:?}; replica-a's log:\n{}",
            String::from_utf8_lossy(&body),
            leases.get_opt(LEASE).await?.and_then(|l| l.spec),
            a.logs()
        );
        assert!(
            b.actor_counts().await?.is_empty(),
            "the standby started no actors"
        );
        assert!(
            a.actor_counts()
                .await?
                .get("ClusterServiceVersion")
                .is_some_and(|n| *n >= 1),
            "the leader runs the CSV actors"
        );
        let before = leases.get(LEASE).await?;
        let transitions = before
            .spec
            .as_ref()
            .and_then(|s| s.lease_transitions)
            .unwrap_or(0);

        let killed = Instant::now();
        a.kill();
        let after = await_object(&leases, LEASE, DEADLINE, "held by replica-b", |l| {
            holder(l) == Some("replica-b")
        })
        .await?;
        let took_over = killed.elapsed();
        eprintln!("replica-b took the Lease over {took_over:?} after replica-a was killed");
        // It waits the 4 s lease duration from its last sight of a renewal, at most one 1 s retry period before the kill.
        assert!(
            took_over >= Duration::from_secs(2),
            "the standby waited for the lease to expire ({took_over:?})"
        );
        assert_eq!(
            after.spec.as_ref().and_then(|s| s.lease_transitions),
            Some(transitions + 1)
        );
        leadership_gauge(&b, 1).await?;

        csvs.create(
            &PostParams::default(),
            &serde_json::from_value(csv("second.v1"))?,
        )
        .await?;
        await_succeeded(&ctx, "second.v1").await?;
        assert!(
            b.actor_counts()
                .await?
                .get("ClusterServiceVersion")
                .is_some_and(|n| *n >= 2),
            "the new leader runs both CSVs' actors"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_leader_stopped_with_sigterm_releases_the_lease_so_the_standby_takes_over_at_once()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "leaderterm", |ctx| async move {
        let leases: Api<Lease> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let mut a = replica(&ctx, "replica-a").await?;
        await_object(&leases, LEASE, DEADLINE, "held by replica-a", |l| {
            holder(l) == Some("replica-a")
        })
        .await?;
        let b = replica(&ctx, "replica-b").await?;
        leadership_gauge(&b, 0).await?;

        let stopped = Instant::now();
        a.terminate()?;
        await_object(&leases, LEASE, DEADLINE, "held by replica-b", |l| {
            holder(l) == Some("replica-b")
        })
        .await?;
        let took_over = stopped.elapsed();
        eprintln!(
            "replica-b took the released Lease over {took_over:?} after SIGTERM to replica-a"
        );
        // Without the release the standby would wait at least the 4 s lease duration.
        assert!(
            took_over < Duration::from_secs(4),
            "took {took_over:?}: the Lease was not released"
        );
        Ok(())
    })
    .await
}
