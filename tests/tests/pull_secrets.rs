//! Pull secrets (issue 13): a catalog image in a registry that demands credentials (a second Debian
//! `docker-registry`, with htpasswd auth, started by this test on its own port and folder) is served once the
//! CatalogSource names a `kubernetes.io/dockerconfigjson` Secret holding them in `spec.secrets`, and a
//! Subscription installs from it; the same image without the Secret ends in `RegistryServerError` saying the
//! registry refused it.

mod catalog_fixture;
mod oci_support;

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

const USER: &str = "olmrs";
const PASSWORD: &str = "s3cret";
/// `htpasswd -nbB olmrs s3cret` (bcrypt, the only scheme docker-registry reads).
const HTPASSWD: &str = "olmrs:$2y$05$8K4TYX59iybAL1wbLwjnAOAKX28WIwDmZsspABsbds88fZa6fO2nC\n";

/// A docker-registry with htpasswd auth on a free loopback port, stopped when dropped.
struct AuthRegistry {
    child: std::process::Child,
    addr: String,
    dir: std::path::PathBuf,
}

impl AuthRegistry {
    async fn start() -> anyhow::Result<Self> {
        let port = free_port()?;
        let dir = std::env::temp_dir().join(format!(
            "olm-rs-auth-registry-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)?;
        let addr = format!("127.0.0.1:{port}");
        std::fs::write(dir.join("htpasswd"), HTPASSWD)?;
        let config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {root}/data\nhttp:\n  addr: {addr}\nauth:\n  htpasswd:\n    realm: olm-rs\n    path: {root}/htpasswd\n",
            root = dir.display()
        );
        std::fs::write(dir.join("config.yml"), config)?;
        let log = std::fs::File::create(dir.join("registry.log"))?;
        let child = std::process::Command::new("docker-registry")
            .arg("serve")
            .arg(dir.join("config.yml"))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| {
                anyhow::anyhow!(
                    "docker-registry (Debian package docker-registry) did not start: {e}"
                )
            })?;
        let me = Self { child, addr, dir };
        let addr = me.addr.clone();
        let addr = &addr;
        eventually(
            Duration::from_secs(20),
            "the auth registry listening",
            || async move { Ok(tokio::net::TcpStream::connect(addr).await.ok().map(|_| ())) },
        )
        .await?;
        Ok(me)
    }
}

impl Drop for AuthRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
        let layer =
            oci::build::tar_gz(&[("configs/catalog.json".to_string(), published.fbc.clone())])?;
        let labels = BTreeMap::from([(
            "operators.operatorframework.io.index.configs.v1".to_string(),
            "/configs".to_string(),
        )]);
        let basic = oci::Auth::Basic {
            username: USER.into(),
            password: PASSWORD.into(),
        };
        let refused = registry
            .push(
                &tag,
                &oci::Auth::Anonymous,
                vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer.clone())],
                &labels,
            )
            .await;
        assert!(refused.is_err(), "the registry must demand credentials");
        registry
            .push(
                &tag,
                &basic,
                vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
                &labels,
            )
            .await?;

        let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        let config = json!({"auths": {auth_registry.addr.clone(): {"auth": token}}}).to_string();
        create::<k8s_openapi::api::core::v1::Secret>(
            &ctx,
            json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "pull"}, "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": config}}),
        )
        .await?;

        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        create::<CatalogSource>(
            &ctx,
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "private"},
            "spec": {"sourceType": "grpc", "image": tag, "secrets": ["pull"]}}),
        )
        .await?;
        create::<CatalogSource>(
            &ctx,
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "nosecret"},
            "spec": {"sourceType": "grpc", "image": tag}}),
        )
        .await?;
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

        subscription(
            &ctx,
            "etcd",
            "etcd",
            "private",
            json!({"channel": "singlenamespace-alpha"}),
        )
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(
            &csvs,
            "etcdoperator.v0.9.4",
            Duration::from_secs(180),
            "Succeeded",
            |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded"),
        )
        .await?;
        Ok(())
    })
    .await
}
