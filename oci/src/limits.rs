//! Size bounds for what a pull may bring into memory: a registry or an image can be hostile or just huge.

/// Bounds checked before and while bytes arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A manifest document.
    pub manifest_bytes: usize,
    /// One compressed layer as the manifest declares it (checked before the download).
    pub layer_bytes: u64,
    /// Everything kept after unpacking (only the files the caller keeps count).
    pub unpacked_bytes: u64,
    /// One kept file.
    pub file_bytes: u64,
    /// Layers in one image.
    pub layers: usize,
    /// All compressed layers together, as the manifest declares them (checked before any download).
    pub image_bytes: u64,
}

impl Limits {
    /// Refuse a kept file of `size` bytes at `/path` of `reference` when it is over [`Limits::file_bytes`].
    pub fn check_file(
        &self,
        reference: &str,
        path: &str,
        size: u64,
    ) -> Result<(), crate::error::PullError> {
        if size > self.file_bytes {
            return Err(crate::error::PullError::TooLarge {
                reference: reference.to_string(),
                what: format!("file /{path}"),
                size,
                limit: self.file_bytes,
            });
        }
        Ok(())
    }

    /// Bundle images: a bundle's manifests are small (the largest community bundle is a few MiB of CRDs).
    pub const BUNDLE: Limits = Limits {
        manifest_bytes: 4 << 20,
        layer_bytes: 64 << 20,
        unpacked_bytes: 32 << 20,
        file_bytes: 16 << 20,
        layers: 32,
        image_bytes: 64 << 20,
    };
    /// Catalog images: a file-based catalog of thousands of bundles (the 745-bundle community catalog is 14 MiB
    /// unpacked), within catalog-operator's 256 MiB memory limit: compressed layers and the unpacked files are in
    /// memory at once while a catalog is indexed.
    pub const CATALOG: Limits = Limits {
        manifest_bytes: 4 << 20,
        layer_bytes: 64 << 20,
        unpacked_bytes: 128 << 20,
        file_bytes: 128 << 20,
        layers: 64,
        image_bytes: 64 << 20,
    };
    /// Catalog images indexed from disk (catalog-operator's cache folder): the compressed layers are in memory
    /// while they are pulled, the unpacked files only on disk (a 10,000-bundle catalog is about 200 MiB of FBC).
    pub const CATALOG_ON_DISK: Limits = Limits {
        manifest_bytes: 4 << 20,
        layer_bytes: 128 << 20,
        unpacked_bytes: 2 << 30,
        file_bytes: 1 << 30,
        layers: 64,
        image_bytes: 128 << 20,
    };
}
