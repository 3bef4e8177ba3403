//! Image catalogs (a `grpc` CatalogSource with `spec.image` and no address): catalog-operator serves them
//! in-process, with no registry Pod or Service to dial (catalog-operator/src/catalog_images.rs). With
//! `--image-catalogs-address`, package-server reads them from catalog-operator's catalog gRPC server
//! ([`served`]: the catalog loaded and indexed once, in catalog-operator; `registry::routed`). Without it,
//! package-server pulls the same image itself, indexes its catalog the same way (crate `catalog-image`,
//! `files::index`: the FBC under the configs label, or an older sqlite index) and lists it through the same
//! queries as a ConfigMap catalog (`load::from_store`). A read first resolves the tag's digest (one HEAD): an
//! unchanged digest reads nothing. Pulls use the credentials catalog-operator uses ([`credentials`]): the
//! CatalogSource's `spec.secrets` that package-server may read, then the global pull secret; with the same mirrors
//! and CA bundle (`--registries-conf`, `--registry-ca-bundle`).

use crate::catalogs::decide::Observed;
use crate::load;
use crate::manifest::CatalogInfo;
use crate::types::PackageManifest;
use catalog_image::pull_secrets;
use catalog_image::secret_ref::SecretRef;
use oci::{Auth, Limits, Registry};
use registry::client::{ClientOptions, RegistryClient};

/// What a read of an image catalog found.
#[derive(Debug)]
pub struct ImageRead {
    /// The manifest digest the tag names now.
    pub digest: String,
    /// The packages, or None when `digest` is the one read last time.
    pub packages: Option<Vec<PackageManifest>>,
}

/// Whether the image must be pulled again (pure): only when its digest moved.
pub fn needs_pull(last: Option<&str>, now: &str) -> bool {
    last != Some(now)
}

/// The credentials for a catalog's image: the CatalogSource's pull secrets package-server can read (its
/// identity needs `get` on them; one it may not read is logged and skipped), then the global pull secret.
pub async fn credentials(
    client: &kube::Client,
    observed: &Observed,
    global: Option<&SecretRef>,
) -> Auth {
    let namespace = &observed.info.namespace;
    let catalog = format!("{namespace}/{}", observed.info.name);
    let global = pull_secrets::global_payload(client, global).await;
    pull_secrets::credentials(&catalog, &observed.secrets, global, |name| async move {
        pull_secrets::read_secret(client, namespace, &name).await
    })
    .await
}

/// Read the catalog image `image` with `auth`; `last` is the digest read last time.
pub async fn read(
    registry: &Registry,
    image: &str,
    auth: &Auth,
    last: Option<&str>,
    info: CatalogInfo,
) -> Result<ImageRead, String> {
    let digest = match oci::publish::pinned_digest(image) {
        Some(d) => d.to_string(),
        None => registry
            .resolve(image, auth)
            .await
            .map_err(|e| e.to_string())?,
    };
    if !needs_pull(last, &digest) {
        return Ok(ImageRead {
            digest,
            packages: None,
        });
    }
    let pinned = oci::publish::pinned(image, &digest);
    let pulled = registry
        .pull(&pinned, auth, &Limits::CATALOG)
        .await
        .map_err(|e| e.to_string())?;
    let reference = image.to_string();
    let packages = tokio::task::spawn_blocking(move || {
        let store = catalog_image::files::index(&reference, &pulled).map_err(|e| e.to_string())?;
        Ok::<_, String>(load::from_store(&store, &info))
    })
    .await
    .map_err(|e| format!("catalog indexing task failed: {e}"))??;
    Ok(ImageRead {
        digest,
        packages: Some(packages),
    })
}

/// The packages of an image catalog catalog-operator loaded, read from its catalog server at `address` with the
/// same RPCs as an address catalog, naming the catalog (`<namespace>/<name>`) on every request. A catalog it
/// has not loaded (yet) fails the read (NOT_FOUND); the actor retries, and reads again when catalog-operator
/// records the catalog READY.
pub async fn served(
    address: &str,
    options: ClientOptions,
    info: &CatalogInfo,
) -> Result<Vec<PackageManifest>, String> {
    let options = ClientOptions {
        catalog: Some(format!("{}/{}", info.namespace, info.name)),
        ..options
    };
    let client =
        RegistryClient::connect(address, options).map_err(|e| olm_runtime::error::chain(&e))?;
    let read = load::load(&client, info).await.map_err(|e| {
        format!(
            "reading the catalog from catalog-operator at {address}: {}",
            olm_runtime::error::chain(&e)
        )
    });
    client.close();
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::first_read(None, "sha256:a", true)]
    #[case::same_digest(Some("sha256:a"), "sha256:a", false)]
    #[case::tag_moved(Some("sha256:a"), "sha256:b", true)]
    fn an_image_is_pulled_again_only_when_its_digest_moved(
        #[case] last: Option<&str>,
        #[case] now: &str,
        #[case] pull: bool,
    ) {
        assert_eq!(needs_pull(last, now), pull);
    }
}
