//! Pulls from a hostile registry: a small HTTP server written here that answers the distribution API with a
//! manifest whose sizes lie, a blob that never ends, too many layers, layers that add up past the limit, a
//! manifest larger than the limit, and a manifest that never ends. Every pull ends with a `TooLarge` naming what,
//! promptly, with memory bounded by what the manifest declared or the manifest limit (`oci::capped`,
//! `oci::limits`, manifests read as they arrive). No API server, no real registry.

use oci::{Auth, Limits, PullError};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

fn digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// How the layer blob is served.
#[derive(Clone, Copy)]
enum Blob {
    /// Ten MiB behind a Content-Length, where the manifest declares 100 bytes.
    Lying,
    /// Chunks forever.
    Endless,
}

#[derive(Clone)]
struct Hostile {
    manifest: Vec<u8>,
    config: Vec<u8>,
    config_digest: String,
    blob: Blob,
    /// The manifest is sent in chunks forever, with no length and no digest header.
    endless_manifest: bool,
}

/// The bytes of each chunk of an endless body.
const CHUNK: usize = 64 << 10;

impl Hostile {
    /// A manifest with `layers` layers of `size` declared bytes each, padded to at least `pad` bytes.
    fn new(layers: usize, size: u64, pad: usize, blob: Blob) -> Self {
        let config = br#"{"architecture":"amd64","os":"linux","config":{}}"#.to_vec();
        let config_digest = digest(&config);
        let layer_list: Vec<serde_json::Value> = (0..layers)
            .map(|i| {
                serde_json::json!({"mediaType": LAYER, "size": size,
                    "digest": format!("sha256:{i:064x}")})
            })
            .collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": config.len(), "digest": config_digest},
            "layers": layer_list,
            "annotations": {"padding": "x".repeat(pad)},
        });
        Hostile {
            manifest: manifest.to_string().into_bytes(),
            config,
            config_digest,
            blob,
            endless_manifest: false,
        }
    }

    fn endless_manifest(mut self) -> Self {
        self.endless_manifest = true;
        self
    }

    /// A chunked body of `fill` bytes sent until the client hangs up (the headers alone to a HEAD).
    async fn endless(conn: &mut TcpStream, kind: &str, fill: u8, head: bool) {
        let headers = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        if conn.write_all(headers.as_bytes()).await.is_err() || head {
            return;
        }
        let chunk = vec![fill; CHUNK];
        let size = format!("{:x}\r\n", chunk.len());
        loop {
            if conn.write_all(size.as_bytes()).await.is_err()
                || conn.write_all(&chunk).await.is_err()
                || conn.write_all(b"\r\n").await.is_err()
            {
                return;
            }
        }
    }

    async fn serve(self) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(self.clone().answer(conn));
            }
        });
        addr
    }

    async fn answer(self, mut conn: TcpStream) {
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&request);
        let mut first = text.lines().next().unwrap_or_default().split(' ');
        let (method, path) = (
            first.next().unwrap_or_default(),
            first.next().unwrap_or_default(),
        );
        let head = method == "HEAD";
        let ok = |kind: &str, body: &[u8], digest: &str| {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nDocker-Content-Digest: {digest}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            if !head {
                r.extend_from_slice(body);
            }
            r
        };
        let response = if path == "/v2/" {
            ok("application/json", b"{}", "")
        } else if path.contains("/manifests/") && self.endless_manifest {
            return Self::endless(&mut conn, OCI_MANIFEST, b' ', head).await;
        } else if path.contains("/manifests/") {
            ok(OCI_MANIFEST, &self.manifest, &digest(&self.manifest))
        } else if path.ends_with(&self.config_digest) {
            ok(
                "application/octet-stream",
                &self.config,
                &self.config_digest,
            )
        } else if path.contains("/blobs/") {
            match self.blob {
                Blob::Lying => ok("application/octet-stream", &vec![0u8; 10 << 20], ""),
                Blob::Endless => {
                    return Self::endless(&mut conn, "application/octet-stream", 0, head).await;
                }
            }
        } else {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
        };
        let _ = conn.write_all(&response).await;
    }
}

/// Pulls `hostile` as a bundle image; the error, and how long it took.
async fn pull(hostile: Hostile) -> (PullError, Duration) {
    let addr = hostile.serve().await;
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        oci::Registry::default().pull(
            &format!("{addr}/hostile/bundle:v1"),
            &Auth::Anonymous,
            &Limits::BUNDLE,
        ),
    )
    .await
    .expect("the pull ends by itself");
    match result {
        Err(e) => (e, started.elapsed()),
        Ok(_) => panic!("a hostile image was pulled"),
    }
}

fn too_large(e: &PullError) -> (String, u64, u64) {
    match e {
        PullError::TooLarge {
            what, size, limit, ..
        } => (what.clone(), *size, *limit),
        other => panic!("expected TooLarge, got {other}"),
    }
}

#[tokio::test]
async fn a_blob_larger_than_declared_is_cut_off_at_its_declared_size() {
    let (e, took) = pull(Hostile::new(1, 100, 0, Blob::Lying)).await;
    let (what, _, limit) = too_large(&e);
    assert!(what.contains("sent more than the manifest declares"), "{e}");
    assert_eq!(limit, 100);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn an_endless_blob_is_cut_off_at_its_declared_size() {
    let (e, took) = pull(Hostile::new(1, 1000, 0, Blob::Endless)).await;
    let (what, _, limit) = too_large(&e);
    assert!(what.contains("sent more than the manifest declares"), "{e}");
    assert_eq!(limit, 1000);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn too_many_layers_are_refused_before_any_download() {
    let (e, _) = pull(Hostile::new(
        Limits::BUNDLE.layers + 1,
        10,
        0,
        Blob::Endless,
    ))
    .await;
    assert_eq!(
        too_large(&e),
        (
            "layer count".to_string(),
            Limits::BUNDLE.layers as u64 + 1,
            Limits::BUNDLE.layers as u64
        )
    );
}

#[tokio::test]
async fn layers_adding_up_past_the_limit_are_refused_before_any_download() {
    let each = Limits::BUNDLE.image_bytes / 4 + 1;
    let (e, _) = pull(Hostile::new(4, each, 0, Blob::Endless)).await;
    assert_eq!(
        too_large(&e),
        (
            "layers together".to_string(),
            each * 4,
            Limits::BUNDLE.image_bytes
        )
    );
}

#[tokio::test]
async fn a_manifest_past_its_limit_is_refused() {
    let (e, _) = pull(Hostile::new(
        1,
        10,
        Limits::BUNDLE.manifest_bytes + 1,
        Blob::Endless,
    ))
    .await;
    let (what, size, _) = too_large(&e);
    assert_eq!(what, "manifest");
    assert!(size > Limits::BUNDLE.manifest_bytes as u64);
}

#[tokio::test]
async fn an_endless_manifest_is_cut_off_as_it_passes_the_manifest_limit() {
    let (e, took) = pull(Hostile::new(1, 10, 0, Blob::Endless).endless_manifest()).await;
    let (what, size, limit) = too_large(&e);
    assert!(
        what.starts_with("manifest") && what.contains("cut off"),
        "{e}"
    );
    assert_eq!(limit, Limits::BUNDLE.manifest_bytes as u64);
    assert!(
        size > limit && size <= limit + CHUNK as u64,
        "refused within one chunk past the limit, not read whole: {size}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn resolving_a_tag_whose_manifest_never_ends_is_refused() {
    // No digest header to the HEAD: the digest is taken from a GET of the manifest, capped the same.
    let addr = Hostile::new(1, 10, 0, Blob::Endless)
        .endless_manifest()
        .serve()
        .await;
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        oci::Registry::default().resolve(&format!("{addr}/hostile/bundle:v1"), &Auth::Anonymous),
    )
    .await
    .expect("the resolve ends by itself");
    let e = result.expect_err("an endless manifest has no digest");
    let (what, _, limit) = too_large(&e);
    assert!(what.contains("cut off"), "{e}");
    assert_eq!(limit, Limits::BUNDLE.manifest_bytes as u64);
    assert!(started.elapsed() < Duration::from_secs(10));
}
