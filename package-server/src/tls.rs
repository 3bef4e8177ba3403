//! The serving certificate the server manages: a CA of its own and a serving certificate for the Service's DNS
//! names (and any extra names or IPs), generated at start, or shared by every replica through a Secret
//! (`--tls-secret`: the first replica creates it, the others read it; it is renewed when its names change or
//! it is within [`RENEW_BEFORE_DAYS`] of expiry). The CA goes into the APIService's `caBundle`
//! (`apiservice.rs`). The rustls config asks for (but does not require) a client certificate chaining to the
//! request-header CA, so probes reach `/healthz` without one.

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::{Api, Client};
use olm_runtime::error as api_error;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

pub const VALID_DAYS: i64 = 730;
pub const RENEW_BEFORE_DAYS: i64 = 60;
const NAMES_ANNOTATION: &str = "packages.olm-rs.io/serving-names";
const EXPIRES_ANNOTATION: &str = "packages.olm-rs.io/not-after";

#[derive(Clone, Debug, PartialEq)]
pub struct ServingCert {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    /// Seconds since the epoch.
    pub not_after: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("generate the serving certificate")]
    Generate(#[from] rcgen::Error),
    #[error("build the TLS configuration")]
    Rustls(#[from] rustls::Error),
    #[error("read PEM ({what})")]
    Pem {
        what: &'static str,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("no certificate in the request-header client CA")]
    NoClientCa,
    #[error("the request-header client CA is not usable")]
    ClientVerifier(#[from] rustls::server::VerifierBuilderError),
    #[error("the serving Secret {name} kept changing while it was written")]
    SecretRace { name: String },
    #[error("read or write the serving Secret {name}")]
    Secret {
        name: String,
        #[source]
        source: kube::Error,
    },
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A fresh CA and serving certificate for `names` (DNS names, or IP addresses).
pub fn generate(names: &[String]) -> Result<ServingCert, TlsError> {
    let start = now() - 3600;
    let not_after = now() + VALID_DAYS * 86400;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(
        DnType::CommonName,
        format!("olm-rs-packageserver-ca@{}", now()),
    );
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut ca_params, start, not_after);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;

    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(
        DnType::CommonName,
        names
            .first()
            .cloned()
            .unwrap_or_else(|| "packageserver".into()),
    );
    for name in names {
        params.subject_alt_names.push(match name.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(name.clone().try_into()?),
        });
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    set_validity(&mut params, start, not_after);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &ca)?;
    Ok(ServingCert {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_after,
    })
}

fn set_validity(params: &mut CertificateParams, start: i64, end: i64) {
    let at = |secs: i64| {
        let days = secs.div_euclid(86400);
        // Civil date from days since the epoch (Howard Hinnant's algorithm).
        let z = days + 719468;
        let era = z.div_euclid(146097);
        let doe = z - era * 146097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let y = (yoe + era * 400 + i64::from(m <= 2)) as i32;
        rcgen::date_time_ymd(y, m, d)
    };
    params.not_before = at(start);
    params.not_after = at(end);
}

/// The rustls server configuration: our serving certificate; client certificates verified against
/// `client_ca_pem` when presented (never required).
pub fn server_config(
    cert: &ServingCert,
    client_ca_pem: &str,
) -> Result<rustls::ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|source| TlsError::Pem {
                what: "serving certificate",
                source,
            })?;
    let key =
        PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).map_err(|source| TlsError::Pem {
            what: "serving key",
            source,
        })?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
        let ca = ca.map_err(|source| TlsError::Pem {
            what: "request-header CA",
            source,
        })?;
        roots.add(ca)?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoClientCa);
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn from_secret(secret: &Secret, names: &[String]) -> Option<ServingCert> {
    let annotations = secret.metadata.annotations.as_ref()?;
    if annotations.get(NAMES_ANNOTATION)? != &names.join(",") {
        return None;
    }
    let not_after: i64 = annotations.get(EXPIRES_ANNOTATION)?.parse().ok()?;
    if not_after - now() < RENEW_BEFORE_DAYS * 86400 {
        return None;
    }
    let data = secret.data.as_ref()?;
    let text = |k: &str| {
        data.get(k)
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
    };
    Some(ServingCert {
        ca_pem: text("ca.crt")?,
        cert_pem: text("tls.crt")?,
        key_pem: text("tls.key")?,
        not_after,
    })
}

fn to_secret(name: &str, namespace: &str, cert: &ServingCert, names: &[String]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            annotations: Some(BTreeMap::from([
                (NAMES_ANNOTATION.to_string(), names.join(",")),
                (EXPIRES_ANNOTATION.to_string(), cert.not_after.to_string()),
            ])),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            (
                "ca.crt".to_string(),
                ByteString(cert.ca_pem.clone().into_bytes()),
            ),
            (
                "tls.crt".to_string(),
                ByteString(cert.cert_pem.clone().into_bytes()),
            ),
            (
                "tls.key".to_string(),
                ByteString(cert.key_pem.clone().into_bytes()),
            ),
        ])),
        ..Default::default()
    }
}

/// The certificate kept in Secret `namespace/name`: reused while valid for `names`, else generated and written
/// (a replica that loses the race to create it reads the winner's).
pub async fn from_shared_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    names: &[String],
) -> Result<ServingCert, TlsError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let err = |source| TlsError::Secret {
        name: format!("{namespace}/{name}"),
        source,
    };
    for _ in 0..3 {
        let existing = api.get_opt(name).await.map_err(err)?;
        if let Some(cert) = existing.as_ref().and_then(|s| from_secret(s, names)) {
            return Ok(cert);
        }
        let cert = generate(names)?;
        let mut secret = to_secret(name, namespace, &cert, names);
        let written = match existing {
            None => api.create(&PostParams::default(), &secret).await,
            Some(old) => {
                secret.metadata.resource_version = old.metadata.resource_version;
                api.replace(name, &PostParams::default(), &secret).await
            }
        };
        match written {
            Ok(_) => return Ok(cert),
            Err(e) if api_error::classify(&e).is_conflict() => continue,
            Err(e) => return Err(err(e)),
        }
    }
    let secret = api.get(name).await.map_err(err)?;
    from_secret(&secret, names).ok_or_else(|| TlsError::SecretRace {
        name: format!("{namespace}/{name}"),
    })
}

/// Base64 of the CA, as it appears in an APIService's `caBundle` (for logs and tests).
pub fn ca_bundle_b64(cert: &ServingCert) -> String {
    base64::engine::general_purpose::STANDARD.encode(cert.ca_pem.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_serves_tls_with_the_request_header_ca() {
        let cert =
            generate(&["packageserver-service.olm.svc".into(), "192.0.2.7".into()]).expect("cert");
        assert!(cert.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let client_ca = generate(&["front-proxy".into()]).expect("client ca");
        server_config(&cert, &client_ca.ca_pem).expect("config");
        assert!(matches!(
            server_config(&cert, ""),
            Err(TlsError::NoClientCa)
        ));
    }

    #[test]
    fn a_secret_is_reused_only_for_the_same_names_and_before_renewal() {
        let names = vec!["a.svc".to_string()];
        let cert = generate(&names).expect("cert");
        let secret = to_secret("s", "olm", &cert, &names);
        assert_eq!(from_secret(&secret, &names), Some(cert.clone()));
        assert_eq!(from_secret(&secret, &["b.svc".to_string()]), None);
        let mut old = secret.clone();
        if let Some(a) = old.metadata.annotations.as_mut() {
            a.insert(EXPIRES_ANNOTATION.into(), (now() + 86400).to_string());
        }
        assert_eq!(
            from_secret(&old, &names),
            None,
            "expiring within the renewal window"
        );
    }
}
