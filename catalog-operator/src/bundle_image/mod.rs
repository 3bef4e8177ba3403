//! Bundle images (issue 13): a resolved bundle that has an image and no inline objects is pulled straight from
//! its registry in this process (no unpack Job, no pod, as OLM v1 does), digest-checked, unpacked in memory and
//! turned into InstallPlan steps. As OLM v0 (≥ 0.19) does, unpacking happens during namespace resolution,
//! before the InstallPlan exists: the Subscriptions show `BundleUnpacking` while it runs and `BundleUnpackFailed`
//! when it fails (and it is retried with backoff), so a bad image never yields a half-built plan.
//!
//! ```text
//! namespace prefetch task ─▶ fill(bundle) ──cache hit (digest)──────────▶ objects → steps + bundleLookup
//!                               │ miss: Unpacker::poll ─▶ tokio task: oci pull → unpack → DigestCache
//!                               └─▶ NotYet::{Pending, Failed}   task done ─▶ shared.resolve(ns)
//! ```

pub mod credentials;
pub mod lookup;
pub mod timeout;

use crate::shared::Shared;
use crate::unpacker::{self, Poll};
use messages::crd::install_plan::BundleLookup;
use registry::api;
use resolver::BundleStep;
use std::time::Duration;

/// Why a bundle's steps cannot be built yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotYet {
    /// The image is being pulled; resolution runs again when it is done.
    Pending { image: String },
    /// The pull failed; retried after `retry_in`.
    Failed {
        reason: String,
        message: String,
        retry_in: Duration,
    },
}

/// Whether `b` must be unpacked from its image: it names one and carries no installable CSV inline (a
/// file-based catalog's bundle has no objects, or only the CSV the registry builds from `olm.csv.metadata`,
/// whose `spec.install` has no deployments).
pub fn needs_unpack(b: &api::Bundle) -> bool {
    let installable = |o: &String| {
        serde_json::from_str::<serde_json::Value>(o).is_ok_and(|v| {
            v["kind"] == "ClusterServiceVersion" && v["spec"]["install"].get("spec").is_some()
        })
    };
    !b.bundle_path.is_empty() && !b.object.iter().any(installable)
}

/// A bundle with its objects, where they came from, and the plan's `status.bundleLookups` entry when it was
/// unpacked from its image.
#[derive(Debug)]
pub struct Filled {
    pub bundle: api::Bundle,
    pub source: crate::bundle_content::Source,
    pub lookup: Option<BundleLookup>,
}

/// The bundle with its objects: `full` itself when the catalog carries them inline, else the unpacked image's.
pub async fn fill(
    shared: &Shared,
    ns: &str,
    chosen: &BundleStep,
    full: api::Bundle,
) -> Result<Filled, NotYet> {
    if !needs_unpack(&full) {
        return Ok(Filled {
            bundle: full,
            source: Default::default(),
            lookup: None,
        });
    }
    let image = full.bundle_path.clone();
    let auth = credentials::for_catalog(shared, &chosen.catalog).await;
    let timeout = timeout::for_namespace(&shared.operator_groups(), ns);
    let notify = {
        let shared = shared.clone();
        let ns = ns.to_string();
        move || shared.resolve(&ns, crate::routes::Cause::Retry)
    };
    match shared.bundles.poll(&image, auth, timeout, Box::new(notify)) {
        Poll::Ready(unpacked) => {
            let csv_name = unpacked.csv["metadata"]["name"]
                .as_str()
                .unwrap_or_default();
            if csv_name != chosen.name {
                return Err(NotYet::Failed {
                    reason: "InvalidManifest".into(),
                    message: format!(
                        "bundle image {image} holds ClusterServiceVersion {csv_name:?}, but the catalog lists it as {:?}",
                        chosen.name
                    ),
                    retry_in: unpacker::MAX_BACKOFF,
                });
            }
            Ok(filled(&full, chosen, &image, &unpacked))
        }
        Poll::Pending => Err(NotYet::Pending { image }),
        Poll::Failed { error, retry_in } => Err(NotYet::Failed {
            reason: error.reason().to_string(),
            message: error.to_string(),
            retry_in,
        }),
    }
}

/// `full` with the objects of its unpacked image `image`.
pub fn filled(
    full: &api::Bundle,
    chosen: &BundleStep,
    image: &str,
    unpacked: &oci::UnpackedBundle,
) -> Filled {
    let mut bundle = full.clone();
    bundle.csv_json = unpacked.csv.to_string();
    bundle.object = unpacked.object_strings();
    Filled {
        bundle,
        source: crate::bundle_content::Source {
            image: Some(image.to_string()),
            digest: Some(unpacked.digest.clone()),
            files: unpacked.files.clone(),
        },
        lookup: Some(lookup::completed(full, chosen)),
    }
}

/// The Subscription outcome of a bundle that is not unpacked yet, and when to resolve again. Messages follow
/// OLM's (`Bundle unpacking failed - <reason>: <message>`).
pub fn decided(n: &NotYet) -> (crate::status::Decided, Duration) {
    use crate::status::Decided;
    match n {
        NotYet::Pending { image } => (
            Decided::Unpacking {
                message: format!("pulling bundle image {image}"),
            },
            // The pull's end asks for resolution itself; this is OLM's 5 s safety requeue.
            Duration::from_secs(5),
        ),
        NotYet::Failed {
            reason,
            message,
            retry_in,
        } => (
            Decided::UnpackFailed {
                message: format!(
                    "Bundle unpacking failed - {reason}: {message}. Retrying in {} s.",
                    retry_in.as_secs().max(1)
                ),
            },
            *retry_in,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const FULL_CSV: &str = r#"{"kind":"ClusterServiceVersion","spec":{"install":{"strategy":"deployment","spec":{"deployments":[]}}}}"#;
    const METADATA_CSV: &str =
        r#"{"kind":"ClusterServiceVersion","spec":{"install":{"strategy":"deployment"}}}"#;

    #[rstest]
    #[case::image_no_objects("quay.io/a@sha256:1", &[], true)]
    #[case::image_metadata_csv_only("quay.io/a@sha256:1", &[METADATA_CSV], true)]
    #[case::image_with_inline_bundle("quay.io/a@sha256:1", &[FULL_CSV], false)]
    #[case::inline_no_image("", &[FULL_CSV], false)]
    #[case::nothing_at_all("", &[], false)]
    fn image_bundles_without_inline_content_are_unpacked(
        #[case] path: &str,
        #[case] objects: &[&str],
        #[case] unpack: bool,
    ) {
        let b = api::Bundle {
            bundle_path: path.into(),
            object: objects.iter().map(|o| o.to_string()).collect(),
            ..Default::default()
        };
        assert_eq!(needs_unpack(&b), unpack);
    }

    #[test]
    fn a_failed_unpack_reads_as_olm_says_it() {
        let (d, retry) = decided(&NotYet::Failed {
            reason: "ImageNotFound".into(),
            message: "image r/a@sha256:1 not found in its registry".into(),
            retry_in: Duration::from_secs(10),
        });
        assert_eq!(retry, Duration::from_secs(10));
        assert_eq!(
            d,
            crate::status::Decided::UnpackFailed {
                message: "Bundle unpacking failed - ImageNotFound: image r/a@sha256:1 not found in its registry. Retrying in 10 s.".into()
            }
        );
    }
}
