//! Replacing OLM v0 with olm-rs in place (issue 17): objects exactly as OLM v0 leaves them (a Succeeded CSV, its
//! Deployment labelled with OLM's own `olm.deployment-spec-hash`, the pod template OLM renders) are taken over
//! without touching the running operator: no Deployment write, no new ReplicaSet, the CSV stays Succeeded. An
//! InstallPlan OLM v0 resolved and left waiting for Manual approval, its step manifests written as OLM writes
//! them (`ownerReferences[].uid: ""` for the CSV, filled at execution), completes once approved.
//!
//! The real takeover, from OLM v0 itself running as pods, is `full_cluster_olm_v0.rs`. This one stays beside it
//! for what that one cannot give: it runs on the light control plane in seconds, without images or a kubelet, in
//! every `cargo test` run, and it reads olm-rs's journal to judge "nothing written" only after the CSV's
//! reconcile has completed without error.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use messages::crd::csv::InstallModeType;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::install_plan::InstallPlan;
use messages::crd::operator_group::OperatorGroup;
use messages::crd::subscription::Approval;
use messages::msg::{Journal, JournalEvent};
use messages::testing::{Csv, Ip, Og, app_deployment};
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use serde_json::json;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(90);

/// The CSV as OLM v0 leaves it: the group's annotations on it, installed and Succeeded.
async fn csv_as_olm_left_it(ctx: &TestContext) -> anyhow::Result<ClusterServiceVersion> {
    let ns = ctx.namespace.as_str();
    let mut deployment = app_deployment("op", "operator", "example.com/op:1");
    deployment.replicas = Some(1);
    let csv = Csv::named("op.v1.0.0")
        .annotation("olm.operatorGroup", "og")
        .annotation("olm.operatorNamespace", ns)
        .annotation("olm.targetNamespaces", ns)
        .display_name("Taken over")
        .version("1.0.0")
        .install_modes(&[
            InstallModeType::OwnNamespace,
            InstallModeType::SingleNamespace,
        ])
        .deployment_spec("op", deployment)
        .build();
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), ns);
    let created = api.create(&PostParams::default(), &csv).await?;
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({"status": {
        "phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed with no errors",
        "lastUpdateTime": now, "lastTransitionTime": now,
        "conditions": [{"phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed with no errors",
                        "lastUpdateTime": now, "lastTransitionTime": now}]}});
    api.patch_status("op.v1.0.0", &PatchParams::default(), &Patch::Merge(status))
        .await?;
    Ok(created)
}

/// The Deployment as OLM v0 renders it (`deploymentForSpec`): the CSV's annotations on the pod template,
/// `OPERATOR_CONDITION_NAME`, `revisionHistoryLimit: 1`, OLM's owner labels and reference, and OLM's hash label.
async fn deployment_as_olm_rendered_it(
    ctx: &TestContext,
    csv: &ClusterServiceVersion,
) -> anyhow::Result<()> {
    let ns = ctx.namespace.as_str();
    let uid = csv.metadata.uid.clone().unwrap_or_default();
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "labels": {
            "olm.deployment-spec-hash": "7b5f7d4b9c", "olm.managed": "true",
            "olm.owner": "op.v1.0.0", "olm.owner.kind": "ClusterServiceVersion", "olm.owner.namespace": ns},
            "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "name": "op.v1.0.0", "uid": uid, "controller": false, "blockOwnerDeletion": false}]},
        "spec": {
            "replicas": 1, "revisionHistoryLimit": 1,
            "selector": {"matchLabels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}, "annotations": {
                    "olm.operatorGroup": "og", "olm.operatorNamespace": ns, "olm.targetNamespaces": ns}},
                "spec": {"containers": [{"name": "operator", "image": "example.com/op:1",
                    "env": [{"name": "OPERATOR_CONDITION_NAME", "value": "op.v1.0.0"}]}]}}}
    }))?;
    Api::<Deployment>::namespaced(ctx.client.clone(), ns)
        .create(&PostParams::default(), &deployment)
        .await?;
    Ok(())
}

async fn replica_sets(ctx: &TestContext) -> anyhow::Result<Vec<String>> {
    let list = Api::<ReplicaSet>::namespaced(ctx.client.clone(), &ctx.namespace)
        .list(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect())
}

#[tokio::test]
async fn an_operator_installed_by_olm_v0_keeps_running_untouched() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "takeover", |ctx| async move {
        let ns = ctx.namespace.clone();
        let og: OperatorGroup = Og::named("og").targets(&[&ns]).build();
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ns)
            .create(&PostParams::default(), &og)
            .await?;
        let csv = csv_as_olm_left_it(&ctx).await?;
        deployment_as_olm_rendered_it(&ctx, &csv).await?;
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
        let before = await_object(
            &deployments,
            "op",
            DEADLINE,
            "available with its ReplicaSet",
            |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref())
                    .is_some_and(|s| s.available_replicas == Some(1))
            },
        )
        .await?;
        let rs_before = eventually(DEADLINE, "one ReplicaSet", || async {
            let rs = replica_sets(&ctx).await?;
            Ok((rs.len() == 1).then_some(rs))
        })
        .await?;

        // olm-rs starts. Its first completed run of the CSV's reconcile loop (journaled) observed the Deployment,
        // decided, and applied what it decided: any rewrite would have happened in that run.
        let op =
            OperatorProcess::start(ctx.cluster, "olm-operator", &["--watched-namespaces", &ns])
                .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ns);
        let reconciled = eventually(DEADLINE, "a completed reconcile of op.v1.0.0", || async {
            let (code, bytes) = op.get("/debug/journal").await?;
            anyhow::ensure!(code == 200, "/debug/journal answered {code}");
            let journal = Journal::from_msgpack(&bytes)?;
            let done = journal.entries().any(|e| {
                e.kind == "ClusterServiceVersion"
                    && e.key.name == "op.v1.0.0"
                    && matches!(e.event, JournalEvent::Reconciled { error: None, .. })
            });
            Ok(if done {
                Some(csvs.get("op.v1.0.0").await?)
            } else {
                None
            })
        });
        let result = async {
            let reconciled = reconciled.await?;
            let status = reconciled.status.unwrap_or_default();
            assert_eq!(
                status.phase,
                CsvPhase::Succeeded,
                "the CSV left Succeeded: {status:?}"
            );
            assert!(
                status
                    .conditions
                    .iter()
                    .all(|c| c.phase == CsvPhase::Succeeded),
                "the CSV went through other phases: {:?}",
                status.conditions
            );
            let after = deployments.get("op").await?;
            assert_eq!(
                after.metadata.generation, before.metadata.generation,
                "the Deployment was rewritten"
            );
            assert_eq!(
                replica_sets(&ctx).await?,
                rs_before,
                "a new ReplicaSet rolled out"
            );
            Ok(())
        }
        .await;
        if result.is_err() {
            eprintln!("===== olm-operator log =====\n{}", op.logs());
        }
        drop(op);
        result
    })
    .await
}

/// An InstallPlan as OLM v0 leaves it when it waits for Manual approval: the CSV step, and a ServiceAccount step
/// whose manifest names the CSV as owner with an empty UID (OLM resolves before the CSV exists).
async fn plan_as_olm_wrote_it(ctx: &TestContext) -> anyhow::Result<String> {
    let ns = ctx.namespace.as_str();
    let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "op.v1.0.0", "namespace": ns, "creationTimestamp": null},
        "spec": {"displayName": "Waiting", "version": "1.0.0",
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true},
                             {"type": "MultiNamespace", "supported": false}, {"type": "AllNamespaces", "supported": false}],
            "install": {"strategy": "deployment", "spec": {"deployments": []}}}});
    let sa = json!({"kind": "ServiceAccount", "apiVersion": "v1",
        "metadata": {"name": "op", "namespace": ns, "creationTimestamp": null,
            "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "name": "op.v1.0.0", "uid": "", "controller": false, "blockOwnerDeletion": false}]}});
    let plans: Api<InstallPlan> = Api::namespaced(ctx.client.clone(), ns);
    let mut ip = Ip::named("install-olmv0")
        .csvs(&["op.v1.0.0"])
        .approval(Approval::Manual, false)
        .build();
    ip.spec.generation = Some(1);
    let mut ip = plans.create(&PostParams::default(), &ip).await?;
    ip.status = Some(serde_json::from_value(
        json!({"phase": "RequiresApproval", "catalogSources": ["cat"],
        "plan": [
            {"resolving": "op.v1.0.0", "status": "Unknown", "resource": {"sourceName": "cat", "sourceNamespace": ns,
                "group": "operators.coreos.com", "version": "v1alpha1", "kind": "ClusterServiceVersion",
                "name": "op.v1.0.0", "manifest": csv.to_string()}},
            {"resolving": "op.v1.0.0", "status": "Unknown", "resource": {"sourceName": "cat", "sourceNamespace": ns,
                "group": "", "version": "v1", "kind": "ServiceAccount", "name": "op", "manifest": sa.to_string()}}]}),
    )?);
    plans
        .replace_status("install-olmv0", &PostParams::default(), &ip)
        .await?;
    Ok("install-olmv0".to_string())
}

#[tokio::test]
async fn a_plan_olm_v0_left_waiting_for_approval_completes_once_approved() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "takeoverplan", |ctx| async move {
        let ns = ctx.namespace.clone();
        let og: OperatorGroup = Og::named("og").targets(&[&ns]).build();
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ns)
            .create(&PostParams::default(), &og)
            .await?;
        let name = plan_as_olm_wrote_it(&ctx).await?;
        let cat = OperatorProcess::start(
            ctx.cluster,
            "catalog-operator",
            &["--watched-namespaces", &ns, "--namespace", &ns],
        )
        .await?;
        let plans: Api<InstallPlan> = Api::namespaced(ctx.client.clone(), &ns);
        let result = async {
            // olm-rs runs and the plan still waits: nothing of it is applied before approval.
            let waiting = plans.get(&name).await?;
            assert_eq!(
                waiting
                    .status
                    .map(|s| s.phase.as_str().to_string())
                    .unwrap_or_default(),
                "RequiresApproval"
            );
            let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ns);
            assert!(
                csvs.get_opt("op.v1.0.0").await?.is_none(),
                "applied before approval"
            );

            olm_tests::catalog_fixture::approve_plan(&plans, &name).await?;
            await_object(
                &plans,
                &name,
                DEADLINE,
                "Complete",
                |p: Option<&InstallPlan>| {
                    p.and_then(|p| p.status.as_ref())
                        .is_some_and(|s| s.phase.as_str() == "Complete")
                },
            )
            .await?;
            let csv_uid = csvs
                .get("op.v1.0.0")
                .await?
                .metadata
                .uid
                .unwrap_or_default();
            let sa = Api::<ServiceAccount>::namespaced(ctx.client.clone(), &ns)
                .get("op")
                .await?;
            let owners: Vec<(String, String, String)> = sa
                .metadata
                .owner_references
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r.kind, r.name, r.uid))
                .collect();
            assert_eq!(
                owners,
                vec![(
                    "ClusterServiceVersion".to_string(),
                    "op.v1.0.0".to_string(),
                    csv_uid
                )],
                "the CSV owns the ServiceAccount once, with its real UID"
            );
            Ok(())
        }
        .await;
        if result.is_err() {
            eprintln!("===== catalog-operator log =====\n{}", cat.logs());
        }
        drop(cat);
        result
    })
    .await
}
