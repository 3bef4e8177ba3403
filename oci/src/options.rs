//! The registry flags both catalog-operator and package-server take, and the client they make.

use crate::client::Registry;
use crate::mirrors::RegistriesConf;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct RegistryArgs {
    /// Registries (host:port, comma-separated) pulled from over plain HTTP besides loopback ones (bundle and
    /// catalog images), as containerd's insecure registries; every other registry is spoken to over HTTPS.
    #[arg(
        long = "insecure-registries",
        env = "OLM_INSECURE_REGISTRIES",
        value_delimiter = ',',
        default_value = ""
    )]
    pub insecure_registries: Vec<String>,
    /// Mirrors to pull images from first, in the containers-registries.conf v2 format (what CRI-O, podman and
    /// OLM v1's catalogd read); an unreadable or invalid file stops the process at start.
    #[arg(long = "registries-conf", env = "OLM_RS_REGISTRIES_CONF")]
    pub registries_conf: Option<PathBuf>,
    /// A PEM bundle of certificate authorities trusted for HTTPS registries besides the system's (a registry
    /// with a private CA).
    #[arg(long = "registry-ca-bundle", env = "OLM_RS_REGISTRY_CA_BUNDLE")]
    pub registry_ca_bundle: Option<PathBuf>,
}

impl RegistryArgs {
    /// The registry client these flags describe; an error names the file and what is wrong with it.
    pub fn registry(&self) -> Result<Registry, String> {
        let insecure: Vec<String> = self
            .insecure_registries
            .iter()
            .filter(|r| !r.is_empty())
            .cloned()
            .collect();
        let mut registry = Registry::new(&insecure);
        if let Some(path) = &self.registries_conf {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--registries-conf {}: {e}", path.display()))?;
            let conf = RegistriesConf::parse(&text)
                .map_err(|e| format!("--registries-conf {}: {e}", path.display()))?;
            registry = registry.with_mirrors(conf);
        }
        if let Some(path) = &self.registry_ca_bundle {
            let pem = std::fs::read_to_string(path)
                .map_err(|e| format!("--registry-ca-bundle {}: {e}", path.display()))?;
            registry = registry
                .with_ca_bundle(&pem)
                .map_err(|e| format!("--registry-ca-bundle {}: {e}", path.display()))?;
        }
        Ok(registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_named() {
        let dir = std::env::temp_dir().join(format!("oci-options-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let conf = dir.join("registries.conf");
        std::fs::write(&conf, "[[registry]]\ninsecure = true\n").expect("write");
        let args = RegistryArgs {
            registries_conf: Some(conf.clone()),
            ..Default::default()
        };
        let e = args.registry().err().expect("refused");
        assert!(
            e.contains(&conf.display().to_string()) && e.contains("location"),
            "{e}"
        );
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, "not a certificate").expect("write");
        let args = RegistryArgs {
            registry_ca_bundle: Some(ca),
            ..Default::default()
        };
        let e = args.registry().err().expect("refused");
        assert!(e.contains("no PEM certificate"), "{e}");
        let args = RegistryArgs {
            registries_conf: Some(dir.join("absent.conf")),
            ..Default::default()
        };
        assert!(args.registry().is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
