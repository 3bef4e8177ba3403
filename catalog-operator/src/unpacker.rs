//! The unpacker: one pull per image at a time, run as a tokio task so resolution never waits on a registry;
//! results cached by manifest digest (bounded in bytes); failures remembered with an exponential backoff
//! (5 s doubling to 5 min) before the next attempt. Every namespace waiting on an image is asked to resolve
//! again when its pull ends.

use oci::cache::DigestCache;
use oci::{Auth, Limits, PullError, Registry, UnpackedBundle};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Default bound of the unpacked-bundle cache.
pub const CACHE_BYTES: u64 = 256 << 20;
pub const FIRST_BACKOFF: Duration = Duration::from_secs(5);
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

type Waiter = Box<dyn FnOnce() + Send>;

enum State {
    Running {
        waiters: Vec<Waiter>,
    },
    /// A tag's pull finished: handed to the next poll (digest references are served from the cache instead).
    Done(Arc<UnpackedBundle>),
    Failed {
        error: PullError,
        attempts: u32,
        retry_at: Instant,
    },
}

/// What a poll found.
#[derive(Debug)]
pub enum Poll {
    Ready(Arc<UnpackedBundle>),
    Pending,
    Failed {
        error: PullError,
        retry_in: Duration,
    },
}

/// The backoff after `attempts` failed pulls.
pub fn backoff(attempts: u32) -> Duration {
    let factor = 1u32 << attempts.saturating_sub(1).min(10);
    (FIRST_BACKOFF * factor).min(MAX_BACKOFF)
}

/// The digest pinned by a reference (`repo@sha256:…`).
pub fn pinned_digest(image: &str) -> Option<&str> {
    oci::publish::pinned_digest(image)
}

pub struct Unpacker {
    registry: Registry,
    cache: DigestCache<UnpackedBundle>,
    pulls: Mutex<HashMap<String, State>>,
}

impl Default for Unpacker {
    fn default() -> Self {
        Self::new(Registry::default(), CACHE_BYTES)
    }
}

impl Unpacker {
    pub fn new(registry: Registry, cache_bytes: u64) -> Self {
        Self {
            registry,
            cache: DigestCache::new(cache_bytes),
            pulls: Mutex::new(HashMap::new()),
        }
    }

    /// Requests sent to registries so far.
    pub fn registry_requests(&self) -> u64 {
        self.registry.requests()
    }

    /// The unpacked bundle of `image` if known, else starts (or waits for, or backs off from) its pull; `notify`
    /// runs when a pull this poll waits on ends.
    pub fn poll(
        self: &Arc<Self>,
        image: &str,
        auth: Auth,
        timeout: Duration,
        notify: Waiter,
    ) -> Poll {
        if let Some(hit) = pinned_digest(image).and_then(|d| self.cache.get(d)) {
            return Poll::Ready(hit);
        }
        let mut pulls = self.pulls.lock().unwrap_or_else(PoisonError::into_inner);
        let attempts = match pulls.get_mut(image) {
            Some(State::Running { waiters }) => {
                waiters.push(notify);
                return Poll::Pending;
            }
            Some(State::Done(_)) => {
                if let Some(State::Done(b)) = pulls.remove(image) {
                    return Poll::Ready(b);
                }
                0
            }
            Some(State::Failed {
                error,
                attempts,
                retry_at,
            }) => {
                let now = Instant::now();
                if now < *retry_at {
                    return Poll::Failed {
                        error: error.clone(),
                        retry_in: *retry_at - now,
                    };
                }
                *attempts
            }
            None => 0,
        };
        pulls.insert(
            image.to_string(),
            State::Running {
                waiters: vec![notify],
            },
        );
        drop(pulls);
        let this = self.clone();
        let image = image.to_string();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = match tokio::time::timeout(timeout, this.pull(&image, &auth)).await {
                Ok(r) => r,
                Err(_) => Err(PullError::Timeout {
                    reference: image.clone(),
                    seconds: timeout.as_secs(),
                }),
            };
            tracing::info!(image = %image, ok = result.is_ok(), error = ?result.as_ref().err().map(ToString::to_string), elapsed_ms = started.elapsed().as_millis() as u64, "bundle image pulled");
            let next = match result {
                Ok(b) => State::Done(b),
                Err(error) => State::Failed {
                    error,
                    attempts: attempts + 1,
                    retry_at: Instant::now() + backoff(attempts + 1),
                },
            };
            let waiters = {
                let mut pulls = this.pulls.lock().unwrap_or_else(PoisonError::into_inner);
                let keep_done = pinned_digest(&image).is_none();
                let old = match (&next, keep_done) {
                    (State::Done(_), false) => pulls.remove(&image),
                    _ => pulls.insert(image.clone(), next),
                };
                match old {
                    Some(State::Running { waiters }) => waiters,
                    _ => Vec::new(),
                }
            };
            for w in waiters {
                w();
            }
        });
        Poll::Pending
    }

    /// The unpacked bundle of `image` now: from the cache, else pulled (once more, bounded by `timeout`). For
    /// readers that must have it (an InstallPlan reading the objects its steps refer to).
    pub async fn get(
        &self,
        image: &str,
        auth: &Auth,
        timeout: Duration,
    ) -> Result<Arc<UnpackedBundle>, PullError> {
        if let Some(hit) = pinned_digest(image).and_then(|d| self.cache.get(d)) {
            return Ok(hit);
        }
        tokio::time::timeout(timeout, self.pull(image, auth))
            .await
            .unwrap_or_else(|_| {
                Err(PullError::Timeout {
                    reference: image.to_string(),
                    seconds: timeout.as_secs(),
                })
            })
    }

    async fn pull(&self, image: &str, auth: &Auth) -> Result<Arc<UnpackedBundle>, PullError> {
        // A tag is resolved first (one HEAD): its content may already be cached under the digest.
        if pinned_digest(image).is_none() {
            let digest = self.registry.resolve(image, auth).await?;
            if let Some(hit) = self.cache.get(&digest) {
                return Ok(hit);
            }
        }
        let bundle = pull_bundle(&self.registry, image, auth).await?;
        let digest = bundle.digest.clone();
        let bytes = bundle.bytes;
        let bundle = Arc::new(bundle);
        self.cache.insert(&digest, bundle.clone(), bytes);
        Ok(bundle)
    }
}

/// Pulls bundle image `image` and reads it (digest-checked, unpacked in memory off the async threads): the
/// unpacker's pull without its cache.
pub async fn pull_bundle(
    registry: &Registry,
    image: &str,
    auth: &Auth,
) -> Result<UnpackedBundle, PullError> {
    let pulled = registry.pull(image, auth, &Limits::BUNDLE).await?;
    tokio::task::spawn_blocking({
        let image = image.to_string();
        move || {
            let files =
                oci::layers::unpack(&image, &pulled.layers, &oci::bundle::keep, &Limits::BUNDLE)?;
            oci::bundle::from_files(&image, &pulled.digest, &files)
        }
    })
    .await
    .map_err(|e| PullError::BadLayer {
        reference: image.to_string(),
        layer: String::new(),
        message: e.to_string(),
    })?
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::first(1, 5)]
    #[case::second(2, 10)]
    #[case::fifth(5, 80)]
    #[case::capped(9, 300)]
    #[case::many(40, 300)]
    fn failed_pulls_back_off_exponentially(#[case] attempts: u32, #[case] secs: u64) {
        assert_eq!(backoff(attempts), Duration::from_secs(secs));
    }

    #[rstest]
    #[case::digest("r/a@sha256:ab", Some("sha256:ab"))]
    #[case::tag("r/a:v1", None)]
    #[case::port_tag("127.0.0.1:25000/a:v1", None)]
    fn digest_references_are_cache_keys(#[case] image: &str, #[case] digest: Option<&str>) {
        assert_eq!(pinned_digest(image), digest);
    }
}
