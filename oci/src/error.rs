//! Why a pull or an unpack failed, with a short reason (for conditions) and whether retrying may help; oci-client's
//! errors read as ours ([`map_error`]).

use oci_client::errors::{OciDistributionError, OciErrorCode};

/// Everything that can go wrong between an image reference and its unpacked content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PullError {
    #[error("invalid image reference {reference:?}: {message}")]
    BadReference { reference: String, message: String },
    #[error("image {reference} not found in its registry")]
    NotFound { reference: String },
    #[error("registry of {reference} unreachable: {message}")]
    Unreachable { reference: String, message: String },
    #[error(
        "registry refused access to {reference}: {message} (check the CatalogSource's spec.secrets)"
    )]
    Unauthorized { reference: String, message: String },
    #[error("registry error for {reference}: {message}")]
    Registry { reference: String, message: String },
    #[error(
        "image {reference} has media type {media_type:?}; expected an OCI or Docker v2 image manifest"
    )]
    WrongMediaType {
        reference: String,
        media_type: String,
    },
    #[error("image {reference}: digest mismatch (expected {expected}, got {actual})")]
    DigestMismatch {
        reference: String,
        expected: String,
        actual: String,
    },
    #[error("image {reference}: {what} is {size} bytes, over the limit of {limit}")]
    TooLarge {
        reference: String,
        what: String,
        size: u64,
        limit: u64,
    },
    #[error("image {reference}: cannot unpack layer {layer}: {message}")]
    BadLayer {
        reference: String,
        layer: String,
        message: String,
    },
    #[error("image {reference} is not a bundle: {message}")]
    NotABundle { reference: String, message: String },
    #[error("bundle image {reference} has no ClusterServiceVersion in /manifests")]
    NoCsv { reference: String },
    #[error("bundle image {reference}: invalid manifest {file}: {message}")]
    InvalidManifest {
        reference: String,
        file: String,
        message: String,
    },
    #[error("image {reference} is not a catalog: {message}")]
    NotACatalog { reference: String, message: String },
    #[error("pulling {reference} did not finish within {seconds} s")]
    Timeout { reference: String, seconds: u64 },
    /// The HTTP client for the registry could not be built, e.g. no CA certificates in the system's trust
    /// store (`/etc/ssl/certs/ca-certificates.crt` missing from the image) for an HTTPS registry.
    #[error("cannot set up a registry client for {reference}: {message}")]
    ClientSetup { reference: String, message: String },
    #[error(
        "image {reference} is an index with no manifest for {wanted} (it has: {})",
        if available.is_empty() { "no platforms".to_string() } else { available.join(", ") }
    )]
    NoMatchingPlatform {
        reference: String,
        wanted: String,
        available: Vec<String>,
    },
}

impl PullError {
    /// A one-word reason for status conditions.
    pub fn reason(&self) -> &'static str {
        match self {
            PullError::BadReference { .. } => "InvalidImageReference",
            PullError::NotFound { .. } => "ImageNotFound",
            PullError::Unreachable { .. } => "RegistryUnreachable",
            PullError::Unauthorized { .. } => "Unauthorized",
            PullError::Registry { .. } => "RegistryError",
            PullError::WrongMediaType { .. } => "WrongMediaType",
            PullError::DigestMismatch { .. } => "DigestMismatch",
            PullError::TooLarge { .. } => "TooLarge",
            PullError::BadLayer { .. } => "InvalidLayer",
            PullError::NotABundle { .. } => "NotABundle",
            PullError::NoCsv { .. } => "NoClusterServiceVersion",
            PullError::InvalidManifest { .. } => "InvalidManifest",
            PullError::NotACatalog { .. } => "NotACatalog",
            PullError::Timeout { .. } => "DeadlineExceeded",
            PullError::ClientSetup { .. } => "RegistryClientError",
            PullError::NoMatchingPlatform { .. } => "NoMatchingPlatform",
        }
    }

    /// Whether the same pull may succeed later without anyone changing the image (network, registry state).
    /// Content errors are not transient, but callers still retry them with a long backoff: a tag can be
    /// re-pushed.
    pub fn transient(&self) -> bool {
        matches!(
            self,
            PullError::Unreachable { .. }
                | PullError::Registry { .. }
                | PullError::Timeout { .. }
                | PullError::NotFound { .. }
                | PullError::Unauthorized { .. }
        )
    }
}

/// oci-client's error → ours.
pub fn map_error(reference: &str, e: OciDistributionError) -> PullError {
    let reference = reference.to_string();
    match e {
        OciDistributionError::RegistryError { envelope, .. } => {
            let not_found = envelope.errors.iter().any(|x| {
                matches!(
                    x.code,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NotFound
                )
            });
            let denied = envelope
                .errors
                .iter()
                .any(|x| matches!(x.code, OciErrorCode::Denied | OciErrorCode::Unauthorized));
            let message = envelope
                .errors
                .iter()
                .map(|x| x.message.clone())
                .collect::<Vec<_>>()
                .join("; ");
            if not_found {
                PullError::NotFound { reference }
            } else if denied {
                PullError::Unauthorized { reference, message }
            } else {
                PullError::Registry { reference, message }
            }
        }
        OciDistributionError::ServerError { code: 404, .. }
        | OciDistributionError::ImageManifestNotFoundError(_) => PullError::NotFound { reference },
        OciDistributionError::UnauthorizedError { url } => PullError::Unauthorized {
            reference,
            message: format!("401 from {url}"),
        },
        OciDistributionError::AuthenticationFailure(message) => {
            PullError::Unauthorized { reference, message }
        }
        OciDistributionError::DigestError(d) => PullError::DigestMismatch {
            reference,
            expected: String::new(),
            actual: d.to_string(),
        },
        OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => {
            PullError::Unreachable {
                reference,
                message: error_chain(&e),
            }
        }
        OciDistributionError::UnsupportedMediaTypeError(media_type)
        | OciDistributionError::IncompatibleLayerMediaTypeError(media_type) => {
            PullError::WrongMediaType {
                reference,
                media_type,
            }
        }
        other => PullError::Registry {
            reference,
            message: error_chain(&other),
        },
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}
