//! Pushing an image index over manifests already in a repository (multi-platform images for tests and tools).

use crate::client::{Auth, Registry};
use crate::digest::sha256_digest;
use crate::error::PullError;
use crate::error::map_error;
use crate::platform::Platform;
use oci_client::Reference;
use oci_client::manifest::{OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    schema_version: u8,
    media_type: &'static str,
    manifests: Vec<Entry>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    media_type: &'static str,
    digest: String,
    size: u64,
    platform: EntryPlatform,
}

#[derive(Serialize)]
struct EntryPlatform {
    os: String,
    architecture: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
}

impl Registry {
    /// Pushes, as `reference`, an OCI image index of `entries`: (digest of an OCI image manifest already pushed
    /// to the same repository, its platform). Returns the index's digest.
    pub async fn push_index(
        &self,
        reference: &str,
        auth: &Auth,
        entries: &[(String, Platform)],
    ) -> Result<String, PullError> {
        let r = Self::reference(reference)?;
        let client = self.client_for(reference, &r, auth)?;
        let oci_auth = auth.oci();
        let mut manifests = Vec::new();
        for (digest, platform) in entries {
            let child = Reference::with_digest(
                r.registry().to_string(),
                r.repository().to_string(),
                digest.clone(),
            );
            let body = client
                .manifests
                .get(
                    &client.oci,
                    reference,
                    &child,
                    &oci_auth,
                    &[OCI_IMAGE_MEDIA_TYPE],
                    crate::Limits::BUNDLE.manifest_bytes,
                )
                .await?
                .body;
            manifests.push(Entry {
                media_type: OCI_IMAGE_MEDIA_TYPE,
                digest: digest.clone(),
                size: body.len() as u64,
                platform: EntryPlatform {
                    os: platform.os.clone(),
                    architecture: platform.architecture.clone(),
                    variant: platform.variant.clone(),
                },
            });
        }
        let body = serde_json::to_vec(&Index {
            schema_version: 2,
            media_type: OCI_IMAGE_INDEX_MEDIA_TYPE,
            manifests,
        })
        .map_err(|e| PullError::Registry {
            reference: reference.to_string(),
            message: e.to_string(),
        })?;
        let digest = sha256_digest(&body);
        client
            .push_manifest_raw(
                &r,
                body,
                http::HeaderValue::from_static(OCI_IMAGE_INDEX_MEDIA_TYPE),
            )
            .await
            .map_err(|e| map_error(reference, e))?;
        Ok(digest)
    }
}
