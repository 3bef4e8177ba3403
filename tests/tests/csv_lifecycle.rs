//! The ClusterServiceVersion lifecycle on the real control plane (spec §2, scenarios 9-13 of §8), observed
//! through the API as a user would: a CSV installs to Succeeded with a real Deployment (made ready by the node
//! simulator), drift is repaired, the Deployment is server-side applied (another manager's label survives a
//! reinstall, an earlier create/update's fields are taken over, a repeated env var falls back to create/update),
//! deleting a CSV garbage-collects what it installed, and bad CSVs reach Failed
//! with OLM's reason while a good CSV beside them succeeds. Requirements are in csv_requirements.rs, replaces
//! chains in csv_chains.rs.

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{EnvVar, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use messages::crd::csv::{CsvPhase, CsvReason, RequirementStatusReason};
use olm_tests::csv_fixture::*;
use olm_tests::{await_none_listed, await_object, eventually};
use serde_json::json;

#[tokio::test]
async fn a_csv_installs_to_succeeded_with_a_real_deployment() -> anyhow::Result<()> {
    with_operator("csv-install", |ctx, port| async move {
        let done = install_op(&ctx).await?;
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
        let role = op_role_name(&ctx).await?;
        Api::<Role>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get(&role)
            .await?;
        Api::<RoleBinding>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get(&role)
            .await?;
        let cluster_roles = Api::<ClusterRole>::all(ctx.client.clone())
            .list(&ListParams::default().labels(&format!(
                "olm.owner=op.v1.0.0,olm.owner.namespace={}",
                ctx.namespace
            )))
            .await?;
        assert_eq!(cluster_roles.items.len(), 1);

        // The phases passed on the way (Pending, InstallReady, Installing) get an Event only when they last
        // (olm-operator/src/events.rs); the phase reached always has one.
        let reasons = event_reasons(&ctx, "op.v1.0.0").await?;
        assert!(
            reasons.contains(&"InstallSucceeded".to_string()),
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

#[tokio::test]
async fn a_deployment_changed_or_deleted_behind_our_back_is_repaired() -> anyhow::Result<()> {
    with_operator("csv-drift", |ctx, _port| async move {
        install_op(&ctx).await?;
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

/// The Deployment's managers of the main resource, as (manager, operation).
fn managers(d: &Deployment) -> Vec<(String, String)> {
    d.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.subresource.as_deref().unwrap_or_default().is_empty())
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn env_names(d: Option<&Deployment>) -> Vec<String> {
    d.and_then(|d| d.spec.as_ref())
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.env.as_ref())
        .map(|env| env.iter().map(|e| e.name.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_label_another_manager_put_on_the_deployment_survives_a_reinstall() -> anyhow::Result<()>
{
    with_operator("csv-ssa-others", |ctx, _port| async move {
        install_op(&ctx).await?;
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let installed = deployments.get("op").await?;
        assert_eq!(
            managers(&installed),
            vec![("olm-operator".to_string(), "Apply".to_string())],
            "written by server-side apply only"
        );
        let hash = |d: Option<&Deployment>| {
            d.and_then(|d| d.metadata.labels.as_ref())
                .and_then(|l| l.get("olm.deployment-spec-hash").cloned())
        };
        let ours = hash(Some(&installed)).expect("a spec hash");
        // A user labels the Deployment, and changes the spec hash: drift, which reinstalls.
        let user = PatchParams {
            field_manager: Some("a-user".into()),
            ..PatchParams::default()
        };
        let labelled = json!({"metadata": {"labels": {"team": "blue"}}});
        deployments
            .patch("op", &user, &Patch::Merge(&labelled))
            .await?;
        let drifted =
            json!({"metadata": {"labels": {"olm.deployment-spec-hash": "00000000000000ff"}}});
        deployments
            .patch("op", &user, &Patch::Merge(&drifted))
            .await?;
        let restored = await_object(
            &deployments,
            "op",
            DEADLINE,
            "spec hash restored",
            move |d| hash(d).as_deref() == Some(ours.as_str()),
        )
        .await?;
        let labels = restored.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("team").map(String::as_str),
            Some("blue"),
            "the user's label stays: {labels:?}"
        );
        await_phase(
            &ctx,
            "op.v1.0.0",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_deployment_written_by_create_and_update_loses_what_the_csv_does_not_render()
-> anyhow::Result<()> {
    with_operator("csv-ssa-legacy", |ctx, _port| async move {
        create_group(&ctx).await?;
        // As an olm-rs that wrote with create/update (user agent `olm-rs/…`) left it: an env var the CSV lacks.
        let mut op = csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1");
        first_container(&mut op)?.env = Some(vec![EnvVar {
            name: "STALE".into(),
            value: Some("1".into()),
            ..EnvVar::default()
        }]);
        let mut legacy = Deployment {
            spec: Some(first_deployment(&mut op)?.clone()),
            ..Deployment::default()
        };
        legacy.metadata.name = Some("op".into());
        legacy.metadata.labels = Some([("app".to_string(), "op".to_string())].into());
        legacy.metadata.namespace = Some(ctx.namespace.clone());
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let post = PostParams {
            field_manager: Some("olm-rs".into()),
            ..PostParams::default()
        };
        deployments.create(&post, &legacy).await?;
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
        let installed = await_object(&deployments, "op", DEADLINE, "STALE gone", |d| {
            d.is_some() && !env_names(d).contains(&"STALE".to_string())
        })
        .await?;
        assert!(env_names(Some(&installed)).contains(&"OPERATOR_CONDITION_NAME".to_string()));
        let legacy_spec = installed.metadata.managed_fields.iter().flatten().any(|m| {
            m.manager.as_deref() == Some("olm-rs")
                && m.fields_v1
                    .as_ref()
                    .is_some_and(|f| f.0.get("f:spec").is_some())
        });
        assert!(
            !legacy_spec,
            "the create's fields were taken over: {:?}",
            managers(&installed)
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_csv_naming_one_env_var_twice_is_refused_as_olms_crd_refuses_it() -> anyhow::Result<()> {
    with_operator("csv-dup-env", |ctx, _port| async move {
        create_group(&ctx).await?;
        // The CSV CRD keys a container's `env` by name, as OLM's published CRD does (and as Kubernetes keys it for
        // server-side apply): a CSV naming one variable twice is refused at create. A Deployment with duplicate
        // keys that still reaches olm-operator (a CSV stored before its CRD carried the keys) is written with
        // create/replace instead of an apply (`olm-operator/src/apply/request.rs`, table-tested).
        let mut twice = csv("op.v1.0.0", "1.0.0", None, "op", "example.com/op:1");
        let mode = |value: &str| EnvVar {
            name: "MODE".into(),
            value: Some(value.into()),
            ..EnvVar::default()
        };
        first_container(&mut twice)?.env = Some(vec![mode("a"), mode("b")]);
        let Err(refused) = create_csv(&ctx, twice).await else {
            anyhow::bail!("a CSV naming MODE twice was created");
        };
        let message = format!("{refused:#}");
        anyhow::ensure!(
            message.contains(r#"env[1]: Duplicate value: {"name":"MODE"}"#),
            "refused, but not for the duplicate: {message}"
        );
        Ok(())
    })
    .await
}

/// Create a.v1 ← a.v2 ← a.v3 in `order` (before any OperatorGroup, so all exist before the first sync),
#[tokio::test]
async fn deleting_a_csv_garbage_collects_what_it_installed() -> anyhow::Result<()> {
    with_operator("csv-delete", |ctx, _port| async move {
        install_op(&ctx).await?;
        let role = op_role_name(&ctx).await?;
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
            &role,
        )
        .await?;
        let selector = format!("olm.owner=op.v1.0.0,olm.owner.namespace={}", ctx.namespace);
        await_none_listed(
            &Api::<ClusterRole>::all(ctx.client.clone()),
            &ListParams::default().labels(&selector),
            DEADLINE,
            "cluster roles of the CSV deleted",
        )
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
        helm.spec.install.strategy = "helm".into();
        create_csv(&ctx, helm).await?;
        let mut mismatch = csv("mismatch.v1.0.0", "1.0.0", None, "mismatch", "example.com/m:1");
        first_deployment(&mut mismatch)?.selector.match_labels = Some([("app".to_string(), "other".to_string())].into());
        create_csv(&ctx, mismatch).await?;
        create_csv(&ctx, csv("semver.v1", "one", None, "semver", "example.com/s:1")).await?;
        let mut no_verbs = csv("perm.v1.0.0", "1.0.0", None, "perm", "example.com/p:1");
        let rules = no_verbs.spec.install.spec.as_mut().and_then(|s| s.permissions.as_mut()).and_then(|p| p.first_mut());
        rules.and_then(|p| p.rules.first_mut()).context("a permission rule")?.verbs = Vec::new();
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

/// The name of op.v1.0.0's Role for `op-sa` (the one an InstallPlan would write too: `messages::rbac_names`).
async fn op_role_name(ctx: &olm_tests::TestContext) -> anyhow::Result<String> {
    let csv = csvs(ctx).get("op.v1.0.0").await?;
    let rules = csv
        .spec
        .install
        .spec
        .as_ref()
        .and_then(|s| s.permissions.as_ref())
        .and_then(|p| p.iter().find(|p| p.service_account_name == "op-sa"))
        .map(|p| p.rules.clone())
        .ok_or_else(|| anyhow::anyhow!("op.v1.0.0 has no permissions for op-sa"))?;
    Ok(messages::rbac_names::role_name(
        "op.v1.0.0",
        "op-sa",
        &rules,
    ))
}
