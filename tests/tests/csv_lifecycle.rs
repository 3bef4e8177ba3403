//! The ClusterServiceVersion lifecycle on the real control plane (spec §2, scenarios 9-13 of §8), observed
//! through the API as a user would: a CSV installs to Succeeded with a real Deployment (made ready by the node
//! simulator), drift is repaired, a 3-CSV replaces chain converges to its newest member whatever the order the
//! CSVs arrived in, deleting a CSV garbage-collects what it installed, and bad CSVs reach Failed with OLM's
//! reason while a good CSV beside them succeeds.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, CsvReason, RequirementStatusReason};
use messages::crd::operator_group::OperatorGroup;
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(90);

/// A CSV installing one deployment `deployment` running `image`, optionally replacing `replaces`.
fn csv(name: &str, version: &str, replaces: Option<&str>, deployment: &str, image: &str) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {
            "displayName": "Test operator", "version": version, "replaces": replaces,
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": false}],
            "install": {"strategy": "deployment", "spec": {
                "permissions": [{"serviceAccountName": format!("{deployment}-sa"), "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}],
                "clusterPermissions": [{"serviceAccountName": format!("{deployment}-sa"), "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]}],
                "deployments": [{"name": deployment, "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": deployment}},
                    "template": {"metadata": {"labels": {"app": deployment}},
                                 "spec": {"serviceAccountName": format!("{deployment}-sa"), "containers": [{"name": "operator", "image": image}]}}
                }}]
            }}
        }
    })
}

async fn create_csv(ctx: &TestContext, value: Value) -> anyhow::Result<()> {
    let csv: ClusterServiceVersion = serde_json::from_value(value)?;
    Api::<ClusterServiceVersion>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&PostParams::default(), &csv)
        .await?;
    Ok(())
}

async fn create_group(ctx: &TestContext) -> anyhow::Result<()> {
    let og: OperatorGroup = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og"}, "spec": {"targetNamespaces": [ctx.namespace]}
    }))?;
    Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&PostParams::default(), &og)
        .await?;
    Ok(())
}

fn csvs(ctx: &TestContext) -> Api<ClusterServiceVersion> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

async fn await_phase(
    ctx: &TestContext,
    name: &str,
    phase: CsvPhase,
    reason: CsvReason,
) -> anyhow::Result<ClusterServiceVersion> {
    let what = format!("phase {phase} reason {reason}");
    await_object(
        &csvs(ctx),
        name,
        DEADLINE,
        &what,
        move |c: Option<&ClusterServiceVersion>| {
            c.is_some_and(|c| c.phase() == phase && c.reason() == reason)
        },
    )
    .await
}

async fn await_gone<K>(api: &Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(DEADLINE, &format!("{name} deleted"), || async {
        Ok(api.get_opt(name).await?.is_none().then_some(()))
    })
    .await
}

/// Event reasons recorded for one object, oldest first.
async fn event_reasons(ctx: &TestContext, object: &str) -> anyhow::Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut list = events
        .list(&ListParams::default().fields(&format!("involvedObject.name={object}")))
        .await?
        .items;
    list.sort_by(|a, b| {
        a.metadata
            .creation_timestamp
            .cmp(&b.metadata.creation_timestamp)
    });
    Ok(list.into_iter().filter_map(|e| e.reason).collect())
}

/// The metrics text of the operator listening on `port` (a plain HTTP/1.0 GET).
async fn metrics(port: u16) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    Ok(body)
}

/// The value of an unlabelled metric.
fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// Run `body` with an olm-operator watching a fresh namespace (`body` gets its HTTP port); the operator lives
/// until `body` ends, and its log is printed when `body` fails.
async fn with_operator<F, Fut>(prefix: &str, body: F) -> anyhow::Result<()>
where
    F: FnOnce(TestContext, u16) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let cluster = Cluster::shared()?;
    with_namespace(cluster, prefix, |ctx| async move {
        let op = OperatorProcess::start(
            ctx.cluster,
            "olm-operator",
            &["--watched-namespaces", &ctx.namespace.clone()],
        )
        .await?;
        let result = body(ctx, op.http_port).await;
        if result.is_err() {
            let text = std::fs::read_to_string(&op.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            eprintln!(
                "===== olm-operator log (last 60 lines) =====\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        drop(op);
        result
    })
    .await
}

#[tokio::test]
async fn a_csv_installs_to_succeeded_with_a_real_deployment() -> anyhow::Result<()> {
    with_operator("csv-install", |ctx, port| async move {
        create_group(&ctx).await?;
        create_csv(
            &ctx,
            csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1"),
        )
        .await?;
        let done = await_phase(
            &ctx,
            "op.v1.0.0",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        let status = done.status.clone().unwrap_or_default();
        assert_eq!(status.message, "install strategy completed with no errors");
        let history: Vec<(String, String)> = status
            .conditions
            .iter()
            .map(|c| (c.phase.to_string(), c.reason.to_string()))
            .collect();
        for step in [
            ("Pending", "RequirementsUnknown"),
            ("InstallReady", "AllRequirementsMet"),
            ("Installing", "InstallSucceeded"),
            ("Succeeded", "InstallSucceeded"),
        ] {
            assert!(
                history.contains(&(step.0.to_string(), step.1.to_string())),
                "{step:?} missing from {history:?}"
            );
        }
        let sa = status
            .requirement_status
            .iter()
            .find(|r| r.kind == "ServiceAccount")
            .expect("a service account requirement");
        assert_eq!(sa.status, RequirementStatusReason::Present);
        assert!(
            sa.dependents
                .iter()
                .all(|d| d.status == RequirementStatusReason::Satisfied),
            "{:?}",
            sa.dependents
        );

        let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("op")
            .await?;
        let labels = deployment.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("olm.managed").map(String::as_str), Some("true"));
        assert_eq!(
            labels.get("olm.owner").map(String::as_str),
            Some("op.v1.0.0")
        );
        assert_eq!(
            labels.get("olm.owner.kind").map(String::as_str),
            Some("ClusterServiceVersion")
        );
        assert!(labels.contains_key("olm.deployment-spec-hash"));
        let owners = deployment
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default();
        assert_eq!(
            owners
                .iter()
                .map(|o| (o.kind.as_str(), o.name.as_str()))
                .collect::<Vec<_>>(),
            vec![("ClusterServiceVersion", "op.v1.0.0")]
        );
        let template = deployment
            .spec
            .clone()
            .and_then(|s| s.template.metadata)
            .and_then(|m| m.annotations)
            .unwrap_or_default();
        assert_eq!(
            template.get("olm.targetNamespaces"),
            Some(&ctx.namespace),
            "group annotations reach the pod template"
        );
        assert!(
            deployment
                .status
                .and_then(|s| s.available_replicas)
                .unwrap_or(0)
                >= 1
        );

        Api::<ServiceAccount>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("op-sa")
            .await?;
        Api::<Role>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("op.v1.0.0-op-sa")
            .await?;
        Api::<RoleBinding>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("op.v1.0.0-op-sa")
            .await?;
        let cluster_roles = Api::<ClusterRole>::all(ctx.client.clone())
            .list(&ListParams::default().labels(&format!(
                "olm.owner=op.v1.0.0,olm.owner.namespace={}",
                ctx.namespace
            )))
            .await?;
        assert_eq!(cluster_roles.items.len(), 1);

        let reasons = event_reasons(&ctx, "op.v1.0.0").await?;
        assert!(
            reasons.contains(&"AllRequirementsMet".to_string())
                && reasons.contains(&"InstallSucceeded".to_string()),
            "{reasons:?}"
        );
        let metrics = metrics(port).await?;
        let series = format!(
            "csv_succeeded{{name=\"op.v1.0.0\",namespace=\"{}\",version=\"1.0.0\"}} 1",
            ctx.namespace
        );
        assert!(metrics.contains(&series), "{series} not in\n{metrics}");
        Ok(())
    })
    .await
}

/// A CustomResourceDefinition `widgets.<group>` (kind Widget, v1, namespaced).
fn widget_crd(
    group: &str,
) -> anyhow::Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))?)
}

/// `csv(...)` owning the CRD `widgets.<group>`.
fn owning_widgets(mut value: Value, group: &str) -> Value {
    value["spec"]["customresourcedefinitions"] = json!({"owned": [{
        "name": format!("widgets.{group}"), "version": "v1", "kind": "Widget", "displayName": "Widget"
    }]});
    value
}

#[tokio::test]
async fn a_missing_owned_crd_holds_the_csv_pending_and_a_second_owner_conflicts()
-> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    with_operator("csv-reqs", |ctx, _port| async move {
        let group = format!("{}.example.com", ctx.namespace);
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let result = async {
            create_group(&ctx).await?;
            create_csv(
                &ctx,
                owning_widgets(
                    csv("req.v1.0.0", "1.0.0", None, "req", "example.com/req:1"),
                    &group,
                ),
            )
            .await?;
            // Scenario 9: the owned CRD is not there → Pending/RequirementsNotMet, its requirement NotPresent.
            let pending = await_phase(
                &ctx,
                "req.v1.0.0",
                CsvPhase::Pending,
                CsvReason::RequirementsNotMet,
            )
            .await?;
            let statuses = pending.status.unwrap_or_default().requirement_status;
            let crd_status = statuses
                .iter()
                .find(|s| s.kind == "CustomResourceDefinition")
                .map(|s| (s.name.clone(), s.status.clone()));
            assert_eq!(
                crd_status,
                Some((
                    format!("widgets.{group}"),
                    RequirementStatusReason::NotPresent
                )),
                "{statuses:?}"
            );
            // Once the CRD exists (and is established) the CSV installs.
            crds.create(&PostParams::default(), &widget_crd(&group)?)
                .await?;
            await_phase(
                &ctx,
                "req.v1.0.0",
                CsvPhase::Succeeded,
                CsvReason::InstallSucceeded,
            )
            .await?;
            // Scenario 10: another CSV of the namespace, not in req's replaces chain, owning the same CRD.
            create_csv(
                &ctx,
                owning_widgets(
                    csv(
                        "rival.v1.0.0",
                        "1.0.0",
                        None,
                        "rival",
                        "example.com/rival:1",
                    ),
                    &group,
                ),
            )
            .await?;
            let rival = await_phase(
                &ctx,
                "rival.v1.0.0",
                CsvPhase::Failed,
                CsvReason::OwnerConflict,
            )
            .await?;
            assert_eq!(
                rival.status.unwrap_or_default().message,
                "conflicting CRD owner in namespace"
            );
            // The first owner is left alone, and the rival installed nothing.
            await_phase(
                &ctx,
                "req.v1.0.0",
                CsvPhase::Succeeded,
                CsvReason::InstallSucceeded,
            )
            .await?;
            let rival_deployment =
                Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
                    .get_opt("rival")
                    .await?;
            assert!(
                rival_deployment.is_none(),
                "a conflicting CSV installs nothing"
            );
            anyhow::Ok(())
        }
        .await;
        let _ = crds
            .delete(&format!("widgets.{group}"), &DeleteParams::default())
            .await;
        result
    })
    .await
}

#[tokio::test]
async fn a_csv_failed_for_good_tries_again_when_its_group_changes() -> anyhow::Result<()> {
    with_operator("csv-noretry", |ctx, _port| async move {
        create_group(&ctx).await?;
        // The API server rejects the deployment (a container name is a DNS label): retrying cannot help.
        let mut bad = csv("bad.v1.0.0", "1.0.0", None, "bad", "example.com/bad:1");
        bad["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"]
            [0]["name"] = json!("Not_A_Label");
        create_csv(&ctx, bad).await?;
        await_phase(
            &ctx,
            "bad.v1.0.0",
            CsvPhase::Failed,
            CsvReason::InstallComponentFailedNoRetry,
        )
        .await?;
        // The group gets a service account: OLM takes that as a cluster change and lets the CSV try again.
        let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let mut sa = ServiceAccount::default();
        sa.metadata.name = Some("installer".into());
        accounts.create(&PostParams::default(), &sa).await?;
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ctx.namespace)
            .patch(
                "og",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"serviceAccountName": "installer"}})),
            )
            .await?;
        await_object(
            &csvs(&ctx),
            "bad.v1.0.0",
            DEADLINE,
            "Pending/DetectedClusterChange in the history, then NoRetry again",
            |c: Option<&ClusterServiceVersion>| {
                let Some(status) = c.and_then(|c| c.status.as_ref()) else {
                    return false;
                };
                let retried = status.conditions.iter().any(|h| {
                    h.reason == CsvReason::DetectedClusterChange
                        && h.message == "Cluster resources changed state"
                });
                retried && status.reason == CsvReason::InstallComponentFailedNoRetry
            },
        )
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_subscription_config_is_projected_onto_the_deployment() -> anyhow::Result<()> {
    use messages::crd::subscription::Subscription;
    with_operator("csv-subconfig", |ctx, _port| async move {
        create_group(&ctx).await?;
        create_csv(&ctx, csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1")).await?;
        await_phase(&ctx, "op.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        // A Subscription that installed op.v1.0.0 (as catalog-operator would record it), with a config.
        let subs: Api<Subscription> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let sub: Subscription = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": {"name": "op"},
            "spec": {"name": "op", "source": "nowhere", "sourceNamespace": ctx.namespace, "channel": "stable",
                     "config": {"env": [{"name": "LOG_LEVEL", "value": "debug"}], "nodeSelector": {"disk": "ssd"},
                                "annotations": {"team": "storage"}}}
        }))?;
        subs.create(&PostParams::default(), &sub).await?;
        // As catalog-operator writes it (OLM's schema requires lastUpdated).
        let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        subs.patch_status("op", &PatchParams::default(), &Patch::Merge(json!({"status": {"installedCSV": "op.v1.0.0", "state": "AtLatestKnown", "lastUpdated": now}}))).await?;
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let env_of = |d: Option<&Deployment>, name: &str| -> Option<String> {
            d?.spec.as_ref()?.template.spec.as_ref()?.containers.first()?.env.as_ref()?.iter().find(|e| e.name == name)?.value.clone()
        };
        await_object(&deployments, "op", DEADLINE, "env, nodeSelector and annotation from the Subscription", move |d: Option<&Deployment>| {
            let pod = d.and_then(|d| d.spec.as_ref()).map(|s| &s.template);
            let selector_ok = pod.and_then(|t| t.spec.as_ref()).and_then(|p| p.node_selector.as_ref()).and_then(|n| n.get("disk")).map(String::as_str) == Some("ssd");
            let annotated = pod.and_then(|t| t.metadata.as_ref()).and_then(|m| m.annotations.as_ref()).and_then(|a| a.get("team")).map(String::as_str) == Some("storage");
            env_of(d, "LOG_LEVEL").as_deref() == Some("debug") && selector_ok && annotated
        })
        .await?;
        // A config change is a drift: the deployment follows it.
        subs.patch("op", &PatchParams::default(), &Patch::Merge(json!({"spec": {"config": {"env": [{"name": "LOG_LEVEL", "value": "info"}]}}}))).await?;
        await_object(&deployments, "op", DEADLINE, "LOG_LEVEL=info", move |d: Option<&Deployment>| env_of(d, "LOG_LEVEL").as_deref() == Some("info")).await?;
        await_phase(&ctx, "op.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_operator_condition_not_upgradeable_holds_the_upgrade_until_overridden()
-> anyhow::Result<()> {
    use messages::crd::operator_condition::OperatorCondition;
    with_operator("csv-upgradeable", |ctx, _port| async move {
        create_group(&ctx).await?;
        create_csv(&ctx, csv("a.v1", "1.0.0", None, "a", "example.com/a:1")).await?;
        await_phase(&ctx, "a.v1", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        // Each CSV gets an OperatorCondition named like it, with its accounts and deployments, and a Role the
        // operator's account may use to update it.
        let conditions: Api<OperatorCondition> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let oc = await_object(&conditions, "a.v1", DEADLINE, "created for the CSV", |o: Option<&OperatorCondition>| o.is_some()).await?;
        assert_eq!(oc.spec.service_accounts, ["a-sa"]);
        assert_eq!(oc.spec.deployments, ["a"]);
        let role = Api::<Role>::namespaced(ctx.client.clone(), &ctx.namespace).get("a.v1").await?;
        assert_eq!(role.rules.unwrap_or_default()[0].verbs, ["get", "update", "patch"]);
        // The operator says it may not be upgraded now; the status copies it.
        let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let no = json!({"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": "migrating data", "lastTransitionTime": now});
        conditions.patch("a.v1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"conditions": [no]}}))).await?;
        await_object(&conditions, "a.v1", DEADLINE, "status.conditions Upgradeable=False", |o: Option<&OperatorCondition>| {
            o.and_then(|o| o.status.as_ref()).is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Upgradeable" && c.status == "False"))
        })
        .await?;
        create_csv(&ctx, csv("a.v2", "2.0.0", Some("a.v1"), "a", "example.com/a:2")).await?;
        let held = await_phase(&ctx, "a.v2", CsvPhase::Pending, CsvReason::OperatorConditionNotUpgradeable).await?;
        assert_eq!(held.status.unwrap_or_default().message, "operator is not upgradeable: migrating data");
        // A cluster admin overrides (as admins write overrides: without lastTransitionTime, which OLM's schema
        // does not require): the upgrade goes on.
        let yes = json!({"type": "Upgradeable", "status": "True", "reason": "Override", "message": "go"});
        conditions.patch("a.v1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"overrides": [yes]}}))).await?;
        await_phase(&ctx, "a.v2", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        await_gone(&csvs(&ctx), "a.v1").await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_deployment_changed_or_deleted_behind_our_back_is_repaired() -> anyhow::Result<()> {
    with_operator("csv-drift", |ctx, _port| async move {
        create_group(&ctx).await?;
        create_csv(&ctx, csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1")).await?;
        await_phase(&ctx, "op.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let image = |d: Option<&Deployment>| d.and_then(|d| d.spec.as_ref()).and_then(|s| s.template.spec.as_ref()).and_then(|p| p.containers[0].image.clone());
        let evil = json!({"spec": {"template": {"spec": {"containers": [{"name": "operator", "image": "example.com/evil:6"}]}}}});
        deployments.patch("op", &PatchParams::default(), &Patch::Strategic(&evil)).await?;
        await_object(&deployments, "op", DEADLINE, "image restored", move |d| image(d).as_deref() == Some("example.com/op:1")).await?;
        await_phase(&ctx, "op.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;

        deployments.delete("op", &DeleteParams::foreground()).await?;
        await_object(&deployments, "op", DEADLINE, "deployment recreated", |d| d.is_some_and(|d| d.metadata.deletion_timestamp.is_none() && d.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0) >= 1)).await?;
        let done = await_phase(&ctx, "op.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        let history: Vec<String> = done.status.unwrap_or_default().conditions.iter().map(|c| c.reason.to_string()).collect();
        assert!(history.iter().any(|r| r == "ComponentUnhealthy" || r == "NeedsReinstall"), "the repair shows in the history: {history:?}");
        Ok(())
    })
    .await
}

/// Create a.v1 ← a.v2 ← a.v3 in `order` (before any OperatorGroup, so all exist before the first sync),
/// then the group: the chain must converge to a.v3 Succeeded, with a.v1 and a.v2 replaced and deleted.
async fn chain_converges(prefix: &str, order: [u32; 3]) -> anyhow::Result<()> {
    with_operator(prefix, |ctx, port| async move {
        for n in order {
            let replaces = (n > 1).then(|| format!("a.v{}", n - 1));
            create_csv(
                &ctx,
                csv(
                    &format!("a.v{n}"),
                    &format!("{n}.0.0"),
                    replaces.as_deref(),
                    "a",
                    &format!("example.com/a:{n}"),
                ),
            )
            .await?;
        }
        create_group(&ctx).await?;
        await_phase(
            &ctx,
            "a.v3",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        await_gone(&csvs(&ctx), "a.v1").await?;
        await_gone(&csvs(&ctx), "a.v2").await?;
        let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("a")
            .await?;
        let image = deployment
            .spec
            .and_then(|s| s.template.spec)
            .map(|p| p.containers[0].image.clone().unwrap_or_default());
        assert_eq!(image.as_deref(), Some("example.com/a:3"));
        for old in ["a.v1", "a.v2"] {
            let reasons = event_reasons(&ctx, old).await?;
            assert!(
                reasons.contains(&"BeingReplaced".to_string())
                    && reasons.contains(&"Replaced".to_string()),
                "{old}: {reasons:?}"
            );
        }
        let text = metrics(port).await?;
        let upgrades = metric_value(&text, "csv_upgrade_count").unwrap_or(0.0);
        assert!(
            upgrades >= 2.0,
            "both older CSVs counted as upgrades: {upgrades}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_replaces_chain_arriving_oldest_first_converges_to_the_newest() -> anyhow::Result<()> {
    chain_converges("csv-chain-123", [1, 2, 3]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_newest_first_converges_to_the_newest() -> anyhow::Result<()> {
    chain_converges("csv-chain-321", [3, 2, 1]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_middle_first_converges_to_the_newest() -> anyhow::Result<()> {
    chain_converges("csv-chain-213", [2, 1, 3]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_newest_then_oldest_converges_to_the_newest() -> anyhow::Result<()>
{
    chain_converges("csv-chain-312", [3, 1, 2]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_oldest_then_newest_converges_to_the_newest() -> anyhow::Result<()>
{
    chain_converges("csv-chain-132", [1, 3, 2]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_middle_then_newest_converges_to_the_newest() -> anyhow::Result<()>
{
    chain_converges("csv-chain-231", [2, 3, 1]).await
}

#[tokio::test]
async fn an_upgrade_replaces_the_running_csv_step_by_step() -> anyhow::Result<()> {
    with_operator("csv-upgrade", |ctx, _port| async move {
        create_group(&ctx).await?;
        create_csv(&ctx, csv("a.v1", "1.0.0", None, "a", "example.com/a:1")).await?;
        await_phase(
            &ctx,
            "a.v1",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        for n in [2u32, 3] {
            let (old, new) = (format!("a.v{}", n - 1), format!("a.v{n}"));
            create_csv(
                &ctx,
                csv(
                    &new,
                    &format!("{n}.0.0"),
                    Some(&old),
                    "a",
                    &format!("example.com/a:{n}"),
                ),
            )
            .await?;
            await_phase(&ctx, &new, CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
            await_gone(&csvs(&ctx), &old).await?;
            let reasons = event_reasons(&ctx, &old).await?;
            let replacing = reasons.iter().position(|r| r == "BeingReplaced");
            let replaced = reasons.iter().position(|r| r == "Replaced");
            assert!(
                matches!((replacing, replaced), (Some(a), Some(b)) if a < b),
                "{old} went Replacing then Deleting: {reasons:?}"
            );
        }
        // The deployment survived the hand-overs and now belongs to the newest CSV only.
        let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("a")
            .await?;
        let owners: Vec<String> = deployment
            .metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| o.name)
            .collect();
        assert_eq!(owners, vec!["a.v3".to_string()]);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn deleting_a_csv_garbage_collects_what_it_installed() -> anyhow::Result<()> {
    with_operator("csv-delete", |ctx, _port| async move {
        create_group(&ctx).await?;
        create_csv(
            &ctx,
            csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1"),
        )
        .await?;
        await_phase(
            &ctx,
            "op.v1.0.0",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        csvs(&ctx)
            .delete("op.v1.0.0", &DeleteParams::background())
            .await?;
        await_gone(
            &Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace),
            "op",
        )
        .await?;
        await_gone(
            &Api::<ServiceAccount>::namespaced(ctx.client.clone(), &ctx.namespace),
            "op-sa",
        )
        .await?;
        await_gone(
            &Api::<Role>::namespaced(ctx.client.clone(), &ctx.namespace),
            "op.v1.0.0-op-sa",
        )
        .await?;
        let selector = format!("olm.owner=op.v1.0.0,olm.owner.namespace={}", ctx.namespace);
        let client = ctx.client.clone();
        eventually(DEADLINE, "cluster roles of the CSV deleted", || {
            let (client, selector) = (client.clone(), selector.clone());
            async move {
                Ok(Api::<ClusterRole>::all(client)
                    .list(&ListParams::default().labels(&selector))
                    .await?
                    .items
                    .is_empty()
                    .then_some(()))
            }
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn bad_csvs_fail_with_olms_reason_while_a_good_csv_beside_them_succeeds() -> anyhow::Result<()>
{
    with_operator("csv-bad", |ctx, port| async move {
        create_group(&ctx).await?;
        let mut helm = csv("helm.v1.0.0", "1.0.0", None, "helm", "example.com/helm:1");
        helm["spec"]["install"]["strategy"] = json!("helm");
        create_csv(&ctx, helm).await?;
        let mut mismatch = csv("mismatch.v1.0.0", "1.0.0", None, "mismatch", "example.com/m:1");
        mismatch["spec"]["install"]["spec"]["deployments"][0]["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
        create_csv(&ctx, mismatch).await?;
        create_csv(&ctx, csv("semver.v1", "one", None, "semver", "example.com/s:1")).await?;
        let mut no_verbs = csv("perm.v1.0.0", "1.0.0", None, "perm", "example.com/p:1");
        no_verbs["spec"]["install"]["spec"]["permissions"][0]["rules"][0]["verbs"] = json!([]);
        create_csv(&ctx, no_verbs).await?;
        create_csv(&ctx, csv("loop.v1", "1.0.0", Some("loop.v2"), "loop", "example.com/l:1")).await?;
        create_csv(&ctx, csv("loop.v2", "2.0.0", Some("loop.v1"), "loop", "example.com/l:2")).await?;
        create_csv(&ctx, csv("good.v1.0.0", "1.0.0", None, "good", "example.com/good:1")).await?;

        let helm = await_phase(&ctx, "helm.v1.0.0", CsvPhase::Failed, CsvReason::InvalidInstallStrategy).await?;
        assert_eq!(helm.status.unwrap_or_default().message, "install strategy invalid: unsupported install strategy \"helm\" (only \"deployment\" is supported)");
        let mismatch = await_phase(&ctx, "mismatch.v1.0.0", CsvPhase::Failed, CsvReason::InvalidInstallStrategy).await?;
        assert!(mismatch.status.unwrap_or_default().message.contains("selector does not match template labels"));
        let perm = await_phase(&ctx, "perm.v1.0.0", CsvPhase::Failed, CsvReason::InvalidInstallStrategy).await?;
        assert_eq!(perm.status.unwrap_or_default().message, "install strategy invalid: service account \"perm-sa\": rule #0 has no verbs");
        let semver = await_phase(&ctx, "semver.v1", CsvPhase::Failed, CsvReason::RequirementsNotMet).await?;
        assert!(semver.status.unwrap_or_default().message.contains("is not a semantic version"));
        for name in ["loop.v1", "loop.v2"] {
            let looped = await_phase(&ctx, name, CsvPhase::Failed, CsvReason::RequirementsNotMet).await?;
            assert!(looped.status.unwrap_or_default().message.contains("spec.replaces forms a cycle"), "{name}");
        }
        await_phase(&ctx, "good.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        // Nothing else was deleted or installed for the bad ones.
        let names: Vec<String> = csvs(&ctx).list(&ListParams::default()).await?.items.into_iter().filter_map(|c| c.metadata.name).collect();
        assert_eq!(names.len(), 7, "{names:?}");
        let deployments: Vec<String> = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace).list(&ListParams::default()).await?.items.into_iter().filter_map(|d| d.metadata.name).collect();
        assert_eq!(deployments, vec!["good".to_string()]);
        let reasons = event_reasons(&ctx, "helm.v1.0.0").await?;
        assert!(reasons.contains(&"InvalidInstallStrategy".to_string()), "a Warning Event says why: {reasons:?}");

        // csv_abnormal carries the failed CSV's phase and reason, and its series goes with the CSV (scenario 38).
        let abnormal = |text: &str| text.lines().any(|l| l.starts_with("csv_abnormal{") && l.contains("name=\"helm.v1.0.0\"") && l.contains("reason=\"InvalidInstallStrategy\"") && l.contains("phase=\"Failed\""));
        eventually(DEADLINE, "csv_abnormal for helm.v1.0.0", || async { Ok(abnormal(&metrics(port).await?).then_some(())) }).await?;
        csvs(&ctx).delete("helm.v1.0.0", &DeleteParams::background()).await?;
        eventually(DEADLINE, "csv_abnormal series of helm.v1.0.0 removed", || async { Ok((!abnormal(&metrics(port).await?)).then_some(())) }).await?;
        Ok(())
    })
    .await
}
