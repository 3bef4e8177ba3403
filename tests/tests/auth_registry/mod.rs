//! A second Debian `docker-registry` for the private-registry tests: htpasswd authentication, and optionally TLS
//! with a certificate from a private CA made here (rcgen), on its own port and folder; stopped when dropped.

#![allow(dead_code)]

use olm_tests::eventually;
use std::time::Duration;

pub const USER: &str = "olmrs";
pub const PASSWORD: &str = "s3cret";
/// `htpasswd -nbB olmrs s3cret` (bcrypt, the only scheme docker-registry reads).
const HTPASSWD: &str = "olmrs:$2y$05$8K4TYX59iybAL1wbLwjnAOAKX28WIwDmZsspABsbds88fZa6fO2nC\n";

/// A private CA and a server certificate it signed for one IP address.
pub struct Tls {
    pub ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl Tls {
    pub fn for_ip(ip: std::net::IpAddr) -> anyhow::Result<Self> {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "olm-rs test registry CA");
        let ca_cert = ca.self_signed(&ca_key)?;
        let key = KeyPair::generate()?;
        let mut server = CertificateParams::new(Vec::<String>::new())?;
        server.subject_alt_names = vec![SanType::IpAddress(ip)];
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let cert = server.signed_by(&key, &issuer)?;
        Ok(Tls {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

pub struct AuthRegistry {
    child: std::process::Child,
    /// host:port as clients name it.
    pub addr: String,
    dir: std::path::PathBuf,
}

impl AuthRegistry {
    /// Plain HTTP with htpasswd, on loopback.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_on("127.0.0.1".parse()?, None).await
    }

    /// On `ip`, with htpasswd, over TLS when `tls` is given.
    pub async fn start_on(ip: std::net::IpAddr, tls: Option<&Tls>) -> anyhow::Result<Self> {
        let port = olm_tests::catalog_fixture::free_port()?;
        let dir = std::env::temp_dir().join(format!(
            "olm-rs-auth-registry-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)?;
        let addr = format!("{ip}:{port}");
        std::fs::write(dir.join("htpasswd"), HTPASSWD)?;
        let mut http = format!("http:\n  addr: {addr}\n");
        if let Some(tls) = tls {
            std::fs::write(dir.join("tls.crt"), &tls.cert_pem)?;
            std::fs::write(dir.join("tls.key"), &tls.key_pem)?;
            http.push_str(&format!(
                "  tls:\n    certificate: {root}/tls.crt\n    key: {root}/tls.key\n",
                root = dir.display()
            ));
        }
        let config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {root}/data\n{http}auth:\n  htpasswd:\n    realm: olm-rs\n    path: {root}/htpasswd\n",
            root = dir.display()
        );
        std::fs::write(dir.join("config.yml"), config)?;
        let log = std::fs::File::create(dir.join("registry.log"))?;
        let child = std::process::Command::new("docker-registry")
            .arg("serve")
            .arg(dir.join("config.yml"))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| {
                anyhow::anyhow!(
                    "docker-registry (Debian package docker-registry) did not start: {e}"
                )
            })?;
        let me = Self { child, addr, dir };
        let addr = me.addr.clone();
        let addr = &addr;
        eventually(
            Duration::from_secs(20),
            "the auth registry listening",
            || async move { Ok(tokio::net::TcpStream::connect(addr).await.ok().map(|_| ())) },
        )
        .await?;
        Ok(me)
    }

    pub fn basic() -> oci::Auth {
        oci::Auth::Basic {
            username: USER.into(),
            password: PASSWORD.into(),
        }
    }
}

impl Drop for AuthRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// This machine's address on its default route (not loopback: loopback registries are spoken to over plain HTTP).
pub fn outward_ip() -> anyhow::Result<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    socket.connect("192.0.2.1:9")?;
    let ip = socket.local_addr()?.ip();
    anyhow::ensure!(!ip.is_loopback(), "no address besides loopback: {ip}");
    Ok(ip)
}

/// The `.dockerconfigjson` of a pull secret holding this registry's credentials for `addr`.
pub fn docker_config(addr: &str) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    serde_json::json!({"auths": {addr: {"auth": token}}}).to_string()
}

/// Writes into `dir` the CA bundle of `tls` (`ca.pem`) and a `registries.conf` that mirrors
/// `quay.io/private-org` (a registry this machine cannot reach) to `mirror` (`host:port/path`); returns both paths.
pub fn mirror_files(
    dir: &std::path::Path,
    tls: &Tls,
    mirror: &str,
) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem)?;
    let conf = dir.join("registries.conf");
    std::fs::write(
        &conf,
        format!(
            "[[registry]]\nprefix = \"quay.io/private-org\"\nlocation = \"quay.io/private-org\"\n\
             [[registry.mirror]]\nlocation = \"{mirror}\"\n"
        ),
    )?;
    Ok((ca, conf))
}
