//! A disconnected cluster's setup end to end: the CatalogSource names its image after a registry this machine
//! cannot reach (`quay.io/private-org/catalog:v1`); a `registries.conf` mirrors it to a registry that serves TLS
//! from a private CA and demands credentials, which only the global pull secret holds (the CatalogSource names
//! none). catalog-operator, run with `--registries-conf`, `--registry-ca-bundle` and `--global-pull-secret`,
//! serves the catalog and installs from it; package-server, run with the same flags, lists its package.

mod auth_registry;
mod catalog_fixture;
mod oci_support;
mod package_server_support;

use auth_registry::{AuthRegistry, PASSWORD, Tls, USER, outward_ip};
use base64::Engine;
use catalog_fixture::*;
use kube::Api;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::csv::ClusterServiceVersion;
use oci_support::*;
use olm_tests::{await_object, eventually, with_namespace};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test]
async fn a_mirrored_private_catalog_installs_and_is_listed_with_the_global_pull_secret()
-> anyhow::Result<()> {
    let samples = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../deploy/samples/catalog");
    let ip = outward_ip()?;
    let tls = Tls::for_ip(ip)?;
    let private = AuthRegistry::start_on(ip, Some(&tls)).await?;
    let cluster = olm_tests::Cluster::shared()?;
    let _apiservice = package_server_support::exclusive().await;
    with_namespace(cluster, "privcat", |ctx| async move {
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        std::fs::create_dir_all(&dir)?;
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, &tls.ca_pem)?;
        let conf = dir.join("registries.conf");
        std::fs::write(
            &conf,
            format!(
                "[[registry]]\nprefix = \"quay.io/private-org\"\nlocation = \"quay.io/private-org\"\n\
                 [[registry.mirror]]\nlocation = \"{}/{}\"\n",
                private.addr, ctx.namespace
            ),
        )?;

        // Bundle images in the open local registry; the catalog image that lists them only in the private one.
        let open = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let published = oci::publish::push_tree(&open, &samples, &["etcd".to_string()], &prefix).await?;
        let layer = oci::build::tar_gz(&[("configs/catalog.json".to_string(), published.fbc.clone())])?;
        let labels = BTreeMap::from([(
            "operators.operatorframework.io.index.configs.v1".to_string(),
            "/configs".to_string(),
        )]);
        let trusting = oci::options::RegistryArgs { registry_ca_bundle: Some(ca.clone()), ..Default::default() }
            .registry()
            .map_err(anyhow::Error::msg)?;
        trusting
            .push(
                &format!("{}/{}/catalog:v1", private.addr, ctx.namespace),
                &AuthRegistry::basic(),
                vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
                &labels,
            )
            .await?;

        // The global pull secret: the only place the private registry's credentials are.
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        let config = json!({"auths": {private.addr.clone(): {"auth": token}}}).to_string();
        create::<k8s_openapi::api::core::v1::Secret>(
            &ctx,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "global-pull"},
                "type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": config}}),
        )
        .await?;
        let global = format!("{}/global-pull", ctx.namespace);
        let (conf_s, ca_s) = (conf.display().to_string(), ca.display().to_string());
        let flags = [
            "--registries-conf", conf_s.as_str(),
            "--registry-ca-bundle", ca_s.as_str(),
            "--global-pull-secret", global.as_str(),
        ];
        let _cat = catalog_operator(&ctx, &flags).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        create::<CatalogSource>(
            &ctx,
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": "private"},
                "spec": {"sourceType": "grpc", "image": "quay.io/private-org/catalog:v1", "displayName": "Private"}}),
        )
        .await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(&catalogs, "private", DEADLINE, "READY through the mirror", |c| {
            c.and_then(|c| c.status.as_ref())
                .and_then(|s| s.connection_state.as_ref())
                .is_some_and(|s| s.last_observed_state.as_str() == "READY")
        })
        .await?;
        subscription(&ctx, "etcd", "etcd", "private", json!({"channel": "singlenamespace-alpha"})).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(&csvs, "etcdoperator.v0.9.4", Duration::from_secs(180), "installed from the private catalog", |c| c.is_some())
            .await?;

        // package-server, with the same flags, lists the package of the private catalog.
        let _server = package_server_support::start_with(cluster, &ctx.client, &ctx.namespace, &flags).await?;
        let ns = ctx.namespace.clone();
        let ns = &ns;
        eventually(Duration::from_secs(60), "etcd listed by package-server", || async move {
            let names = package_server_support::names(cluster, ns, &[])?;
            Ok(names.contains(&"etcd".to_string()).then_some(()))
        })
        .await?;
        std::fs::remove_dir_all(&dir).ok();
        Ok(())
    })
    .await
}
