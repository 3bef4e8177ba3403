//! What holds a CSV back or lets it go, on the real control plane (spec §2.3-§2.6): a missing owned CRD keeps
//! it Pending and a second owner conflicts; a CSV failed for good tries again when its group changes; the
//! Subscription's config reaches the Deployment; an OperatorCondition not upgradeable holds the upgrade; a
//! `minKubeVersion` above the API server's version holds the CSV Pending with OLM's words, one below lets it install.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::Role;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, CsvReason, RequirementStatusReason};
use messages::crd::operator_group::OperatorGroup;
use olm_tests::await_object;
use olm_tests::csv_fixture::*;
use serde_json::json;

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

/// `v1.37.2` (or `v1.37.2-alpha.0+abc`) → (1, 37, 2), as OLM reads the server's gitVersion.
fn server_version(git_version: &str) -> anyhow::Result<(u64, u64, u64)> {
    let core = git_version
        .trim_start_matches('v')
        .split(['-', '+'])
        .next()
        .unwrap_or_default();
    let parts: Vec<u64> = core.split('.').map(str::parse).collect::<Result<_, _>>()?;
    match parts.as_slice() {
        [major, minor, patch] => Ok((*major, *minor, *patch)),
        _ => anyhow::bail!("server gitVersion {git_version} is not major.minor.patch"),
    }
}

/// The CSV's own requirement entry (OLM `minKubeVersionStatus`): (status, message).
fn min_kube_entry(csv: &ClusterServiceVersion) -> Option<(RequirementStatusReason, String)> {
    csv.status.as_ref().and_then(|s| {
        s.requirement_status
            .iter()
            .find(|r| {
                r.kind == "ClusterServiceVersion"
                    && r.group == "operators.coreos.com"
                    && r.version == "v1alpha1"
            })
            .map(|r| (r.status.clone(), r.message.clone()))
    })
}

#[tokio::test]
async fn a_min_kube_version_above_the_server_holds_the_csv_pending_and_one_below_installs()
-> anyhow::Result<()> {
    with_operator("csv-minkube", |ctx, _port| async move {
        let info = ctx.client.apiserver_version().await?;
        let (major, minor, patch) = server_version(&info.git_version)?;
        let server = format!("{major}.{minor}.{patch}");
        // One minor above the server (today's operators ask for 1.25-1.28; this one asks for the next release),
        // and the 1.25.0 that self-node-remediation and rsct-operator declare.
        let above = format!("{major}.{}.0", minor + 1);
        let below = "1.25.0";
        create_group(&ctx).await?;
        let mut future = csv("future.v1.0.0", "1.0.0", None, "future", "example.com/future:1");
        future.spec.min_kube_version = Some(above.clone());
        create_csv(&ctx, future).await?;
        let mut current = csv("current.v1.0.0", "1.0.0", None, "current", "example.com/current:1");
        current.spec.min_kube_version = Some(below.to_string());
        create_csv(&ctx, current).await?;

        let pending = await_phase(&ctx, "future.v1.0.0", CsvPhase::Pending, CsvReason::RequirementsNotMet).await?;
        assert_eq!(
            pending.status.as_ref().map(|s| s.message.as_str()),
            Some("one or more requirements couldn't be found")
        );
        assert_eq!(
            min_kube_entry(&pending),
            Some((
                RequirementStatusReason::PresentNotSatisfied,
                format!("CSV version requirement not met: minKubeVersion ({above}) > server version ({server})")
            ))
        );
        let installed = await_phase(&ctx, "current.v1.0.0", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        assert_eq!(
            min_kube_entry(&installed),
            Some((
                RequirementStatusReason::Present,
                format!("CSV minKubeVersion ({below}) less than server version ({server})")
            ))
        );
        // Still held: nothing of the future CSV was installed.
        let future_deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get_opt("future")
            .await?;
        assert!(future_deployment.is_none(), "a CSV whose minKubeVersion is not met installs nothing");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_csv_failed_for_good_tries_again_when_its_group_changes() -> anyhow::Result<()> {
    with_operator("csv-noretry", |ctx, _port| async move {
        create_group(&ctx).await?;
        // The API server rejects the deployment (a container name is a DNS label): retrying cannot help.
        let mut bad = csv("bad.v1.0.0", "1.0.0", None, "bad", "example.com/bad:1");
        first_container(&mut bad)?.name = "Not_A_Label".into();
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
    use k8s_openapi::api::core::v1::EnvVar;
    use messages::crd::subscription::{Subscription, SubscriptionConfig};
    use messages::testing::Sub;
    with_operator("csv-subconfig", |ctx, _port| async move {
        install_op(&ctx).await?;
        // A Subscription that installed op.v1.0.0 (as catalog-operator would record it), with a config.
        let subs: Api<Subscription> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let config = SubscriptionConfig {
            env: Some(vec![EnvVar { name: "LOG_LEVEL".into(), value: Some("debug".into()), ..EnvVar::default() }]),
            node_selector: Some([("disk".to_string(), "ssd".to_string())].into()),
            annotations: Some([("team".to_string(), "storage".to_string())].into()),
            ..SubscriptionConfig::default()
        };
        let sub = Sub::named("op").package("op").source("nowhere", &ctx.namespace).channel("stable").config(config).build();
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
        // What the config no longer says goes from the Deployment (an applied field we stop applying is removed).
        subs.patch("op", &PatchParams::default(), &Patch::Merge(json!({"spec": {"config": {"nodeSelector": null, "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "EXTRA", "value": "1"}]}}}))).await?;
        await_object(&deployments, "op", DEADLINE, "EXTRA set", move |d: Option<&Deployment>| env_of(d, "EXTRA").as_deref() == Some("1")).await?;
        subs.patch("op", &PatchParams::default(), &Patch::Merge(json!({"spec": {"config": {"env": [{"name": "LOG_LEVEL", "value": "info"}]}}}))).await?;
        let trimmed = await_object(&deployments, "op", DEADLINE, "EXTRA gone", move |d: Option<&Deployment>| d.is_some() && env_of(d, "EXTRA").is_none()).await?;
        let selector = trimmed.spec.as_ref().and_then(|s| s.template.spec.as_ref()).and_then(|p| p.node_selector.clone()).unwrap_or_default();
        assert!(!selector.contains_key("disk"), "the nodeSelector the config dropped is gone: {selector:?}");
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
