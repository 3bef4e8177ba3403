//! CatalogSource health as a user sees it (spec §8 scenarios 33, 35): a Subscription to a missing catalog,
//! an unreachable gRPC catalog that is later fixed, an invalid spec, and an unreachable catalog image (pulled in-process: no
//! registry Pod or Service).

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::catalog_source::CatalogSource;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use serde_json::json;

#[tokio::test]
async fn an_unreachable_catalog_is_reported_then_serves_once_its_registry_starts()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "cathealth", |ctx| async move {
        let _op = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        operator_group(&ctx).await?;
        subscription(&ctx, sub_to(&ctx, "delta", "delta", "remote")).await?;
        let target = format!("targeted catalogsource {}/remote missing", ctx.namespace);
        await_sub(&ctx, "delta", "no catalog at all", |s| {
            sub_condition(s, "CatalogSourcesUnhealthy")
                .is_some_and(|c| c.1 == "NoCatalogSourcesFound")
        })
        .await?;

        let port = free_port()?;
        address_catalog(&ctx, "remote", &format!("127.0.0.1:{port}")).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let cs = await_object(&catalogs, "remote", DEADLINE, "TRANSIENT_FAILURE", |c| {
            c.and_then(|c| c.status.as_ref())
                .and_then(|s| s.connection_state.as_ref())
                .is_some_and(|c| c.last_observed_state.as_str() == "TRANSIENT_FAILURE")
        })
        .await?;
        let status = cs.status.expect("status");
        assert_eq!(status.reason.as_str(), "RegistryServerError");
        assert_eq!(
            status.connection_state.expect("connection").address,
            format!("127.0.0.1:{port}")
        );
        let unhealthy = format!("targeted catalogsource {}/remote unhealthy", ctx.namespace);
        let sub = await_sub(&ctx, "delta", "the targeted catalog is unhealthy", |s| {
            sub_condition(s, "CatalogSourcesUnhealthy").is_some_and(|c| c.2 == unhealthy)
        })
        .await?;
        assert_ne!(
            sub_condition(
                sub.status.as_ref().expect("status"),
                "CatalogSourcesUnhealthy"
            )
            .map(|c| c.2),
            Some(target)
        );

        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        let file = Catalog::with(vec![Op::new("delta", "1.0.0")]).write_file(&dir, "remote")?;
        let _registry = RegistryProcess::start(&[&file], port)?;
        await_catalog_ready(&ctx, "remote").await?;
        let sub = await_sub(&ctx, "delta", "installed from the fixed catalog", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "delta.v1.0.0"
        })
        .await?;
        let health = sub_condition(
            sub.status.as_ref().expect("status"),
            "CatalogSourcesUnhealthy",
        )
        .expect("condition");
        assert_eq!(
            (health.0.as_str(), health.1.as_str()),
            ("False", "AllCatalogSourcesHealthy")
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_invalid_spec_is_spec_invalid_and_an_unreachable_catalog_image_says_so_without_any_pod()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "catspec", |ctx| async move {
        let _op = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        create_manifest::<CatalogSource>(&ctx, json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource", "metadata": {"name": "bad"}, "spec": {"sourceType": "configmap"}})).await?;
        let bad = await_object(&catalogs, "bad", DEADLINE, "SpecInvalidError", |c| c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.reason.as_str() == "SpecInvalidError")).await?;
        assert_eq!(bad.status.expect("status").message, "configmap name unset: must be set for sourcetype: configmap");

        // Catalog images are pulled in-process (issue 13); this machine reaches no public registry.
        create(&ctx, Catsrc::named("img.cat").image("quay.io/operatorhubio/catalog:latest").build()).await?;
        let cs = await_object(&catalogs, "img.cat", DEADLINE, "the image's registry unreachable", |c| {
            c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.message.contains("unreachable"))
        })
        .await?;
        let status = cs.status.expect("status");
        assert_eq!(status.reason.as_str(), "RegistryServerError");
        assert!(status.message.contains("quay.io/operatorhubio/catalog:latest"), "{}", status.message);
        assert_eq!(
            status.connection_state.map(|c| c.last_observed_state.as_str().to_string()).as_deref(),
            Some("TRANSIENT_FAILURE")
        );
        let services: Api<Service> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(services.get_opt("img-cat").await?.is_none(), "no registry Service");
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let listed = pods.list(&kube::api::ListParams::default().labels("olm.catalogSource=img.cat")).await?;
        assert!(listed.items.is_empty(), "no registry pod");

        catalogs.patch("img.cat", &PatchParams::default(), &Patch::Merge(json!({"spec": {"image": null, "address": "127.0.0.1:1"}}))).await?;
        await_object(&catalogs, "img.cat", DEADLINE, "switched to the address", |c| {
            c.and_then(|c| c.status.as_ref()).and_then(|s| s.connection_state.as_ref()).is_some_and(|s| s.address == "127.0.0.1:1")
        })
        .await?;
        Ok(())
    })
    .await
}
