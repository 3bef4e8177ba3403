//! A watch never stalls on one bad object (issue 12): a CSV whose stored JSON does not decode as our type (the
//! API server accepts `maxSurge: 9999999999` in its Deployment spec, an int-or-string field with no range, while
//! k8s-openapi's `IntOrString` holds an `i32`) sits beside a good CSV when olm-operator starts: the bad one is
//! skipped and reported (a warning naming it, the `olm_rs_undecodable_objects_total{kind}` counter) and the good
//! one installs. A CSV that stops decoding once installed is held (issue 31): a Warning Event names it and the
//! decoding error, `olm_rs_objects_held_undecodable` counts it, and its actor does not act on the version it had
//! (its Deployment deleted stays deleted) until the CSV decodes again; deleted while it does not decode, its
//! actor is stopped all the same.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::msg::{Journal, JournalEvent};
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, OperatorProcess, await_object, eventually, with_namespace};
use serde_json::{Value, json};

#[tokio::test]
async fn a_csv_that_does_not_decode_is_skipped_and_the_others_reconcile() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "undecodable", |ctx| async move {
        operator_group(&ctx).await?;
        let resource = ApiResource::erase::<ClusterServiceVersion>(&());
        let raw: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &ctx.namespace, &resource);
        let bad: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "bad.v1.0.0"},
            "spec": {"displayName": "bad", "version": "1.0.0",
                "installModes": [{"type": "OwnNamespace", "supported": true}],
                "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "bad", "spec": {
                    "selector": {"matchLabels": {"app": "bad"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 9_999_999_999_u64}},
                    "template": {"metadata": {"labels": {"app": "bad"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}]}}}
        }))?;
        raw.create(&PostParams::default(), &bad).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(
            csvs.get("bad.v1.0.0").await.is_err(),
            "the stored CSV must not decode as our type"
        );
        create_manifest::<ClusterServiceVersion>(&ctx, Op::new("good", "1.0.0").csv()).await?;

        let olm = olm_operator(&ctx).await?;
        await_object(&csvs, "good.v1.0.0", DEADLINE, "Succeeded beside a bad CSV", |c| {
            c.is_some_and(|c| c.phase() == CsvPhase::Succeeded)
        })
        .await?;
        let olm = &olm;
        eventually(DEADLINE, "the bad CSV counted and named", || async move {
            let (_, body) = olm.get("/metrics").await?;
            let metrics = String::from_utf8_lossy(&body);
            let counted = metrics.lines().any(|l| {
                l.starts_with("olm_rs_undecodable_objects_total{kind=\"ClusterServiceVersion\"}")
                    && l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v >= 1.0)
            });
            let named = olm.logs().contains("bad.v1.0.0");
            Ok((counted && named).then_some(()))
        })
        .await?;
        Ok(())
    })
    .await
}

/// `csv`'s spec with its Deployment's `maxSurge` out of `IntOrString`'s range (the API server stores it; we cannot
/// decode it), or as it was.
fn spec(csv: &Value, decodes: bool) -> Value {
    let mut spec = csv["spec"].clone();
    if !decodes {
        spec["install"]["spec"]["deployments"][0]["spec"]["strategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 9_999_999_999_u64}});
    }
    json!({ "spec": spec })
}

/// The value of `olm_rs_objects_held_undecodable{kind="ClusterServiceVersion"}`.
async fn held(olm: &OperatorProcess) -> anyhow::Result<Option<f64>> {
    let (_, body) = olm.get("/metrics").await?;
    Ok(String::from_utf8_lossy(&body)
        .lines()
        .find(|l| l.starts_with("olm_rs_objects_held_undecodable{kind=\"ClusterServiceVersion\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok()))
}

/// The journal entries of the CSV `name`.
async fn journal_of(olm: &OperatorProcess, name: &str) -> anyhow::Result<Vec<JournalEvent>> {
    let (_, bytes) = olm.get("/debug/journal").await?;
    let journal = Journal::from_msgpack(&bytes)?;
    Ok(journal
        .entries()
        .filter(|e| e.kind == "ClusterServiceVersion" && e.key.name == name)
        .map(|e| e.event.clone())
        .collect())
}

#[tokio::test]
async fn a_csv_that_stops_decoding_is_held_until_it_decodes_and_its_deletion_still_stops_its_actor()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "undecodable-held", |ctx| async move {
        operator_group(&ctx).await?;
        let op = Op::new("held", "1.0.0");
        let name = op.name();
        let csv = op.csv();
        create_manifest::<ClusterServiceVersion>(&ctx, csv.clone()).await?;
        let olm = olm_operator(&ctx).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let resource = ApiResource::erase::<ClusterServiceVersion>(&());
        let raw: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &ctx.namespace, &resource);
        await_object(&csvs, &name, DEADLINE, "Succeeded", |c| {
            c.is_some_and(|c| c.phase() == CsvPhase::Succeeded)
        })
        .await?;

        raw.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(spec(&csv, false)),
        )
        .await?;
        let events: Api<Event> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let (events, name_ref, olm_ref) = (&events, &name, &olm);
        eventually(
            DEADLINE,
            "a Warning Event naming the CSV and the decoding error",
            || async move {
                let list = events
                    .list(&ListParams::default().fields(&format!("involvedObject.name={name_ref}")))
                    .await?;
                Ok(list
                    .items
                    .iter()
                    .any(|e| {
                        e.reason.as_deref() == Some("UndecodableObject")
                            && e.type_.as_deref() == Some("Warning")
                            && e.message
                                .as_deref()
                                .is_some_and(|m| m.contains("9999999999"))
                    })
                    .then_some(()))
            },
        )
        .await?;
        eventually(DEADLINE, "the CSV counted as held", || async move {
            Ok((held(olm_ref).await? == Some(1.0)).then_some(()))
        })
        .await?;

        // Held: the deletion of its Deployment reaches the actor as a cause, and no run follows it.
        let deployment = "held-operator";
        deployments
            .delete(deployment, &DeleteParams::default())
            .await?;
        eventually(DEADLINE, "a cause held by the CSV's actor", || async move {
            let journal = journal_of(olm_ref, name_ref).await?;
            Ok(journal
                .iter()
                .any(|e| matches!(e, JournalEvent::Held { .. }))
                .then_some(()))
        })
        .await?;
        assert!(
            deployments.get_opt(deployment).await?.is_none(),
            "a held actor does not reinstall from the version it had"
        );
        let runs_while_held = journal_of(&olm, &name)
            .await?
            .into_iter()
            .skip_while(|e| !matches!(e, JournalEvent::Held { .. }))
            .filter(|e| matches!(e, JournalEvent::Reconciled { .. }))
            .count();
        assert_eq!(runs_while_held, 0, "no run once the actor holds");

        // Decodable again: the actor reconciles and reinstalls.
        raw.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(spec(&csv, true)),
        )
        .await?;
        await_object(
            &deployments,
            deployment,
            DEADLINE,
            "reinstalled once the CSV decodes",
            |d| d.is_some(),
        )
        .await?;
        eventually(DEADLINE, "nothing held", || async move {
            Ok((held(olm_ref).await? == Some(0.0)).then_some(()))
        })
        .await?;

        // Deleted while it does not decode: the deletion is seen and the actor stops.
        raw.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(spec(&csv, false)),
        )
        .await?;
        eventually(DEADLINE, "held again", || async move {
            Ok((held(olm_ref).await? == Some(1.0)).then_some(()))
        })
        .await?;
        csvs.delete(&name, &DeleteParams::default()).await?;
        eventually(
            DEADLINE,
            "the CSV's actor stopped by a deletion that does not decode",
            || async move {
                let journal = journal_of(olm_ref, name_ref).await?;
                let stopped = journal
                    .iter()
                    .skip_while(|e| !matches!(e, JournalEvent::Undecodable { deleted: true, .. }))
                    .any(|e| *e == JournalEvent::Stopped);
                let counts = olm_ref.actor_counts().await?;
                let none = counts.get("ClusterServiceVersion").copied().unwrap_or(0) == 0;
                Ok((stopped && none && held(olm_ref).await? == Some(0.0)).then_some(()))
            },
        )
        .await?;
        Ok(())
    })
    .await
}
