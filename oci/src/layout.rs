//! An OCI image layout archive (`oci-layout`, `index.json`, `blobs/sha256/…` in one tar, as `hack/images.sh`
//! writes them) read back and pushed to a registry unchanged, so the pushed image has the archive's digest.

use crate::client::{Auth, Registry};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// One image of a layout archive: its manifest (bytes and media type) and every blob it names.
#[derive(Debug)]
pub struct LayoutImage {
    pub manifest: Vec<u8>,
    pub media_type: String,
    /// digest → bytes, the config first, then the layers in order.
    pub blobs: Vec<(String, Vec<u8>)>,
}

/// Reads the archive's only image (its index must list exactly one manifest).
pub fn read_layout(archive: &Path) -> Result<LayoutImage> {
    let file =
        std::fs::File::open(archive).with_context(|| format!("open {}", archive.display()))?;
    let mut files = BTreeMap::new();
    for entry in tar::Archive::new(file).entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        files.insert(path, data);
    }
    let index: Value = serde_json::from_slice(files.get("index.json").context("no index.json")?)?;
    let manifests = index["manifests"]
        .as_array()
        .context("index.json without manifests")?;
    let [entry] = manifests.as_slice() else {
        bail!(
            "{}: {} manifests in index.json, expected one",
            archive.display(),
            manifests.len()
        );
    };
    let blob = |digest: &str| -> Result<Vec<u8>> {
        let hex = digest
            .strip_prefix("sha256:")
            .with_context(|| format!("digest {digest}"))?;
        files
            .get(&format!("blobs/sha256/{hex}"))
            .cloned()
            .with_context(|| format!("blob {digest} missing from {}", archive.display()))
    };
    let digest = entry["digest"]
        .as_str()
        .context("manifest entry without digest")?;
    let manifest = blob(digest)?;
    let parsed: Value = serde_json::from_slice(&manifest)?;
    let media_type = parsed["mediaType"]
        .as_str()
        .or(entry["mediaType"].as_str())
        .unwrap_or("application/vnd.oci.image.manifest.v1+json")
        .to_string();
    let mut digests = vec![
        parsed["config"]["digest"]
            .as_str()
            .context("manifest without config")?,
    ];
    for layer in parsed["layers"]
        .as_array()
        .context("manifest without layers")?
    {
        digests.push(layer["digest"].as_str().context("layer without digest")?);
    }
    let blobs = digests
        .into_iter()
        .map(|d| Ok((d.to_string(), blob(d)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(LayoutImage {
        manifest,
        media_type,
        blobs,
    })
}

/// Pushes the archive's image as `reference`; returns its digest (the archive's own).
pub async fn push_layout(
    registry: &Registry,
    archive: &Path,
    reference: &str,
    auth: &Auth,
) -> Result<String> {
    let image = read_layout(archive)?;
    Ok(registry
        .push_manifest_and_blobs(
            reference,
            auth,
            image.blobs,
            image.manifest,
            &image.media_type,
        )
        .await?)
}
