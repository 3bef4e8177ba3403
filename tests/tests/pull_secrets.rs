//! Pull secrets (issue 13): a catalog image in a registry that demands credentials (a second Debian
//! `docker-registry`, with htpasswd auth, started by this test on its own port and folder) is served once the
//! CatalogSource names a `kubernetes.io/dockerconfigjson` Secret holding them in `spec.secrets`, and a
//! Subscription installs from it; the same image without the Secret ends in `RegistryServerError` saying the
//! registry refused it.

mod auth_registry;

use auth_registry::AuthRegistry;
use kube::Api;
use messages::crd::catalog_source::CatalogSource;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_object, with_namespace};

#[tokio::test]
async fn a_catalog_image_behind_registry_auth_is_pulled_with_the_catalogs_pull_secret()
-> anyhow::Result<()> {
    let root = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../deploy/samples/catalog");
    let auth_registry = AuthRegistry::start().await?;
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "pullsecret", |ctx| async move {
        let registry = oci::Registry::default();
        // Bundle images in the open registry; the catalog image that lists them behind auth.
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let published =
            oci::publish::push_tree(&registry, &root, &["etcd".to_string()], &prefix).await?;
        let tag = format!("{}/{}/catalog:latest", auth_registry.addr, ctx.namespace);
        let (layers, labels) = catalog_image(&published.fbc)?;
        let refused = registry
            .push(&tag, &oci::Auth::Anonymous, layers.clone(), &labels)
            .await;
        assert!(refused.is_err(), "the registry must demand credentials");
        registry
            .push(&tag, &AuthRegistry::basic(), layers, &labels)
            .await?;

        let config = auth_registry::docker_config(&auth_registry.addr);
        create(&ctx, pull_secret("pull", &config)).await?;

        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        let private = Catsrc::named("private").image(&tag).secrets(&["pull"]);
        create(&ctx, private.build()).await?;
        create(&ctx, Catsrc::named("nosecret").image(&tag).build()).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(
            &catalogs,
            "private",
            DEADLINE,
            "READY with the pull secret",
            |c| {
                c.and_then(|c| c.status.as_ref())
                    .and_then(|s| s.connection_state.as_ref())
                    .is_some_and(|s| s.last_observed_state.as_str() == "READY")
            },
        )
        .await?;
        let cs = await_object(
            &catalogs,
            "nosecret",
            DEADLINE,
            "refused without the secret",
            |c| {
                c.and_then(|c| c.status.as_ref())
                    .is_some_and(|s| !s.message.is_empty())
            },
        )
        .await?;
        let status = cs.status.unwrap_or_default();
        assert_eq!(status.reason.as_str(), "RegistryServerError");
        let message = status.message.to_lowercase();
        assert!(
            message.contains("unauthorized")
                || message.contains("401")
                || message.contains("denied"),
            "{}",
            status.message
        );

        install_sample_etcd(&ctx, "private", "etcdoperator.v0.9.4").await?;
        Ok(())
    })
    .await
}
