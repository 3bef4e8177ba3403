//! Image catalogs in the PackageManifest API (issue 33): package-server lists an image catalog's packages either by
//! pulling the image itself or, with `--image-catalogs-address`, from the catalogs catalog-operator loaded (one
//! parse, shared). Split from `package_manifests.rs`; the same APIService lock (`exclusive`) serialises them
//! within a run, and cargo runs test binaries one after another.

use kube::Api;
use kube::api::PostParams;
use messages::crd::catalog_source::CatalogSource;
use olm_tests::catalog_fixture::*;
use olm_tests::package_server_fixture::*;
use olm_tests::{Cluster, eventually, with_namespace};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(90);

/// Until package-server lists exactly `etcd` from catalog `catalog` (`what`); its logs are printed when not.
async fn etcd_listed(
    cluster: &Cluster,
    ns: &str,
    catalog: &str,
    server: &PackageServer,
    what: &str,
) -> anyhow::Result<()> {
    let selector = format!("catalog={catalog}");
    let listed = eventually(DEADLINE, what, || async {
        Ok((names(cluster, ns, &["-l", &selector])? == ["etcd"]).then_some(()))
    })
    .await;
    if listed.is_err() {
        eprintln!("package-server logs:\n{}", server.process.logs());
    }
    listed
}

/// An image catalog (`spec.image`, no address: catalog-operator serves it in-process, with no registry pod to
/// dial): package-server pulls the catalog image itself from the local registry and lists its package.
#[tokio::test]
async fn an_image_catalog_is_listed_from_its_image() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let _apiservice = exclusive().await;
    with_namespace(cluster, "pkgimg", |ctx| async move {
        let root = olm_tests::oci_fixture::samples_catalog_dir();
        let port = std::env::var("OLM_RS_REGISTRY_PORT").unwrap_or_else(|_| "25000".into());
        let prefix = format!("127.0.0.1:{port}/{}", ctx.namespace);
        let registry = oci::Registry::default();
        let published =
            oci::publish::push_tree(&registry, &root, &["etcd".to_string()], &prefix).await?;
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        std::fs::create_dir_all(&dir)?;
        let fbc = dir.join("catalog.json");
        std::fs::write(&fbc, &published.fbc)?;
        let image = format!("{prefix}/catalog:v1");
        oci::publish::push_catalog(&registry, &fbc, &image).await?;
        std::fs::remove_dir_all(&dir)?;
        let catalog = Catsrc::named("images").image(&image).build();
        Api::<CatalogSource>::namespaced(ctx.client.clone(), &ctx.namespace)
            .create(&PostParams::default(), &catalog)
            .await?;
        let server = start(cluster, &ctx.client, &ctx.namespace).await?;
        etcd_listed(
            cluster,
            &ctx.namespace,
            "images",
            &server,
            "etcd listed from the catalog image",
        )
        .await
    })
    .await
}

/// An image catalog read through catalog-operator (issue 33): catalog-operator, run with `--catalog-serve-addr`,
/// pulls the image through a `registries.conf` mirror only it has (the image is named after a registry that does
/// not exist) and serves the catalog it loaded; package-server, run with `--image-catalogs-address` and no
/// mirror, could not pull the image itself, and lists its package from catalog-operator.
#[tokio::test]
async fn an_image_catalog_is_listed_through_catalog_operator() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let _apiservice = exclusive().await;
    with_namespace(cluster, "pkgshared", |ctx| async move {
        let root = olm_tests::oci_fixture::samples_catalog_dir();
        let local = olm_tests::oci_fixture::registry_addr();
        let prefix = format!("{local}/{}", ctx.namespace);
        let registry = oci::Registry::default();
        let published =
            oci::publish::push_tree(&registry, &root, &["etcd".to_string()], &prefix).await?;
        let dir = tempfile::tempdir()?;
        let fbc = dir.path().join("catalog.json");
        std::fs::write(&fbc, &published.fbc)?;
        oci::publish::push_catalog(&registry, &fbc, &format!("{prefix}/catalog:v1")).await?;
        let conf = dir.path().join("registries.conf");
        std::fs::write(
            &conf,
            format!(
                "[[registry]]\nprefix = \"mirror-only.invalid/olm\"\nlocation = \"mirror-only.invalid/olm\"\n\
                 [[registry.mirror]]\nlocation = \"{prefix}\"\ninsecure = true\n"
            ),
        )?;
        let port = free_port()?;
        let serve = format!("127.0.0.1:{port}");
        let conf_s = conf.display().to_string();
        let _op = catalog_operator(
            &ctx,
            &["--registries-conf", &conf_s, "--catalog-serve-addr", &serve],
        )
        .await?;
        let catalog = Catsrc::named("shared").image("mirror-only.invalid/olm/catalog:v1").build();
        Api::<CatalogSource>::namespaced(ctx.client.clone(), &ctx.namespace)
            .create(&PostParams::default(), &catalog)
            .await?;
        let server =
            start_with(cluster, &ctx.client, &ctx.namespace, &["--image-catalogs-address", &serve])
                .await?;
        etcd_listed(cluster, &ctx.namespace, "shared", &server, "etcd listed through catalog-operator").await
    })
    .await
}
