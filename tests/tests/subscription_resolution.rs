//! Resolution outcomes on Subscriptions (spec §8 scenarios 23, 24, 26): a package no catalog has fails with
//! the resolver's readable explanation; a required API is pulled in from another catalog, preferring the
//! higher priority, through a generated Subscription.

use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, with_namespace};
use serde_json::json;

#[tokio::test]
async fn a_missing_package_fails_resolution_with_an_explanation_and_recovers_when_published()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subfail", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(vec![Op::new("lambda", "1.0.0")]),
            0,
        )
        .await?;
        subscription(&ctx, sub_to(&ctx, "nope", "nope", "cat")).await?;
        // Before the catalog has loaded, the condition can say the catalog is not visible yet; wait for the
        // resolver's verdict on the package itself.
        let sub = await_sub(&ctx, "nope", "ResolutionFailed on the package", |s| {
            sub_condition(s, "ResolutionFailed")
                .is_some_and(|(_, _, message)| message.contains("in package nope"))
        })
        .await?;
        let (status, reason, message) =
            sub_condition(sub.status.as_ref().expect("status"), "ResolutionFailed")
                .expect("condition");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "ConstraintsNotSatisfiable")
        );
        assert!(
            message.contains("No operators found in package nope"),
            "{message}"
        );

        // Publishing the package (a ConfigMap update) clears the failure and installs it.
        let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let data = Catalog::with(vec![Op::new("lambda", "1.0.0"), Op::new("nope", "0.1.0")])
            .configmap_data();
        cms.patch(
            "cat",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"data": data})),
        )
        .await?;
        let sub = await_sub(&ctx, "nope", "installed once published", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "nope.v0.1.0"
        })
        .await?;
        assert!(
            sub_condition(sub.status.as_ref().expect("status"), "ResolutionFailed").is_none(),
            "the failure is cleared"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_required_api_is_pulled_in_from_the_higher_priority_of_two_other_catalogs()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subdeps", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let gizmo = Crd::new("gizmos", &format!("{suffix}.deps.olm-rs.io"), "Gizmo");
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "main",
            &Catalog::with(vec![Op::new("eta", "1.0.0").requires(&gizmo)]),
            10,
        )
        .await?;
        configmap_catalog(
            &ctx,
            "deps-low",
            &Catalog::with(vec![Op::new("kappa", "1.0.0").owns(&gizmo)]),
            -5,
        )
        .await?;
        configmap_catalog(
            &ctx,
            "deps",
            &Catalog::with(vec![Op::new("theta", "1.0.0").owns(&gizmo)]),
            0,
        )
        .await?;
        subscription(&ctx, sub_to(&ctx, "eta", "eta", "main")).await?;

        let sub = await_sub(&ctx, "eta", "eta installed", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let plan = plans(&ctx)
            .get(
                &sub.status
                    .and_then(|s| s.install_plan)
                    .map(|p| p.name)
                    .expect("plan ref"),
            )
            .await?;
        let mut names = plan.spec.cluster_service_version_names.clone();
        names.sort();
        assert_eq!(
            names,
            ["eta.v1.0.0", "theta.v1.0.0"],
            "the provider comes from the higher-priority catalog"
        );
        let steps = plan.status.expect("status").plan;
        let generated = format!("theta-stable-deps-{}", ctx.namespace);
        assert!(
            steps
                .iter()
                .any(|s| s.resource.kind == "Subscription" && s.resource.name == generated),
            "{steps:?}"
        );

        let dep = await_sub(
            &ctx,
            &generated,
            "the generated Subscription adopts its plan",
            |s| s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "theta.v1.0.0",
        )
        .await?;
        assert_eq!(
            dep.metadata
                .annotations
                .unwrap_or_default()
                .get("olm.generated-by"),
            Some(&plan.metadata.name.clone().unwrap_or_default())
        );
        assert_eq!(dep.spec.catalog_source, "deps");
        Ok(())
    })
    .await
}
