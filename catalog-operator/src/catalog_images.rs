//! Catalog images served in-process (issue 13), as catalogd does: a CatalogSource with `spec.image` is pulled
//! straight from its registry (no registry Pod, no Service: the full local cluster has no kube-proxy or DNS, so
//! OLM's pod approach cannot be reached there), its file-based catalog (the
//! `operators.operatorframework.io.index.configs.v1` label, `/configs` by default) unpacked into the cache
//! folder (`--catalog-cache-dir`) and indexed there by a short-lived child process (`catalog-operator
//! index-catalog`, crate `catalog-image` `indexer`) into the same [`registry::store::Store`] the gRPC server
//! uses: this process keeps the compact index, the bundle bodies stay in an unlinked file of the cache folder,
//! and the parse's high-water mark and garbage die with the child (issue 33). Each poll re-reads the tag's
//! digest (one HEAD request); a new digest is pulled and indexed while the old catalog keeps serving, then
//! swapped in.
//!
//! ```text
//! CatalogSource actor refresh ─▶ CatalogImages::load(key, image) ─ digest unchanged ─▶ same Arc<Store>
//!                    └─ new digest: pull ─▶ indexer::index (child: unpack, parse by parts, index) ─▶ swap
//! ```

use catalog_image::indexer::{IndexError, Indexer};
use oci::{Auth, Limits, PullError, Registry};
use registry::store::Store;
use resolver::CatalogKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

struct Loaded {
    image: String,
    digest: String,
    store: Arc<Store>,
}

/// Why a catalog image did not load: its pull, or its indexing (both name the image and what failed).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Pull(#[from] PullError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("the indexing task of catalog image {reference} failed: {message}")]
    Task { reference: String, message: String },
}

/// The catalog images this process serves, one per CatalogSource.
#[derive(Default)]
pub struct CatalogImages {
    registry: Registry,
    indexer: Indexer,
    loaded: Mutex<HashMap<CatalogKey, Loaded>>,
}

/// Indexing in a child process of this binary, in `cache` (default: `olm-rs-catalogs` in the temp folder),
/// cleared of what a previous run left there. A cache folder that cannot be made is not fatal: each load then
/// fails with a status naming it.
pub fn child_indexer(cache: Option<std::path::PathBuf>) -> Indexer {
    let cache = cache.unwrap_or_else(|| std::env::temp_dir().join("olm-rs-catalogs"));
    if let Err(e) = std::fs::create_dir_all(&cache) {
        tracing::warn!(cache = %cache.display(), error = &e as &dyn std::error::Error, "cannot create the catalog cache folder");
    }
    catalog_image::indexer::clear_stale(&cache);
    match std::env::current_exe() {
        Ok(exe) => Indexer::Child {
            exe,
            args: vec!["index-catalog".into(), "--job".into()],
            cache,
        },
        Err(e) => {
            tracing::warn!(
                error = &e as &dyn std::error::Error,
                "cannot find this binary to run the catalog indexer; indexing in-process"
            );
            Indexer::InProcess { cache }
        }
    }
}

impl CatalogImages {
    /// Catalog images pulled through `registry` and indexed by `indexer`.
    pub fn new(registry: Registry, indexer: Indexer) -> Self {
        Self {
            registry,
            indexer,
            loaded: Mutex::default(),
        }
    }

    /// Requests sent to registries for catalog images.
    pub fn registry_requests(&self) -> u64 {
        self.registry.requests()
    }

    /// The manifest digest currently served for `key`.
    pub fn digest(&self, key: &CatalogKey) -> Option<String> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .map(|l| l.digest.clone())
    }

    /// Drops what `key` served (its CatalogSource is gone).
    pub fn forget(&self, key: &CatalogKey) {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// The indexed catalog of `image` for `key`: the one already loaded when the image's digest has not moved,
    /// else the image pulled (by digest) and indexed.
    pub async fn load(
        &self,
        key: &CatalogKey,
        image: &str,
        auth: &Auth,
    ) -> Result<Arc<Store>, LoadError> {
        let digest = match oci::publish::pinned_digest(image) {
            Some(d) => d.to_string(),
            None => self.registry.resolve(image, auth).await?,
        };
        {
            let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(l) = loaded
                .get(key)
                .filter(|l| l.digest == digest && l.image == image)
            {
                return Ok(l.store.clone());
            }
        }
        let started = Instant::now();
        let pinned = oci::publish::pinned(image, &digest);
        let pulled = self
            .registry
            .pull(&pinned, auth, &Limits::CATALOG_ON_DISK)
            .await?;
        let pulled_at = started.elapsed();
        let (reference, indexer) = (image.to_string(), self.indexer.clone());
        let (store, summary) = tokio::task::spawn_blocking(move || {
            catalog_image::indexer::index(&indexer, &reference, pulled)
        })
        .await
        .map_err(|e| LoadError::Task {
            reference: image.to_string(),
            message: e.to_string(),
        })??;
        // The pulled layers were large allocations; give back what the heap holds free.
        olm_runtime::heap_trim::trim();
        tracing::info!(catalog = %key, image, digest = %digest, pull_ms = pulled_at.as_millis() as u64, total_ms = started.elapsed().as_millis() as u64, indexed = %summary, "catalog image loaded");
        let store = Arc::new(store);
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                key.clone(),
                Loaded {
                    image: image.to_string(),
                    digest,
                    store: store.clone(),
                },
            );
        Ok(store)
    }
}

/// The catalogs served to package-server (`--catalog-serve-addr`): `<namespace>/<name>` of the CatalogSource.
impl registry::routed::Catalogs for CatalogImages {
    fn store(&self, key: &str) -> Option<Arc<Store>> {
        let (namespace, name) = key.split_once('/')?;
        let key = CatalogKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .map(|l| l.store.clone())
    }
}

/// The connection state an in-process image catalog reports after a load: READY when it loaded; when it did
/// not, TRANSIENT_FAILURE unless an earlier catalog still serves (then it stays READY with the error shown).
pub fn connection_after(loaded: bool, serving_before: bool) -> registry::client::ConnectionState {
    use registry::client::ConnectionState;
    if loaded || serving_before {
        ConnectionState::Ready
    } else {
        ConnectionState::TransientFailure
    }
}
