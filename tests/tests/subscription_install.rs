//! Subscriptions as a user sees them (spec §8 scenarios 20, 22, 30): a Subscription to a ConfigMap catalog
//! gets an Automatic InstallPlan with OLM's steps, the plan completes, the Subscription reaches AtLatestKnown;
//! upgrades walk a `replaces` chain one InstallPlan at a time; a `skipRange` jumps straight to the head.

use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlanPhase;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use std::time::Instant;

#[tokio::test]
async fn a_subscription_installs_the_channel_head_through_an_automatic_plan() -> anyhow::Result<()>
{
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subinstall", |ctx| async move {
        let op = catalog_operator(&ctx, &[]).await?;
        let crd = Crd::new("widgets", &format!("{}.install.olm-rs.io", &ctx.namespace[ctx.namespace.len() - 6..]), "Widget");
        let catalog = Catalog::with(vec![Op::new("alpha", "0.1.0").owns(&crd)]);
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &catalog, 0).await?;
        subscription(&ctx, sub_to(&ctx, "alpha", "alpha", "cat")).await?;

        let sub = await_sub(&ctx, "alpha", "AtLatestKnown alpha.v0.1.0", |s| s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "alpha.v0.1.0").await?;
        let status = sub.status.expect("status");
        assert_eq!(status.current_csv, "alpha.v0.1.0");
        let plan_name = status.install_plan.as_ref().map(|p| p.name.clone()).expect("installplan reference");
        let plan = await_object(&plans(&ctx), &plan_name, DEADLINE, "Complete", |ip| ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)).await?;
        assert_eq!(plan.spec.approval.as_str(), "Automatic");
        assert!(plan.spec.approved);
        assert_eq!(plan.spec.cluster_service_version_names, vec!["alpha.v0.1.0".to_string()]);
        let steps = plan.status.expect("plan status").plan;
        let kinds: Vec<&str> = steps.iter().map(|s| s.resource.kind.as_str()).collect();
        assert_eq!(kinds, ["ClusterServiceVersion", "CustomResourceDefinition", "ServiceAccount", "Role", "RoleBinding"], "OLM's order: CSV, CRDs, the rest");
        assert!(steps.iter().all(|s| matches!(s.status.as_str(), "Created" | "Present")), "{steps:?}");

        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let csv = csvs.get("alpha.v0.1.0").await?;
        assert_eq!(csv.spec.replaces, None, "a fresh install replaces nothing");
        assert!(csv.metadata.annotations.unwrap_or_default().contains_key("operatorframework.io/properties"));
        let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let role_step = steps.iter().find(|s| s.resource.kind == "Role").expect("role step");
        let role = roles.get(&role_step.resource.name).await?;
        let owner = role.metadata.owner_references.unwrap_or_default();
        assert_eq!(owner.first().map(|o| (o.kind.as_str(), o.name.as_str(), o.uid.as_str())), Some(("ClusterServiceVersion", "alpha.v0.1.0", csv.metadata.uid.as_deref().unwrap_or_default())));

        let (code, metrics) = op.get("/metrics").await?;
        assert_eq!(code, 200);
        let metrics = String::from_utf8_lossy(&metrics);
        for want in ["subscription_count 1", "catalog_source_count 1", "install_plan_count 1", "catalogsource_ready{name=\"cat\""] {
            assert!(metrics.contains(want), "{want} missing from /metrics:\n{metrics}");
        }
        assert!(metrics.contains("subscription_sync_total{approval=\"Automatic\",channel=\"stable\",installed=\"alpha.v0.1.0\",name=\"alpha\",package=\"alpha\"}"), "{metrics}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_upgrade_walks_a_three_step_replaces_chain_one_plan_at_a_time() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subchain", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        let catalog = Catalog::with(vec![
            Op::new("beta", "1.0.0"),
            Op::new("beta", "1.1.0").replaces("beta.v1.0.0"),
            Op::new("beta", "1.2.0").replaces("beta.v1.1.0"),
            Op::new("beta", "1.3.0").replaces("beta.v1.2.0"),
        ]);
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &catalog, 0).await?;
        let started = Instant::now();
        subscription(
            &ctx,
            sub_to(&ctx, "beta", "beta", "cat").starting_csv("beta.v1.0.0"),
        )
        .await?;
        await_sub(&ctx, "beta", "installed the head beta.v1.3.0", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "beta.v1.3.0"
        })
        .await?;
        eprintln!("install + 3-step upgrade took {:?}", started.elapsed());

        let mut list = plans(&ctx).list(&Default::default()).await?.items;
        list.sort_by_key(|p| p.spec.generation);
        let walked: Vec<(Option<i64>, Vec<String>)> = list
            .iter()
            .map(|p| {
                (
                    p.spec.generation,
                    p.spec.cluster_service_version_names.clone(),
                )
            })
            .collect();
        assert_eq!(
            walked,
            vec![
                (Some(1), vec!["beta.v1.0.0".to_string()]),
                (Some(2), vec!["beta.v1.1.0".to_string()]),
                (Some(3), vec!["beta.v1.2.0".to_string()]),
                (Some(4), vec!["beta.v1.3.0".to_string()]),
            ],
            "one plan per step along the channel"
        );
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert_eq!(
            csvs.get("beta.v1.3.0").await?.spec.replaces.as_deref(),
            Some("beta.v1.2.0")
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_skip_range_jumps_from_the_installed_version_to_the_head() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subskip", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        let catalog = Catalog::with(vec![
            Op::new("gamma", "0.1.0"),
            Op::new("gamma", "0.2.0").replaces("gamma.v0.1.0"),
            Op::new("gamma", "0.3.0")
                .replaces("gamma.v0.2.0")
                .skip_range("<0.3.0"),
        ]);
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &catalog, 0).await?;
        subscription(
            &ctx,
            sub_to(&ctx, "gamma", "gamma", "cat").starting_csv("gamma.v0.1.0"),
        )
        .await?;
        await_sub(&ctx, "gamma", "installed gamma.v0.3.0", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "gamma.v0.3.0"
        })
        .await?;
        let names: Vec<Vec<String>> = plans(&ctx)
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .map(|p| p.spec.cluster_service_version_names)
            .collect();
        assert!(
            !names.iter().flatten().any(|n| n == "gamma.v0.2.0"),
            "the skipRange skips 0.2.0: {names:?}"
        );
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert_eq!(
            csvs.get("gamma.v0.3.0").await?.spec.replaces.as_deref(),
            Some("gamma.v0.1.0"),
            "spec.replaces is rewritten to the CSV actually replaced"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn old_install_plans_are_garbage_collected_down_to_five() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subgc", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        let names: Vec<String> = (0..7).map(|i| format!("gc{i}")).collect();
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(names.iter().map(|n| Op::new(n, "1.0.0")).collect()),
            0,
        )
        .await?;
        for n in &names {
            subscription(&ctx, sub_to(&ctx, n, n, "cat")).await?;
            await_sub(&ctx, n, "installed", |s| {
                s.state == SubscriptionState::AtLatestKnown
            })
            .await?;
        }
        let api = plans(&ctx);
        let api = &api;
        let kept = olm_tests::eventually(DEADLINE, "at most 5 plans", || async move {
            let items = api.list(&Default::default()).await?.items;
            Ok((items.len() <= 5).then_some(items))
        })
        .await?;
        let mut generations: Vec<i64> = kept.iter().filter_map(|p| p.spec.generation).collect();
        generations.sort();
        assert_eq!(
            generations,
            [3, 4, 5, 6, 7],
            "the lowest generations go first"
        );
        Ok(())
    })
    .await
}
