//! Manifests and indexes read from a registry as a stream under a hard cap checked as the bytes arrive
//! ([`Limits::manifest_bytes`](crate::Limits)): a response declaring more is refused before its body is read, one
//! sent without a length (chunked, endless) is cut off at the first byte past the cap. Either way a clear
//! `TooLarge`, never a body grown without bound (oci-client reads a manifest response whole before anyone can
//! check its size). The digest is checked as oci-client does: against the reference's digest and the
//! registry's `Docker-Content-Digest`.
//!
//! The request is ours (reqwest, set up as the oci-client client of the same registry: scheme, extra CAs,
//! timeouts); authentication is oci-client's. A request goes out with the credential last negotiated for the
//! repository (none at first); on a 401, oci-client negotiates (the bearer token of the registry's challenge,
//! or the basic credentials it falls back to) and the request is sent once more.

use crate::error::PullError;
use oci_client::Client;
use oci_client::Reference;
use oci_client::RegistryOperation;
use oci_client::errors::{OciDistributionError, OciEnvelope};
use oci_client::secrets::RegistryAuth;
use sha2::Digest as _;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What is read of an error response (the registry's error envelope).
const ERROR_BODY_BYTES: usize = 64 << 10;

/// How a request proves who asks.
#[derive(Clone)]
enum Credential {
    Bearer(String),
    Basic(String, String),
}

/// Reads the manifests of one registry (per host and credentials, beside its oci-client client).
pub(crate) struct ManifestReader {
    http: reqwest::Client,
    scheme: &'static str,
    /// The credential negotiated per repository.
    credentials: Mutex<HashMap<String, Credential>>,
    /// The requests counter of the [`crate::Registry`].
    requests: Arc<AtomicU64>,
}

/// A manifest's bytes and its digest (the registry's canonical one when it sent one).
pub(crate) struct Fetched {
    pub body: Vec<u8>,
    pub digest: String,
}

/// Why a capped read stopped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The response declared this length, over the cap.
    Declared(u64),
    /// The body went past the cap as it arrived, after this many bytes.
    Sent(u64),
}

impl ManifestReader {
    /// A reader over plain HTTP when `plain`, else HTTPS trusting `ca` (PEM certificates) beside the system's.
    pub fn new(plain: bool, ca: &[Vec<u8>], requests: Arc<AtomicU64>) -> Result<Self, String> {
        let mut certs = Vec::with_capacity(ca.len());
        for pem in ca {
            certs.push(reqwest::Certificate::from_pem(pem).map_err(|e| e.to_string())?);
        }
        let http = reqwest::Client::builder()
            .tls_certs_merge(certs)
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .user_agent(concat!("olm-rs/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            http,
            scheme: if plain { "http" } else { "https" },
            credentials: Mutex::default(),
            requests,
        })
    }

    fn url(&self, r: &Reference) -> String {
        let registry = r.resolve_registry();
        let at = r.digest().or(r.tag()).unwrap_or("latest");
        let ns = r
            .namespace()
            .map(|ns| format!("?ns={ns}"))
            .unwrap_or_default();
        format!(
            "{}://{registry}/v2/{}/manifests/{at}{ns}",
            self.scheme,
            r.repository()
        )
    }

    /// GET the manifest `r` names (one of the `accept`ed media types), at most `cap` bytes, digest-checked.
    pub async fn get(
        &self,
        oci: &Client,
        reference: &str,
        r: &Reference,
        auth: &RegistryAuth,
        accept: &[&str],
        cap: usize,
    ) -> Result<Fetched, PullError> {
        let mut response = self.send(oci, reference, r, auth, false, accept).await?;
        let status = response.status();
        let header = digest_header(&response);
        if status != reqwest::StatusCode::OK {
            let body = read_capped(&mut response, ERROR_BODY_BYTES)
                .await
                .unwrap_or_default();
            return Err(status_error(reference, status, &body, &self.url(r)));
        }
        let body = match read_capped(&mut response, cap).await {
            Ok(body) => body,
            Err(ReadError::Refused(refused)) => return Err(too_large(reference, refused, cap)),
            Err(ReadError::Transport(e)) => return Err(transport(reference, e)),
        };
        let digest = checked_digest(&body, header.as_deref(), r.digest()).map_err(
            |(expected, actual)| PullError::DigestMismatch {
                reference: reference.to_string(),
                expected,
                actual,
            },
        )?;
        Ok(Fetched { body, digest })
    }

    /// The digest of the manifest `r` names: the registry's `Docker-Content-Digest` to a HEAD, else the digest
    /// of a capped GET.
    pub async fn digest(
        &self,
        oci: &Client,
        reference: &str,
        r: &Reference,
        auth: &RegistryAuth,
        accept: &[&str],
        cap: usize,
    ) -> Result<String, PullError> {
        let response = self.send(oci, reference, r, auth, true, accept).await?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(status_error(reference, status, &[], &self.url(r)));
        }
        match (digest_header(&response), r.digest()) {
            (Some(header), Some(wanted)) if same_algorithm(&header, wanted) && header != wanted => {
                Err(PullError::DigestMismatch {
                    reference: reference.to_string(),
                    expected: wanted.to_string(),
                    actual: header,
                })
            }
            (Some(header), _) => Ok(header),
            (None, _) => Ok(self.get(oci, reference, r, auth, accept, cap).await?.digest),
        }
    }

    /// Send the request with the repository's credential; on a 401, negotiate one through oci-client and
    /// send it once more.
    async fn send(
        &self,
        oci: &Client,
        reference: &str,
        r: &Reference,
        auth: &RegistryAuth,
        head: bool,
        accept: &[&str],
    ) -> Result<reqwest::Response, PullError> {
        // Blob pulls through oci-client find the credentials there.
        oci.store_auth_if_needed(r.resolve_registry(), auth).await;
        let repository = format!("{}/{}", r.resolve_registry(), r.repository());
        let known = self.lock().get(&repository).cloned();
        let response = self
            .request(r, head, accept, known.as_ref(), reference)
            .await?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let negotiated = match oci.auth(r, auth, RegistryOperation::Pull).await {
            Ok(Some(token)) => Credential::Bearer(token),
            Ok(None) => match auth {
                RegistryAuth::Basic(user, password) => {
                    Credential::Basic(user.clone(), password.clone())
                }
                RegistryAuth::Bearer(token) => Credential::Bearer(token.clone()),
                RegistryAuth::Anonymous => return Ok(response),
            },
            Err(e) => return Err(crate::error::map_error(reference, e)),
        };
        self.lock().insert(repository, negotiated.clone());
        self.request(r, head, accept, Some(&negotiated), reference)
            .await
    }

    async fn request(
        &self,
        r: &Reference,
        head: bool,
        accept: &[&str],
        credential: Option<&Credential>,
        reference: &str,
    ) -> Result<reqwest::Response, PullError> {
        let url = self.url(r);
        let builder = if head {
            self.http.head(&url)
        } else {
            self.http.get(&url)
        };
        let builder = builder.header(reqwest::header::ACCEPT, accept.join(", "));
        let builder = match credential {
            None => builder,
            Some(Credential::Bearer(token)) => builder.bearer_auth(token),
            Some(Credential::Basic(user, password)) => builder.basic_auth(user, Some(password)),
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        builder.send().await.map_err(|e| transport(reference, e))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Credential>> {
        self.credentials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

enum ReadError {
    Refused(Refused),
    Transport(reqwest::Error),
}

/// The body of `response`, refused when its declared length or the bytes that arrive pass `cap`.
async fn read_capped(response: &mut reqwest::Response, cap: usize) -> Result<Vec<u8>, ReadError> {
    let cap64 = cap as u64;
    if let Some(declared) = response.content_length().filter(|n| *n > cap64) {
        return Err(ReadError::Refused(Refused::Declared(declared)));
    }
    let mut body = Vec::with_capacity(
        response
            .content_length()
            .map_or(8 << 10, |n| n as usize)
            .min(cap),
    );
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Transport)? {
        accept_chunk(&mut body, &chunk, cap).map_err(ReadError::Refused)?;
    }
    Ok(body)
}

/// Append `chunk` to `body` unless that takes it past `cap` (pure: the cap as bytes arrive).
pub(crate) fn accept_chunk(body: &mut Vec<u8>, chunk: &[u8], cap: usize) -> Result<(), Refused> {
    let total = body.len().saturating_add(chunk.len());
    if total > cap {
        return Err(Refused::Sent(total as u64));
    }
    body.extend_from_slice(chunk);
    Ok(())
}

fn too_large(reference: &str, refused: Refused, cap: usize) -> PullError {
    let (what, size) = match refused {
        Refused::Declared(size) => ("manifest".to_string(), size),
        Refused::Sent(size) => (
            "manifest (sent without a length; cut off as it passed the limit)".to_string(),
            size,
        ),
    };
    PullError::TooLarge {
        reference: reference.to_string(),
        what,
        size,
        limit: cap as u64,
    }
}

fn transport(reference: &str, e: reqwest::Error) -> PullError {
    crate::error::map_error(reference, OciDistributionError::RequestError(e))
}

fn digest_header(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("Docker-Content-Digest")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// An unsuccessful status as oci-client reports it (so [`crate::error::map_error`] classifies it the same).
fn status_error(reference: &str, status: reqwest::StatusCode, body: &[u8], url: &str) -> PullError {
    let url = url.to_string();
    let e = if status == reqwest::StatusCode::UNAUTHORIZED {
        OciDistributionError::UnauthorizedError { url }
    } else if status.is_success() {
        OciDistributionError::SpecViolationError(format!(
            "Expected HTTP Status 200 OK, got {status} instead"
        ))
    } else {
        match serde_json::from_slice::<OciEnvelope>(body) {
            Ok(envelope) if status.is_client_error() => {
                OciDistributionError::RegistryError { envelope, url }
            }
            _ => OciDistributionError::ServerError {
                code: status.as_u16(),
                url,
                message: String::from_utf8_lossy(body).to_string(),
            },
        }
    };
    crate::error::map_error(reference, e)
}

fn same_algorithm(a: &str, b: &str) -> bool {
    a.split_once(':').map(|x| x.0) == b.split_once(':').map(|x| x.0)
}

/// `algorithm:hex` of `body` for the algorithm `like` names (sha256, sha384, sha512).
fn digest_like(body: &[u8], like: &str) -> Option<String> {
    let (algorithm, _) = like.split_once(':')?;
    let hex = match algorithm {
        "sha256" => hex(&sha2::Sha256::digest(body)),
        "sha384" => hex(&sha2::Sha384::digest(body)),
        "sha512" => hex(&sha2::Sha512::digest(body)),
        _ => return None,
    };
    Some(format!("{algorithm}:{hex}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of a manifest `body`: checked against the reference's digest and the registry's header when
/// there are ones (the header is the canonical digest), else its sha256. The error is (expected, actual).
pub(crate) fn checked_digest(
    body: &[u8],
    header: Option<&str>,
    wanted: Option<&str>,
) -> Result<String, (String, String)> {
    for expected in [wanted, header].into_iter().flatten() {
        match digest_like(body, expected) {
            Some(actual) if actual == expected => {}
            Some(actual) => return Err((expected.to_string(), actual)),
            None => {
                return Err((
                    expected.to_string(),
                    "a digest of an unsupported algorithm".to_string(),
                ));
            }
        }
    }
    Ok(header
        .or(wanted)
        .map_or_else(|| crate::digest::sha256_digest(body), str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::within_the_cap(b"abc".as_slice(), b"de".as_slice(), 5, Ok(()))]
    #[case::one_byte_past(b"abc".as_slice(), b"def".as_slice(), 5, Err(Refused::Sent(6)))]
    #[case::an_empty_chunk(b"abcde".as_slice(), b"".as_slice(), 5, Ok(()))]
    fn chunks_are_refused_as_they_pass_the_cap(
        #[case] before: &[u8],
        #[case] chunk: &[u8],
        #[case] cap: usize,
        #[case] want: Result<(), Refused>,
    ) {
        let mut body = before.to_vec();
        let got = accept_chunk(&mut body, chunk, cap);
        let kept = if got.is_ok() {
            before.len() + chunk.len()
        } else {
            before.len()
        };
        assert_eq!(got, want);
        assert_eq!(body.len(), kept, "a refused chunk is not kept");
    }

    const BODY: &[u8] = b"{\"schemaVersion\":2}";

    fn sha256(body: &[u8]) -> String {
        crate::digest::sha256_digest(body)
    }

    #[rstest]
    #[case::nothing_to_check(None, None, Ok(sha256(BODY)))]
    #[case::the_reference_digest_matches(None, Some(sha256(BODY)), Ok(sha256(BODY)))]
    #[case::the_header_is_the_canonical_digest(
        Some(digest_like(BODY, "sha512:").expect("sha512")),
        Some(sha256(BODY)),
        Ok(digest_like(BODY, "sha512:").expect("sha512"))
    )]
    #[case::a_reference_digest_of_other_bytes(
        None,
        Some(sha256(b"other")),
        Err((sha256(b"other"), sha256(BODY)))
    )]
    #[case::a_header_of_other_bytes(
        Some(sha256(b"other")),
        None,
        Err((sha256(b"other"), sha256(BODY)))
    )]
    #[case::an_unknown_algorithm(
        Some("md5:abc".to_string()),
        None,
        Err(("md5:abc".to_string(), "a digest of an unsupported algorithm".to_string()))
    )]
    fn a_manifest_digest_is_checked_against_what_names_it(
        #[case] header: Option<String>,
        #[case] wanted: Option<String>,
        #[case] want: Result<String, (String, String)>,
    ) {
        assert_eq!(
            checked_digest(BODY, header.as_deref(), wanted.as_deref()),
            want
        );
    }
}
