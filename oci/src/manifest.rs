//! What a pulled manifest says, read without I/O (so it is table-tested and fuzzed, `fuzz/`): an image index
//! or manifest list resolved to the digest of one platform's manifest, an image manifest parsed, an image config's
//! labels. Anything else is a [`PullError`] naming the image.

use crate::error::PullError;
use crate::platform::{self, Platform};
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE, OciImageManifest,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// A manifest document as pulled.
#[derive(Debug)]
pub enum Pulled {
    /// An image manifest.
    Image(Box<OciImageManifest>),
    /// An index (or Docker manifest list): the digest of the manifest for the platform asked for.
    Index { chosen: String },
}

/// Reads the manifest document `body` of `reference`, choosing `wanted`'s manifest from an index.
pub fn read(reference: &str, body: &[u8], wanted: &Platform) -> Result<Pulled, PullError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| PullError::Registry {
        reference: reference.to_string(),
        message: format!("manifest is not JSON: {e}"),
    })?;
    let media_type = value
        .get("mediaType")
        .and_then(Value::as_str)
        .unwrap_or(OCI_IMAGE_MEDIA_TYPE);
    match media_type {
        OCI_IMAGE_INDEX_MEDIA_TYPE | IMAGE_MANIFEST_LIST_MEDIA_TYPE => {
            let chosen = platform::choose(&value, wanted).map_err(|available| {
                PullError::NoMatchingPlatform {
                    reference: reference.to_string(),
                    wanted: wanted.to_string(),
                    available,
                }
            })?;
            Ok(Pulled::Index { chosen })
        }
        OCI_IMAGE_MEDIA_TYPE | IMAGE_MANIFEST_MEDIA_TYPE => {
            Ok(Pulled::Image(Box::new(image(reference, body)?)))
        }
        other => Err(PullError::WrongMediaType {
            reference: reference.to_string(),
            media_type: other.to_string(),
        }),
    }
}

/// Parses an image manifest (the one an index chose, or one pulled as such).
pub fn image(reference: &str, body: &[u8]) -> Result<OciImageManifest, PullError> {
    serde_json::from_slice(body).map_err(|e| PullError::Registry {
        reference: reference.to_string(),
        message: format!("invalid image manifest: {e}"),
    })
}

/// The `config.Labels` of an image config (string values; others are left out).
pub fn labels(reference: &str, config: &[u8]) -> Result<BTreeMap<String, String>, PullError> {
    let config: Value = serde_json::from_slice(config).map_err(|e| PullError::Registry {
        reference: reference.to_string(),
        message: format!("image config is not JSON: {e}"),
    })?;
    Ok(config
        .get("config")
        .and_then(|c| c.get("Labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const AMD64: &str = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}"#;
    const IMAGE: &str = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:cc","size":2},"layers":[]}"#;

    fn kind(r: Result<Pulled, PullError>) -> String {
        match r {
            Ok(Pulled::Image(m)) => format!("image with {} layers", m.layers.len()),
            Ok(Pulled::Index { chosen }) => format!("index chose {chosen}"),
            Err(e) => e.reason().to_string(),
        }
    }

    #[rstest]
    #[case::an_index_chooses_the_platform(AMD64, "linux/amd64", "index chose sha256:aa")]
    #[case::an_index_without_the_platform(AMD64, "linux/arm64", "NoMatchingPlatform")]
    #[case::an_image_manifest(IMAGE, "linux/amd64", "image with 0 layers")]
    #[case::no_media_type_reads_as_an_image(
        r#"{"schemaVersion":2,"config":{"mediaType":"x","digest":"sha256:cc","size":2},"layers":[]}"#,
        "linux/amd64",
        "image with 0 layers"
    )]
    #[case::another_media_type(
        r#"{"mediaType":"application/vnd.docker.distribution.manifest.v1+json"}"#,
        "linux/amd64",
        "WrongMediaType"
    )]
    #[case::not_json("{", "linux/amd64", "RegistryError")]
    #[case::a_media_type_of_the_wrong_type(r#"{"mediaType":7}"#, "linux/amd64", "RegistryError")]
    fn a_pulled_manifest_is_read_by_its_media_type(
        #[case] body: &str,
        #[case] platform: &str,
        #[case] want: &str,
    ) {
        let wanted = Platform::parse(platform).expect("a platform");
        assert_eq!(kind(read("r", body.as_bytes(), &wanted)), want);
    }

    #[rstest]
    #[case::string_labels_kept(r#"{"config":{"Labels":{"a":"1","b":2}}}"#, Some(vec![("a", "1")]))]
    #[case::no_labels(r#"{"config":{}}"#, Some(vec![]))]
    #[case::not_json("[", None)]
    fn an_image_config_gives_its_string_labels(
        #[case] config: &str,
        #[case] want: Option<Vec<(&str, &str)>>,
    ) {
        let want: Option<BTreeMap<String, String>> = want.map(|w| {
            w.into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        });
        assert_eq!(labels("r", config.as_bytes()).ok(), want);
    }
}
