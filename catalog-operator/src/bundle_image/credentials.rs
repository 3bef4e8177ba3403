//! The credentials for catalog-operator's pulls of a CatalogSource's bundle and catalog images: the catalog's
//! `spec.secrets` (from the CatalogSource store) and the global pull secret, read and merged by
//! `catalog_image::pull_secrets`. deploy/rbac does not let catalog-operator read Secrets: on a Forbidden read it
//! grants itself `get` on the catalog's pull secrets (`crate::self_grant`) and reads again.

use crate::self_grant::{self, CatalogRef};
use crate::shared::Shared;
use catalog_image::pull_secrets::{self, SecretPayload};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use oci::Auth;
use olm_runtime::error::{self as api_error, Class};
use resolver::CatalogKey;
use std::sync::atomic::{AtomicBool, Ordering};

/// The credentials for pulling an image for CatalogSource `catalog`: its `spec.secrets`, then the global pull
/// secret, as a keyring by registry host; anonymous when none is named. A Secret that cannot be read is logged
/// and skipped.
pub async fn for_catalog(shared: &Shared, catalog: &CatalogKey) -> Auth {
    let sources = shared.catalog_sources();
    let source = sources.iter().find(|c| {
        c.metadata.name.as_deref() == Some(catalog.name.as_str())
            && c.metadata.namespace.as_deref() == Some(catalog.namespace.as_str())
    });
    let names: Vec<String> = source
        .and_then(|c| c.spec.secrets.clone())
        .unwrap_or_default();
    let uid = source
        .and_then(|c| c.metadata.uid.clone())
        .unwrap_or_default();
    let global =
        pull_secrets::global_payload(&shared.client, shared.config.global_pull_secret.as_ref())
            .await;
    let api: Api<Secret> = Api::namespaced(shared.client.clone(), &catalog.namespace);
    let reference = CatalogRef {
        namespace: &catalog.namespace,
        name: &catalog.name,
        uid: &uid,
        secrets: &names,
    };
    let granted = AtomicBool::new(false);
    let read = |name: String| {
        let (api, reference, granted) = (&api, &reference, &granted);
        async move { read_granting(shared, api, reference, granted, &name).await }
    };
    pull_secrets::credentials(&catalog.to_string(), &names, global, read).await
}

/// Read pull secret `name`; after a Forbidden, grant ourselves the catalog's pull secrets (once per call of
/// [`for_catalog`] that succeeds) and read again while RBAC catches up.
async fn read_granting(
    shared: &Shared,
    api: &Api<Secret>,
    reference: &CatalogRef<'_>,
    granted: &AtomicBool,
    name: &str,
) -> Result<SecretPayload, kube::Error> {
    let mut read = api.get(name).await;
    if matches!(&read, Err(e) if api_error::is(e, Class::Forbidden))
        && !granted.load(Ordering::Relaxed)
    {
        let now = self_grant::grant_pull_secrets(
            &shared.client,
            shared.process.self_grantee.as_ref(),
            reference,
        )
        .await;
        granted.store(now, Ordering::Relaxed);
        if now {
            read = self_grant::after_grant(|| api.get(name)).await;
        }
    }
    read.map(pull_secrets::payload)
}
