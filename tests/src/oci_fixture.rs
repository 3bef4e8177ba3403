//! Support for the OCI cluster tests: the local registry (started by `hack/control-plane.sh up`, see
//! hack/lib/registry.sh), its access log to count the requests a repository received, the shared community
//! bundles, and an FBC document builder for hand-made catalogs.

use serde_json::{Value, json};
use std::path::PathBuf;

/// host:port of the local registry.
pub fn registry_addr() -> String {
    let port = std::env::var("OLM_RS_REGISTRY_PORT").unwrap_or_else(|_| "25000".into());
    format!("127.0.0.1:{port}")
}

fn registry_log() -> PathBuf {
    let cache = std::env::var_os("OLM_RS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/olm-rs")
        });
    std::env::var_os("OLM_RS_REGISTRY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache.join("registry"))
        .join("registry.log")
}

/// Requests the registry logged for repository `repo` (`/v2/<repo>/…`), pushes included.
pub fn requests_for(repo: &str) -> anyhow::Result<usize> {
    let log = std::fs::read_to_string(registry_log())?;
    let needle = format!("/v2/{repo}/");
    Ok(log
        .lines()
        .filter(|l| l.contains("\"GET ") || l.contains("\"HEAD "))
        .filter(|l| l.contains(&needle))
        .count())
}

/// The community bundle tree of `shared/catalogs` ($OLM_RS_SHARED, else the first `shared/` beside the clone or
/// one of its parents, so a git worktree finds it too).
pub fn community_bundles() -> Option<PathBuf> {
    let tail = "catalogs/community-operators-prod-bundles/operators";
    if let Some(d) = std::env::var_os("OLM_RS_SHARED") {
        let dir = PathBuf::from(d).join(tail);
        return dir.is_dir().then_some(dir);
    }
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .ancestors()
    .map(|a| a.join("shared").join(tail))
    .find(|d| d.is_dir())
}

/// FBC documents of a package with one channel `stable` whose entries are `(csv name, version, replaces,
/// image)` in order (the last is the head).
pub fn fbc_package(package: &str, entries: &[(&str, &str, Option<&str>, &str)]) -> Vec<Value> {
    let mut docs = vec![
        json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": package, "name": "stable",
               "entries": entries.iter().map(|(n, _, r, _)| match r {
                   Some(r) => json!({"name": n, "replaces": r}),
                   None => json!({"name": n}),
               }).collect::<Vec<_>>()}),
    ];
    for (name, version, _, image) in entries {
        docs.push(json!({"schema": "olm.bundle", "name": name, "package": package, "image": image,
            "properties": [{"type": "olm.package", "value": {"packageName": package, "version": version}}]}));
    }
    docs
}

/// A JSON stream of documents.
pub fn fbc_text(docs: &[Value]) -> String {
    docs.iter().map(|d| format!("{d}\n")).collect()
}

/// What resolution hands catalog-operator for an unpacked bundle image: the chosen step (in catalog `cat/olm`,
/// replacing `replaces`) and the bundle filled from the image, as `bundle_image::fill` makes it.
pub fn resolved(
    unpacked: &oci::UnpackedBundle,
    image: &str,
    replaces: Option<&str>,
) -> (resolver::BundleStep, catalog_operator::bundle_image::Filled) {
    let name = unpacked.csv["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let chosen = resolver::BundleStep {
        name: name.clone(),
        package: unpacked.package.clone(),
        channel: unpacked.channels.first().cloned().unwrap_or_default(),
        version: unpacked.csv["spec"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        catalog: resolver::CatalogKey::new("cat", "olm"),
        bundle_path: image.to_string(),
        replaces: replaces.map(str::to_string),
        subscription: unpacked.package.clone(),
    };
    let full = registry::api::Bundle {
        csv_name: name,
        package_name: unpacked.package.clone(),
        bundle_path: image.to_string(),
        ..Default::default()
    };
    let filled = catalog_operator::bundle_image::filled(&full, &chosen, image, unpacked);
    (chosen, filled)
}

/// An image's layers (media type, bytes) and config labels.
pub type ImageContent = (
    Vec<(String, Vec<u8>)>,
    std::collections::BTreeMap<String, String>,
);

/// The layers and labels of a catalog image serving the FBC `fbc` from `/configs`.
pub fn catalog_image(fbc: &[u8]) -> anyhow::Result<ImageContent> {
    let layer = oci::build::tar_gz(&[("configs/catalog.json".to_string(), fbc.to_vec())])?;
    let labels = std::collections::BTreeMap::from([(
        "operators.operatorframework.io.index.configs.v1".to_string(),
        "/configs".to_string(),
    )]);
    Ok((vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)], labels))
}

/// The repo's sample catalog folder (`deploy/samples/catalog`: the community etcd bundles, with the
/// `resources[].name` OLM's schema requires added, see its SOURCES.md).
pub fn samples_catalog_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../deploy/samples/catalog")
}

/// The sample etcd package's bundles pushed to the local registry under `<registry>/<namespace>`.
pub struct SampleEtcd {
    pub registry: oci::Registry,
    /// `<registry>/<namespace>`: where the bundles went, and where a test pushes its catalogs.
    pub prefix: String,
    /// Each CSV's bundle image and the FBC referencing them.
    pub published: oci::publish::Published,
}

impl SampleEtcd {
    /// Push the sample etcd bundles for the test namespace `namespace`.
    pub async fn push(namespace: &str) -> anyhow::Result<Self> {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{namespace}", registry_addr());
        let published = oci::publish::push_tree(
            &registry,
            &samples_catalog_dir(),
            &["etcd".to_string()],
            &prefix,
        )
        .await?;
        Ok(Self {
            registry,
            prefix,
            published,
        })
    }
}

/// A `kubernetes.io/dockerconfigjson` Secret `name` holding `docker_config` (a `.dockerconfigjson` document).
pub fn pull_secret(name: &str, docker_config: &str) -> k8s_openapi::api::core::v1::Secret {
    k8s_openapi::api::core::v1::Secret {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".to_string()),
        string_data: Some([(".dockerconfigjson".to_string(), docker_config.to_string())].into()),
        ..Default::default()
    }
}

/// A Subscription `etcd` to the sample etcd package of `catalog`, channel `singlenamespace-alpha`.
pub async fn subscribe_to_sample_etcd(
    ctx: &crate::TestContext,
    catalog: &str,
) -> anyhow::Result<messages::crd::subscription::Subscription> {
    use crate::catalog_fixture::{sub_to, subscription};
    subscription(
        ctx,
        sub_to(ctx, "etcd", "etcd", catalog).channel("singlenamespace-alpha"),
    )
    .await
}

/// [`subscribe_to_sample_etcd`], then CSV `csv` Succeeded (within 180 s: bundle images are pulled).
pub async fn install_sample_etcd(
    ctx: &crate::TestContext,
    catalog: &str,
    csv: &str,
) -> anyhow::Result<messages::crd::csv::ClusterServiceVersion> {
    subscribe_to_sample_etcd(ctx, catalog).await?;
    crate::await_csv_succeeded(
        &ctx.client,
        &ctx.namespace,
        csv,
        std::time::Duration::from_secs(180),
    )
    .await
}
