//! The certificates OLM manages for a deployment that serves webhooks or API services, pure (no I/O, the
//! clock passed in): issue a CA and a serving certificate for the Service's DNS names (ECDSA P-256 like
//! OLM's `certs.GenerateCA`/`CreateSignedServingPair`, via `rcgen` on `ring`), judge whether a stored pair
//! must be rotated (OLM's `shouldRotateCerts`: malformed, not yet or no longer valid, inside the rotation
//! window, not signed by the CA, or missing a host), and hash the CA PEM (OLM's `PEMSHA256`).

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use sha2::Digest;
use std::time::Duration;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// The organization of OLM's certificates.
pub const ORGANIZATION: &str = "Red Hat, Inc.";
/// Secret key holding the CA certificate (OLM's `OLMCAPEMKey`).
pub const CA_KEY: &str = "olmCAKey";
/// Secret annotation and pod-template annotation carrying the CA hash (OLM's `OLMCAHashAnnotationKey`).
pub const CA_HASH_ANNOTATION: &str = "olmcahash";
/// OLM's `DefaultCertValidFor`: two years.
pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(730 * 24 * 3600);
/// OLM's `DefaultCertMinFresh`: rotate one day before expiry.
pub const DEFAULT_MIN_FRESH: Duration = Duration::from_secs(24 * 3600);
/// Environment variable shortening the validity (seconds), for tests of rotation.
pub const VALIDITY_ENV: &str = "OLM_RS_CERT_VALIDITY_SECONDS";

/// How long certificates live and how long before expiry they are rotated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetime {
    pub validity: Duration,
    pub min_fresh: Duration,
}

impl Default for Lifetime {
    fn default() -> Self {
        Self {
            validity: DEFAULT_VALIDITY,
            min_fresh: DEFAULT_MIN_FRESH,
        }
    }
}

impl Lifetime {
    /// A validity other than OLM's: the rotation window is OLM's day, or half the validity when that is
    /// shorter (so a 60 s certificate rotates after 30 s).
    pub fn with_validity(validity: Duration) -> Self {
        Self {
            validity,
            min_fresh: DEFAULT_MIN_FRESH.min(validity / 2),
        }
    }

    /// OLM's lifetime, or one of `validity` (`OLM_RS_CERT_VALIDITY_SECONDS`, [`validity_from_env`]).
    pub fn of(validity: Option<Duration>) -> Self {
        validity.map_or_else(Lifetime::default, Lifetime::with_validity)
    }

    /// When a certificate expiring at `not_after` (unix seconds) is due for rotation.
    pub fn rotate_at(&self, not_after: i64) -> i64 {
        not_after.saturating_sub(secs(self.min_fresh))
    }
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// A freshly issued CA and serving pair, PEM encoded.
#[derive(Clone, Debug)]
pub struct Issued {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    /// Unix seconds.
    pub not_after: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot issue a certificate: {0}")]
pub struct IssueError(String);

impl From<rcgen::Error> for IssueError {
    fn from(e: rcgen::Error) -> Self {
        IssueError(e.to_string())
    }
}

fn offset(unix: i64) -> Result<time::OffsetDateTime, IssueError> {
    time::OffsetDateTime::from_unix_timestamp(unix).map_err(|e| IssueError(e.to_string()))
}

/// Issue a new CA and a serving certificate for `hosts` (the first is the common name), valid from `now`
/// (unix seconds) for the lifetime's validity.
pub fn issue(hosts: &[String], now: i64, lifetime: Lifetime) -> Result<Issued, IssueError> {
    let first = hosts
        .first()
        .ok_or_else(|| IssueError("no host names".into()))?;
    let not_after = now.saturating_add(secs(lifetime.validity));
    let (start, end) = (offset(now)?, offset(not_after)?);
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.distinguished_name
        .push(DnType::CommonName, format!("olm-selfsigned-{now:x}"));
    ca.distinguished_name
        .push(DnType::OrganizationName, ORGANIZATION);
    ca.not_before = start;
    ca.not_after = end;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(hosts.to_vec())?;
    serving
        .distinguished_name
        .push(DnType::CommonName, first.as_str());
    serving
        .distinguished_name
        .push(DnType::OrganizationName, ORGANIZATION);
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.not_before = start;
    serving.not_after = end;
    let cert = serving.signed_by(&key, &issuer)?;
    Ok(Issued {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_after,
    })
}

/// What to do with a stored pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Keep it; rotate at `rotate_at` (unix seconds).
    Fresh { rotate_at: i64 },
    /// Issue a new pair, for this reason.
    Rotate(String),
}

/// OLM's `shouldRotateCerts` over the Secret's `olmCAKey` and `tls.crt`.
pub fn inspect(
    ca_pem: Option<&[u8]>,
    cert_pem: Option<&[u8]>,
    hosts: &[String],
    now: i64,
    lifetime: Lifetime,
) -> Verdict {
    let (Some(ca_pem), Some(cert_pem)) = (ca_pem, cert_pem) else {
        return Verdict::Rotate("the secret lacks the CA or the serving certificate".into());
    };
    let (ca_der, cert_der) = match (der_of(ca_pem), der_of(cert_pem)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => return Verdict::Rotate(format!("the CA is malformed: {e}")),
        (_, Err(e)) => {
            return Verdict::Rotate(format!("the serving certificate is malformed: {e}"));
        }
    };
    let (ca, cert) = match (
        X509Certificate::from_der(&ca_der),
        X509Certificate::from_der(&cert_der),
    ) {
        (Ok((_, a)), Ok((_, b))) => (a, b),
        (Err(e), _) => return Verdict::Rotate(format!("the CA is malformed: {e}")),
        (_, Err(e)) => {
            return Verdict::Rotate(format!("the serving certificate is malformed: {e}"));
        }
    };
    let mut rotate_at = i64::MAX;
    for (what, c) in [("CA", &ca), ("serving certificate", &cert)] {
        let validity = c.validity();
        let (from, until) = (
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        );
        if now < from || now >= until {
            return Verdict::Rotate(format!("the {what} is not valid now"));
        }
        let due = lifetime.rotate_at(until);
        if now >= due {
            return Verdict::Rotate(format!("the {what} expires soon"));
        }
        rotate_at = rotate_at.min(due);
    }
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return Verdict::Rotate("the serving certificate is not signed by the CA".into());
    }
    let names: Vec<String> = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(d) => Some((*d).to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(missing) = hosts.iter().find(|h| !names.contains(h)) {
        return Verdict::Rotate(format!("the serving certificate does not name {missing}"));
    }
    Verdict::Fresh { rotate_at }
}

/// The DER of the first PEM block.
fn der_of(pem: &[u8]) -> Result<Vec<u8>, String> {
    x509_parser::pem::parse_x509_pem(pem)
        .map(|(_, p)| p.contents)
        .map_err(|e| e.to_string())
}

/// Does `pem` hold a certificate valid at `now`? (The CA bundle of a webhook or APIService.)
pub fn usable_ca(pem: &[u8], now: i64) -> Result<(), String> {
    let der = der_of(pem)?;
    let (_, ca) = X509Certificate::from_der(&der).map_err(|e| e.to_string())?;
    let v = ca.validity();
    if now < v.not_before.timestamp() || now >= v.not_after.timestamp() {
        return Err("the CA bundle is expired or not yet valid".into());
    }
    Ok(())
}

/// OLM's `PEMSHA256`: hex SHA-256 of the PEM bytes.
pub fn ca_hash(ca_pem: &[u8]) -> String {
    sha2::Sha256::digest(ca_pem)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The validity `OLM_RS_CERT_VALIDITY_SECONDS` asks for (read once at start; none: OLM's).
pub fn validity_from_env() -> Option<Duration> {
    std::env::var(VALIDITY_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const NOW: i64 = 1_800_000_000;

    fn hosts() -> Vec<String> {
        vec![
            "op-service.ns".to_string(),
            "op-service.ns.svc".to_string(),
            "op-service.ns.svc.cluster.local".to_string(),
        ]
    }

    fn short() -> Lifetime {
        Lifetime::with_validity(Duration::from_secs(100))
    }

    #[test]
    fn an_issued_pair_is_fresh_until_its_rotation_window() {
        let issued = issue(&hosts(), NOW, Lifetime::default()).expect("issued");
        let verdict = inspect(
            Some(issued.ca_pem.as_bytes()),
            Some(issued.cert_pem.as_bytes()),
            &hosts(),
            NOW + 10,
            Lifetime::default(),
        );
        let expected = NOW + secs(DEFAULT_VALIDITY) - secs(DEFAULT_MIN_FRESH);
        assert_eq!(
            verdict,
            Verdict::Fresh {
                rotate_at: expected
            }
        );
        assert!(issued.key_pem.contains("PRIVATE KEY"));
    }

    #[rstest]
    #[case::half_of_a_short_validity_is_fresh(40, true)]
    #[case::inside_the_window_rotates(50, false)]
    #[case::after_expiry_rotates(150, false)]
    #[case::before_it_is_valid_rotates(-5, false)]
    fn the_rotation_window_follows_the_lifetime(#[case] later: i64, #[case] fresh: bool) {
        let issued = issue(&hosts(), NOW, short()).expect("issued");
        let verdict = inspect(
            Some(issued.ca_pem.as_bytes()),
            Some(issued.cert_pem.as_bytes()),
            &hosts(),
            NOW + later,
            short(),
        );
        assert_eq!(
            matches!(verdict, Verdict::Fresh { .. }),
            fresh,
            "{verdict:?}"
        );
    }

    #[rstest]
    #[case::a_missing_ca(None, Some("cert"), "lacks")]
    #[case::a_garbage_ca(Some("garbage"), Some("cert"), "CA is malformed")]
    #[case::a_garbage_certificate(
        Some("ca"),
        Some("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        "serving certificate is malformed"
    )]
    #[case::a_foreign_ca(Some("other-ca"), Some("cert"), "not signed by the CA")]
    fn a_broken_secret_is_rotated_with_a_reason(
        #[case] ca: Option<&str>,
        #[case] cert: Option<&str>,
        #[case] why: &str,
    ) {
        let issued = issue(&hosts(), NOW, Lifetime::default()).expect("issued");
        let other = issue(&hosts(), NOW, Lifetime::default()).expect("issued");
        let pick = |s: &str| match s {
            "ca" => issued.ca_pem.clone(),
            "cert" => issued.cert_pem.clone(),
            "other-ca" => other.ca_pem.clone(),
            s => s.to_string(),
        };
        let (ca, cert) = (ca.map(pick), cert.map(pick));
        let verdict = inspect(
            ca.as_deref().map(str::as_bytes),
            cert.as_deref().map(str::as_bytes),
            &hosts(),
            NOW + 1,
            Lifetime::default(),
        );
        match verdict {
            Verdict::Rotate(reason) => assert!(reason.contains(why), "{reason}"),
            Verdict::Fresh { .. } => panic!("a broken secret was judged fresh"),
        }
    }

    #[test]
    fn a_certificate_for_another_service_is_rotated() {
        let issued = issue(&hosts(), NOW, Lifetime::default()).expect("issued");
        let mut wanted = hosts();
        wanted.push("renamed-service.ns.svc".into());
        let verdict = inspect(
            Some(issued.ca_pem.as_bytes()),
            Some(issued.cert_pem.as_bytes()),
            &wanted,
            NOW + 1,
            Lifetime::default(),
        );
        assert_eq!(
            verdict,
            Verdict::Rotate("the serving certificate does not name renamed-service.ns.svc".into())
        );
    }

    #[test]
    fn the_ca_hash_is_hex_sha256_of_the_pem() {
        assert_eq!(
            ca_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_ca_bundle_is_usable_only_while_valid() {
        let issued = issue(&hosts(), NOW, short()).expect("issued");
        assert!(usable_ca(issued.ca_pem.as_bytes(), NOW + 1).is_ok());
        assert!(usable_ca(issued.ca_pem.as_bytes(), NOW + 101).is_err());
        assert!(usable_ca(b"not a pem", NOW).is_err());
    }
}
