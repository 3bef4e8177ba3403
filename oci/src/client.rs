//! The registry client: resolve a tag's digest, pull an image (manifest, config labels, layers) with every
//! byte checked against its digest and every size against [`Limits`] (manifests as they arrive,
//! [`crate::manifest_read`]; blobs likewise, [`crate::capped`]), and push images we build. A thin layer over
//! `oci-client` that turns its errors into [`PullError`]s and counts the requests it makes.

use crate::digest::sha256_digest;
use crate::error::{PullError, map_error};
use crate::limits::Limits;
use crate::manifest::Pulled;
use crate::manifest_read::ManifestReader;
use crate::mirrors::{Candidate, RegistriesConf};
use crate::platform::Platform;
use oci_client::client::{
    Certificate, CertificateEncoding, ClientConfig, ClientProtocol, Config, ImageLayer,
};
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_DOCKER_CONFIG_MEDIA_TYPE, IMAGE_MANIFEST_LIST_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageManifest,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Credentials for one registry, or for several by host (a pull may go to mirrors on other hosts).
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Auth {
    #[default]
    Anonymous,
    Basic {
        username: String,
        password: String,
    },
    /// (username, password) by registry host (`quay.io`, `127.0.0.1:5000`; Docker Hub as `docker.io`).
    Keyring(Arc<BTreeMap<String, (String, String)>>),
}

const DOCKER_HUB: &[&str] = &["docker.io", "index.docker.io", "registry-1.docker.io"];

impl Auth {
    /// The credentials for `host`: a keyring's entry for it (anonymous without one), anything else as it is.
    pub fn for_registry(&self, host: &str) -> Auth {
        let Auth::Keyring(keys) = self else {
            return self.clone();
        };
        let hub = DOCKER_HUB.contains(&host);
        keys.iter()
            .find(|(k, _)| k.as_str() == host || (hub && DOCKER_HUB.contains(&k.as_str())))
            .map_or(Auth::Anonymous, |(_, (u, p))| Auth::Basic {
                username: u.clone(),
                password: p.clone(),
            })
    }
}

/// The key of the `oci-client` client for `registry` with `auth`: the host and a SHA-256 of the credentials
/// (never the password itself).
fn client_key(registry: &str, auth: &Auth) -> String {
    match auth {
        Auth::Anonymous | Auth::Keyring(_) => registry.to_string(),
        Auth::Basic { username, password } => {
            let mut h = Sha256::new();
            h.update(username.as_bytes());
            h.update([0]);
            h.update(password.as_bytes());
            format!("{registry} {:x}", h.finalize())
        }
    }
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Anonymous => write!(f, "Anonymous"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Auth::Keyring(keys) => write!(f, "Keyring({:?})", keys.keys().collect::<Vec<_>>()),
        }
    }
}

impl Auth {
    pub(crate) fn oci(&self) -> RegistryAuth {
        match self {
            Auth::Anonymous | Auth::Keyring(_) => RegistryAuth::Anonymous,
            Auth::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

/// A pulled image.
#[derive(Debug, Clone)]
pub struct Image {
    /// The manifest's digest (`sha256:…`), checked against the reference when it names one.
    pub digest: String,
    /// The config's `config.Labels`.
    pub labels: BTreeMap<String, String>,
    /// Each layer's media type and (compressed) bytes, digest-checked.
    pub layers: Vec<(String, Vec<u8>)>,
}

const MANIFEST_TYPES: &[&str] = &[
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

/// Whether `registry` (host[:port]) is spoken to over plain HTTP: loopback registries and the ones listed.
fn plain_http(registry: &str, insecure: &[String]) -> bool {
    let host = registry.rsplit_once(':').map_or(registry, |(h, _)| h);
    host == "localhost"
        || host.starts_with("127.")
        || host == "[::1]"
        || insecure.iter().any(|r| r == registry)
}

/// The clients of one registry host and credentials: oci-client's, and the reader of its manifests.
pub(crate) struct Remote {
    pub oci: Client,
    pub manifests: ManifestReader,
}

impl std::ops::Deref for Remote {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.oci
    }
}

/// A registry client; clone it freely (one `oci-client` client, with its connection pool and tokens, per
/// registry host and credentials: an `oci-client` client keeps the first credentials it was given for a host,
/// so sharing one across pull secrets would pull one catalog's images with another catalog's credentials, or
/// anonymously after an anonymous pull).
#[derive(Clone, Default)]
pub struct Registry {
    clients: Arc<Mutex<HashMap<String, Arc<Remote>>>>,
    insecure: Arc<Vec<String>>,
    requests: Arc<AtomicU64>,
    /// The platform an image index resolves to; `None`: this process's ([`Platform::current`]).
    platform: Option<Arc<Platform>>,
    /// Mirrors to pull from first (`--registries-conf`).
    mirrors: Option<Arc<RegistriesConf>>,
    /// Extra certificate authorities trusted for HTTPS registries (PEM, one certificate each).
    ca: Arc<Vec<Vec<u8>>>,
}

impl Registry {
    /// A client that speaks HTTPS except to loopback registries and the `insecure` ones (host:port).
    pub fn new(insecure: &[String]) -> Self {
        Self {
            insecure: Arc::new(insecure.to_vec()),
            ..Default::default()
        }
    }

    /// The client with image indexes resolved to `platform` instead of this process's own.
    pub fn with_platform(mut self, platform: Platform) -> Self {
        self.platform = Some(Arc::new(platform));
        self
    }

    /// The client with `conf`'s mirrors tried before each image's own registry.
    pub fn with_mirrors(mut self, conf: RegistriesConf) -> Self {
        self.mirrors = Some(Arc::new(conf));
        self
    }

    /// The client trusting the certificate authorities of the PEM bundle `pem` too, besides the system's.
    pub fn with_ca_bundle(mut self, pem: &str) -> Result<Self, String> {
        let certs = pem_certificates(pem);
        if certs.is_empty() {
            return Err("the CA bundle holds no PEM certificate".into());
        }
        self.ca = Arc::new(certs);
        Ok(self)
    }

    /// Where to pull `reference` from: the mirrors first, then its own registry (just that without mirrors).
    fn candidates(&self, reference: &str) -> Result<Vec<Candidate>, PullError> {
        match &self.mirrors {
            None => Ok(vec![Candidate {
                reference: reference.to_string(),
                insecure: false,
                mirror: false,
            }]),
            Some(conf) => conf
                .candidates(reference)
                .map_err(|message| PullError::Registry {
                    reference: reference.to_string(),
                    message,
                }),
        }
    }

    fn platform(&self) -> Platform {
        self.platform
            .as_deref()
            .cloned()
            .unwrap_or_else(Platform::current)
    }

    /// HTTP requests this client has sent to registries (manifests and blobs; auth handshakes not counted).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn count(&self, n: u64) {
        self.requests.fetch_add(n, Ordering::Relaxed);
    }

    /// Parses `reference` (`host[:port]/repo[:tag][@digest]`).
    pub fn reference(reference: &str) -> Result<Reference, PullError> {
        reference
            .parse::<Reference>()
            .map_err(|e| PullError::BadReference {
                reference: reference.to_string(),
                message: e.to_string(),
            })
    }

    /// The client for `r`'s registry with `auth`, built on first use. Building fails (instead of panicking,
    /// as `oci_client::Client::new`'s fallback does) when, e.g., the system has no CA certificates.
    pub(crate) fn client_for(
        &self,
        reference: &str,
        r: &Reference,
        auth: &Auth,
    ) -> Result<Arc<Remote>, PullError> {
        self.client_with(reference, r, auth, false)
    }

    /// [`Registry::client_for`], over plain HTTP when `plain` (an `insecure` mirror).
    fn client_with(
        &self,
        reference: &str,
        r: &Reference,
        auth: &Auth,
        plain: bool,
    ) -> Result<Arc<Remote>, PullError> {
        let registry = r.resolve_registry().to_string();
        let auth = &auth.for_registry(&registry);
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let key = format!(
            "{}{}",
            client_key(&registry, auth),
            if plain { " http" } else { "" }
        );
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        // reqwest's rustls needs a process-wide provider; kube uses ring too. A second install is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let plain = plain || plain_http(&registry, &self.insecure);
        let protocol = if plain {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let client = Client::try_from(ClientConfig {
            protocol,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            extra_root_certificates: self
                .ca
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            ..Default::default()
        })
        .map_err(|e| PullError::ClientSetup {
            reference: reference.to_string(),
            message: e.to_string(),
        })?;
        let manifests =
            ManifestReader::new(plain, &self.ca, self.requests.clone()).map_err(|message| {
                PullError::ClientSetup {
                    reference: reference.to_string(),
                    message,
                }
            })?;
        let client = Arc::new(Remote {
            oci: client,
            manifests,
        });
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// The digest a tag points at now (one HEAD request).
    pub async fn resolve(&self, reference: &str, auth: &Auth) -> Result<String, PullError> {
        let mut last = None;
        for c in self.candidates(reference)? {
            match self.resolve_at(&c, auth).await {
                Ok(digest) => return Ok(digest),
                Err(e) => last = Some(self.fell_through(reference, &c, e)),
            }
        }
        Err(last.unwrap_or_else(|| PullError::NotFound {
            reference: reference.to_string(),
        }))
    }

    async fn resolve_at(&self, c: &Candidate, auth: &Auth) -> Result<String, PullError> {
        let reference = c.reference.as_str();
        let r = Self::reference(reference)?;
        let client = self.client_with(reference, &r, auth, c.insecure)?;
        let auth = auth.for_registry(r.resolve_registry());
        client
            .manifests
            .digest(
                &client.oci,
                reference,
                &r,
                &auth.oci(),
                MANIFEST_TYPES,
                Limits::BUNDLE.manifest_bytes,
            )
            .await
    }

    /// A candidate's failure, logged when a mirror failed (the next candidate is tried).
    fn fell_through(&self, reference: &str, c: &Candidate, e: PullError) -> PullError {
        if c.mirror {
            tracing::info!(image = reference, mirror = %c.reference, error = %e, "mirror failed; trying the next place");
        }
        e
    }

    async fn manifest(
        &self,
        client: &Remote,
        reference: &str,
        r: &Reference,
        auth: &RegistryAuth,
        limits: &Limits,
    ) -> Result<(OciImageManifest, String), PullError> {
        let fetched = client
            .manifests
            .get(
                &client.oci,
                reference,
                r,
                auth,
                MANIFEST_TYPES,
                limits.manifest_bytes,
            )
            .await?;
        match crate::manifest::read(reference, &fetched.body, &self.platform())? {
            Pulled::Image(manifest) => Ok((*manifest, fetched.digest)),
            Pulled::Index { chosen } => {
                let pinned = Reference::with_digest(
                    r.registry().to_string(),
                    r.repository().to_string(),
                    chosen,
                );
                let chosen = client
                    .manifests
                    .get(
                        &client.oci,
                        reference,
                        &pinned,
                        auth,
                        &[OCI_IMAGE_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE],
                        limits.manifest_bytes,
                    )
                    .await?;
                Ok((
                    crate::manifest::image(reference, &chosen.body)?,
                    chosen.digest,
                ))
            }
        }
    }

    /// Pulls `reference`: the manifest (an index resolves to the client's platform), the config's labels, every layer.
    /// With mirrors, each place in turn until one serves it (digests checked against the reference whatever
    /// answers); a content error (too large, wrong media type) ends the pull at once.
    pub async fn pull(
        &self,
        reference: &str,
        auth: &Auth,
        limits: &Limits,
    ) -> Result<Image, PullError> {
        let candidates = self.candidates(reference)?;
        let mut last = None;
        for c in &candidates {
            match self.pull_at(c, auth, limits).await {
                Ok(image) => return Ok(image),
                Err(e) if e.transient() => last = Some(self.fell_through(reference, c, e)),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| PullError::NotFound {
            reference: reference.to_string(),
        }))
    }

    async fn pull_at(
        &self,
        c: &Candidate,
        auth: &Auth,
        limits: &Limits,
    ) -> Result<Image, PullError> {
        let reference = c.reference.as_str();
        let r = Self::reference(reference)?;
        let remote = self.client_with(reference, &r, auth, c.insecure)?;
        let client = &remote.oci;
        let auth = auth.for_registry(r.resolve_registry()).oci();
        let (manifest, digest) = self.manifest(&remote, reference, &r, &auth, limits).await?;
        let config_type = manifest.config.media_type.as_str();
        if config_type != IMAGE_CONFIG_MEDIA_TYPE && config_type != IMAGE_DOCKER_CONFIG_MEDIA_TYPE {
            return Err(PullError::WrongMediaType {
                reference: reference.to_string(),
                media_type: config_type.to_string(),
            });
        }
        let config = self
            .blob(
                client,
                reference,
                &r,
                &manifest.config,
                limits.manifest_bytes as u64,
            )
            .await?;
        let labels = crate::manifest::labels(reference, &config)?;
        if manifest.layers.len() > limits.layers {
            return Err(PullError::TooLarge {
                reference: reference.to_string(),
                what: "layer count".into(),
                size: manifest.layers.len() as u64,
                limit: limits.layers as u64,
            });
        }
        let declared: u64 = manifest
            .layers
            .iter()
            .map(|l| u64::try_from(l.size).unwrap_or(u64::MAX))
            .fold(0, u64::saturating_add);
        if declared > limits.image_bytes {
            return Err(PullError::TooLarge {
                reference: reference.to_string(),
                what: "layers together".into(),
                size: declared,
                limit: limits.image_bytes,
            });
        }
        let mut layers = Vec::with_capacity(manifest.layers.len());
        for l in &manifest.layers {
            let bytes = self
                .blob(client, reference, &r, l, limits.layer_bytes)
                .await?;
            layers.push((l.media_type.clone(), bytes));
        }
        Ok(Image {
            digest,
            labels,
            layers,
        })
    }

    async fn blob(
        &self,
        client: &Client,
        reference: &str,
        r: &Reference,
        d: &OciDescriptor,
        limit: u64,
    ) -> Result<Vec<u8>, PullError> {
        let size = u64::try_from(d.size).unwrap_or(u64::MAX);
        if size > limit {
            return Err(PullError::TooLarge {
                reference: reference.to_string(),
                what: format!("blob {}", d.digest),
                size,
                limit,
            });
        }
        let declared = usize::try_from(size).unwrap_or(usize::MAX);
        let mut out = Vec::with_capacity(declared.min(64 << 20));
        self.count(1);
        let mut sink = crate::capped::Capped::new(&mut out, declared);
        let pulled = client.pull_blob(r, d, &mut sink).await;
        if sink.over {
            return Err(PullError::TooLarge {
                reference: reference.to_string(),
                what: format!(
                    "blob {} (the registry sent more than the manifest declares)",
                    d.digest
                ),
                size: size.saturating_add(1),
                limit: size,
            });
        }
        pulled.map_err(|e| map_error(reference, e))?;
        if out.len() as u64 != size {
            return Err(PullError::DigestMismatch {
                reference: reference.to_string(),
                expected: format!("{} ({size} bytes)", d.digest),
                actual: format!("{} bytes", out.len()),
            });
        }
        Ok(out)
    }

    /// Pushes an image of `layers` (media type, bytes) with an OCI config of `labels`; returns the digest of
    /// the manifest as pushed, so callers can refer to it as `repo@digest`.
    pub async fn push(
        &self,
        reference: &str,
        auth: &Auth,
        layers: Vec<(String, Vec<u8>)>,
        labels: &BTreeMap<String, String>,
    ) -> Result<String, PullError> {
        let config = crate::build::image_config(labels, &layers);
        self.push_with_config(reference, auth, layers, config, IMAGE_CONFIG_MEDIA_TYPE)
            .await
    }

    /// As [`Registry::push`] with a config blob of any media type (tests push non-images with it).
    pub async fn push_with_config(
        &self,
        reference: &str,
        auth: &Auth,
        layers: Vec<(String, Vec<u8>)>,
        config: Vec<u8>,
        config_media_type: &str,
    ) -> Result<String, PullError> {
        let r = Self::reference(reference)?;
        let client = self.client_for(reference, &r, auth)?;
        let client = client.as_ref();
        let auth = auth.oci();
        let (layers, config, manifest) = assemble(layers, config, config_media_type);
        let body = serde_json::to_vec(&manifest).map_err(|e| PullError::Registry {
            reference: reference.to_string(),
            message: e.to_string(),
        })?;
        client
            .store_auth_if_needed(r.resolve_registry(), &auth)
            .await;
        for (layer, d) in layers.iter().zip(&manifest.layers) {
            client
                .push_blob(&r, layer.data.clone(), &d.digest)
                .await
                .map_err(|e| map_error(reference, e))?;
        }
        client
            .push_blob(&r, config.data.clone(), &manifest.config.digest)
            .await
            .map_err(|e| map_error(reference, e))?;
        let digest = sha256_digest(&body);
        client
            .push_manifest_raw(
                &r,
                body,
                http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
            )
            .await
            .map_err(|e| map_error(reference, e))?;
        Ok(digest)
    }
}

impl Registry {
    /// Pushes an image as built elsewhere: its blobs (config and layers, by digest) and its manifest bytes
    /// unchanged (so the image keeps its digest); returns that digest.
    pub async fn push_manifest_and_blobs(
        &self,
        reference: &str,
        auth: &Auth,
        blobs: Vec<(String, Vec<u8>)>,
        manifest: Vec<u8>,
        manifest_media_type: &str,
    ) -> Result<String, PullError> {
        let r = Self::reference(reference)?;
        let client = self.client_for(reference, &r, auth)?;
        let client = client.as_ref();
        client
            .store_auth_if_needed(r.resolve_registry(), &auth.oci())
            .await;
        for (digest, data) in blobs {
            client
                .push_blob(&r, data, &digest)
                .await
                .map_err(|e| map_error(reference, e))?;
        }
        let media_type =
            http::HeaderValue::from_str(manifest_media_type).map_err(|e| PullError::Registry {
                reference: reference.to_string(),
                message: format!("manifest media type {manifest_media_type}: {e}"),
            })?;
        let digest = sha256_digest(&manifest);
        client
            .push_manifest_raw(&r, manifest, media_type)
            .await
            .map_err(|e| map_error(reference, e))?;
        Ok(digest)
    }
}

fn assemble(
    layers: Vec<(String, Vec<u8>)>,
    config: Vec<u8>,
    config_media_type: &str,
) -> (Vec<ImageLayer>, Config, OciImageManifest) {
    let layers: Vec<ImageLayer> = layers
        .into_iter()
        .map(|(media_type, data)| ImageLayer::new(data, media_type, None))
        .collect();
    let config = Config::new(config, config_media_type.to_string(), None);
    let mut manifest = OciImageManifest::build(&layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
    (layers, config, manifest)
}

/// The digest [`Registry::push`] will give an image of `layers` and `labels`, computed without a registry (so a
/// catalog can reference an image by digest before it is pushed).
pub fn digest_of(layers: Vec<(String, Vec<u8>)>, labels: &BTreeMap<String, String>) -> String {
    let config = crate::build::image_config(labels, &layers);
    let (_, _, manifest) = assemble(layers, config, IMAGE_CONFIG_MEDIA_TYPE);
    sha256_digest(&serde_json::to_vec(&manifest).unwrap_or_default())
}

/// The certificates of a PEM bundle, each as its own PEM block.
fn pem_certificates(pem: &str) -> Vec<Vec<u8>> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find(BEGIN) {
        let Some(len) = rest[start..].find(END) else {
            break;
        };
        let end = start + len + END.len();
        out.push(format!("{}\n", &rest[start..end]).into_bytes());
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn basic(user: &str, password: &str) -> Auth {
        Auth::Basic {
            username: user.into(),
            password: password.into(),
        }
    }

    #[rstest]
    #[case::anonymous_twice_share(Auth::Anonymous, Auth::Anonymous, true)]
    #[case::anonymous_and_credentials_do_not(Auth::Anonymous, basic("u", "p"), false)]
    #[case::the_same_credentials_share(basic("u", "p"), basic("u", "p"), true)]
    #[case::another_password_does_not(basic("u", "p"), basic("u", "q"), false)]
    #[case::another_user_does_not(basic("u", "p"), basic("v", "p"), false)]
    #[case::the_separator_is_not_ambiguous(basic("ab", "c"), basic("a", "bc"), false)]
    fn a_client_is_shared_only_by_the_same_credentials(
        #[case] a: Auth,
        #[case] b: Auth,
        #[case] shared: bool,
    ) {
        assert_eq!(client_key("r:1", &a) == client_key("r:1", &b), shared);
        assert!(!client_key("r:1", &basic("u", "s3cret")).contains("s3cret"));
    }

    #[rstest]
    #[case::loopback("127.0.0.1:25000", true)]
    #[case::localhost("localhost:5000", true)]
    #[case::remote("quay.io", false)]
    fn loopback_registries_are_plain_http(#[case] registry: &str, #[case] plain: bool) {
        assert_eq!(plain_http(registry, &[]), plain);
    }

    #[test]
    fn digests_are_sha256_hex() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
