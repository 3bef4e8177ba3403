//! A disconnected cluster's setup end to end: the CatalogSource names its image after a registry this machine
//! cannot reach (`quay.io/private-org/catalog:v1`); a `registries.conf` mirrors it to a registry that serves TLS
//! from a private CA and demands credentials, which only the global pull secret holds (the CatalogSource names
//! none). catalog-operator, run with `--registries-conf`, `--registry-ca-bundle` and `--global-pull-secret`,
//! serves the catalog and installs from it; package-server, run with the same flags, lists its package.

mod auth_registry;

use auth_registry::{AuthRegistry, Tls, outward_ip};
use kube::Api;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::csv::ClusterServiceVersion;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_object, eventually, with_namespace};
use std::time::Duration;

#[tokio::test]
async fn a_mirrored_private_catalog_installs_and_is_listed_with_the_global_pull_secret()
-> anyhow::Result<()> {
    let samples = olm_tests::oci_fixture::samples_catalog_dir();
    let ip = outward_ip()?;
    let tls = Tls::for_ip(ip)?;
    let private = AuthRegistry::start_on(ip, Some(&tls)).await?;
    let cluster = olm_tests::Cluster::shared()?;
    let _apiservice = olm_tests::package_server_fixture::exclusive().await;
    with_namespace(cluster, "privcat", |ctx| async move {
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        let (ca, conf) = auth_registry::mirror_files(
            &dir,
            &tls,
            &format!("{}/{}", private.addr, ctx.namespace),
        )?;

        // Bundle images in the open local registry; the catalog image that lists them only in the private one.
        let open = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let published =
            oci::publish::push_tree(&open, &samples, &["etcd".to_string()], &prefix).await?;
        let (layers, labels) = catalog_image(&published.fbc)?;
        let trusting = oci::options::RegistryArgs {
            registry_ca_bundle: Some(ca.clone()),
            ..Default::default()
        }
        .registry()
        .map_err(anyhow::Error::msg)?;
        trusting
            .push(
                &format!("{}/{}/catalog:v1", private.addr, ctx.namespace),
                &AuthRegistry::basic(),
                layers,
                &labels,
            )
            .await?;

        // The global pull secret: the only place the private registry's credentials are.
        let config = auth_registry::docker_config(&private.addr);
        create(
            &ctx,
            olm_tests::oci_fixture::pull_secret("global-pull", &config),
        )
        .await?;
        let global = format!("{}/global-pull", ctx.namespace);
        let (conf_s, ca_s) = (conf.display().to_string(), ca.display().to_string());
        let flags = [
            "--registries-conf",
            conf_s.as_str(),
            "--registry-ca-bundle",
            ca_s.as_str(),
            "--global-pull-secret",
            global.as_str(),
        ];
        let _cat = catalog_operator(&ctx, &flags).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        let private = Catsrc::named("private")
            .image("quay.io/private-org/catalog:v1")
            .display_name("Private");
        create(&ctx, private.build()).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(
            &catalogs,
            "private",
            DEADLINE,
            "READY through the mirror",
            |c| {
                c.and_then(|c| c.status.as_ref())
                    .and_then(|s| s.connection_state.as_ref())
                    .is_some_and(|s| s.last_observed_state.as_str() == "READY")
            },
        )
        .await?;
        subscribe_to_sample_etcd(&ctx, "private").await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(
            &csvs,
            "etcdoperator.v0.9.4",
            Duration::from_secs(180),
            "installed from the private catalog",
            |c| c.is_some(),
        )
        .await?;

        // package-server, with the same flags, lists the package of the private catalog.
        let _server = olm_tests::package_server_fixture::start_with(
            cluster,
            &ctx.client,
            &ctx.namespace,
            &flags,
        )
        .await?;
        let ns = ctx.namespace.clone();
        let ns = &ns;
        eventually(
            Duration::from_secs(60),
            "etcd listed by package-server",
            || async move {
                let names = olm_tests::package_server_fixture::names(cluster, ns, &[])?;
                Ok(names.contains(&"etcd".to_string()).then_some(()))
            },
        )
        .await?;
        std::fs::remove_dir_all(&dir).ok();
        Ok(())
    })
    .await
}
