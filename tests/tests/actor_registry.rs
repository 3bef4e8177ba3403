//! One actor per object, observed from outside: the olm-operator's registry starts an actor for each CSV and
//! OperatorGroup it sees and stops it when the object is deleted. The count is read from `/debug/actors` and
//! `/metrics`, and the MessagePack journal from `/debug/journal`.

use kube::api::{Api, DeleteParams, PostParams};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::csv::InstallModeType;
use messages::crd::operator_group::OperatorGroup;
use messages::crd::subscription::Approval;
use messages::msg::{Journal, JournalEvent};
use messages::testing::{Catsrc, Csv, Ip, Og, Sub};
use olm_tests::{Cluster, OperatorProcess, eventually, with_namespace};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

async fn wait_for_count(op: &OperatorProcess, kind: &str, want: usize) -> anyhow::Result<()> {
    eventually(DEADLINE, &format!("{want} {kind} actors"), || async move {
        let counts = op.actor_counts().await?;
        Ok((counts.get(kind).copied().unwrap_or(0) == want).then_some(()))
    })
    .await
}

#[tokio::test]
async fn the_olm_operator_runs_one_actor_per_csv_and_operator_group() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "actors", |ctx| async move {
        let ns = ctx.namespace.clone();
        let op =
            OperatorProcess::start(ctx.cluster, "olm-operator", &["--watched-namespaces", &ns])
                .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ns);
        let ogs: Api<OperatorGroup> = Api::namespaced(ctx.client.clone(), &ns);
        let og: OperatorGroup = Og::named("og").build();
        ogs.create(&PostParams::default(), &og).await?;
        for n in 0..12 {
            let csv = Csv::named(&format!("op{n}.v1.0.0"))
                .version("1.0.0")
                .install_modes(&[InstallModeType::OwnNamespace])
                .build();
            csvs.create(&PostParams::default(), &csv).await?;
        }
        wait_for_count(&op, "ClusterServiceVersion", 12).await?;
        wait_for_count(&op, "OperatorGroup", 1).await?;
        for n in 0..5 {
            csvs.delete(&format!("op{n}.v1.0.0"), &DeleteParams::default())
                .await?;
        }
        ogs.delete("og", &DeleteParams::default()).await?;
        wait_for_count(&op, "ClusterServiceVersion", 7).await?;
        wait_for_count(&op, "OperatorGroup", 0).await?;

        let (code, metrics) = op.get("/metrics").await?;
        anyhow::ensure!(code == 200, "/metrics answered {code}");
        let metrics = String::from_utf8_lossy(&metrics);
        assert!(
            metrics.contains("olm_rs_object_actors{kind=\"ClusterServiceVersion\"} 7"),
            "{metrics}"
        );

        let (code, bytes) = op.get("/debug/journal").await?;
        anyhow::ensure!(code == 200, "/debug/journal answered {code}");
        let journal = Journal::from_msgpack(&bytes)?;
        let count = |kind: &str, event: &JournalEvent| {
            journal
                .entries()
                .filter(|e| e.kind == kind && &e.event == event)
                .count()
        };
        assert_eq!(count("ClusterServiceVersion", &JournalEvent::Spawned), 12);
        assert_eq!(count("ClusterServiceVersion", &JournalEvent::Stopped), 5);
        assert_eq!(count("OperatorGroup", &JournalEvent::Stopped), 1);
        let (code, _) = op.get("/readyz").await?;
        assert_eq!(code, 200, "ready once every watch has listed");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_catalog_operator_runs_one_actor_per_subscription_catalog_source_and_install_plan()
-> anyhow::Result<()> {
    use messages::crd::catalog_source::CatalogSource;
    use messages::crd::install_plan::InstallPlan;
    use messages::crd::subscription::Subscription;
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "catactors", |ctx| async move {
        let ns = ctx.namespace.clone();
        let op = OperatorProcess::start(
            ctx.cluster,
            "catalog-operator",
            &["--watched-namespaces", &ns],
        )
        .await?;
        let subs: Api<Subscription> = Api::namespaced(ctx.client.clone(), &ns);
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ns);
        let plans: Api<InstallPlan> = Api::namespaced(ctx.client.clone(), &ns);
        for n in 0..6 {
            let sub = Sub::named(&format!("sub{n}"))
                .package(&format!("pkg{n}"))
                .source("cat0", &ns)
                .channel("stable")
                .build();
            subs.create(&PostParams::default(), &sub).await?;
        }
        for n in 0..3 {
            let cat = Catsrc::named(&format!("cat{n}"))
                .address("127.0.0.1:1")
                .build();
            catalogs.create(&PostParams::default(), &cat).await?;
        }
        let ip = Ip::named("install-abc")
            .csvs(&["a.v1"])
            .approval(Approval::Manual, false)
            .build();
        plans.create(&PostParams::default(), &ip).await?;
        wait_for_count(&op, "Subscription", 6).await?;
        wait_for_count(&op, "CatalogSource", 3).await?;
        wait_for_count(&op, "InstallPlan", 1).await?;
        subs.delete("sub0", &DeleteParams::default()).await?;
        catalogs.delete("cat2", &DeleteParams::default()).await?;
        plans
            .delete("install-abc", &DeleteParams::default())
            .await?;
        wait_for_count(&op, "Subscription", 5).await?;
        wait_for_count(&op, "CatalogSource", 2).await?;
        wait_for_count(&op, "InstallPlan", 0).await?;
        Ok(())
    })
    .await
}
