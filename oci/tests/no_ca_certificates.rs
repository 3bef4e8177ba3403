//! A machine (or a distroless image) with no CA certificates: pulling from an HTTPS registry is a clear
//! `RegistryClientError`, never a panic. `oci_client::Client::new` falls back to a default client when its
//! config fails, and that client's build panics ("No CA certificates were loaded from the system"), which killed
//! the CatalogSource actor every second in the full cluster before the images carried CA certificates.
//! Runs `olm-oci inspect` with `SSL_CERT_FILE`/`SSL_CERT_DIR` pointing at an empty trust store.

use std::process::Command;

#[test]
fn an_https_registry_without_ca_certificates_is_an_error_not_a_panic() {
    let dir = std::env::temp_dir().join(format!("olm-rs-no-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, b"").expect("empty bundle");
    let out = Command::new(env!("CARGO_BIN_EXE_olm-oci"))
        .args(["inspect", "registry.example.invalid/olm/catalog:latest"])
        .env("SSL_CERT_FILE", &empty)
        .env("SSL_CERT_DIR", &dir)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run olm-oci");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "inspect succeeded: {stderr}");
    assert!(!stderr.contains("panicked"), "a panic: {stderr}");
    assert!(
        stderr.contains(
            "cannot set up a registry client for registry.example.invalid/olm/catalog:latest"
        ),
        "want the client-setup error, got: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
