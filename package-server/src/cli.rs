//! The command line of `package-server` (OLM's packageserver flags where they exist: `--global-namespace`,
//! `--secure-port`, `--interval`), kebab-case with env vars.

use clap::{Args, Parser, Subcommand};
use olm_runtime::args::LogFormat;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "package-server",
    version,
    about = "olm-rs package-server: the packages.operators.coreos.com/v1 PackageManifest aggregated API (OLM v0 compatible)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the API.
    Run(RunArgs),
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Path to a kubeconfig. Without it: $KUBECONFIG, then the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace whose CatalogSources every namespace sees (OLM's `--global-namespace`).
    #[arg(
        long = "global-namespace",
        env = "OLM_GLOBAL_NAMESPACE",
        default_value = "olm"
    )]
    pub global_namespace: String,
    /// Address of the HTTPS API the aggregator proxies to.
    #[arg(
        long = "bind-address",
        env = "PACKAGE_SERVER_BIND_ADDRESS",
        default_value = "0.0.0.0"
    )]
    pub bind_address: IpAddr,
    /// Port of the HTTPS API (OLM's packageserver: 5443).
    #[arg(
        long = "secure-port",
        env = "PACKAGE_SERVER_SECURE_PORT",
        default_value_t = 5443
    )]
    pub secure_port: u16,
    /// Address of the plain health, metrics and debug endpoints.
    #[arg(long, env = "OLM_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,
    /// Who may read the metrics and debug endpoints, and where (`--metrics-auth`, `--metrics-bind-address`).
    #[command(flatten)]
    pub endpoints: olm_runtime::args::EndpointArgs,
    /// The Service in front of this server: the serving certificate is for `<name>.<namespace>.svc` (and
    /// `.svc.cluster.local`).
    #[arg(
        long = "service-name",
        env = "PACKAGE_SERVER_SERVICE_NAME",
        default_value = "packageserver-service"
    )]
    pub service_name: String,
    /// The Service's namespace (default: the global namespace).
    #[arg(long = "service-namespace", env = "OPERATOR_NAMESPACE")]
    pub service_namespace: Option<String>,
    /// More names (DNS or IP) for the serving certificate, comma-separated.
    #[arg(
        long = "tls-extra-names",
        env = "PACKAGE_SERVER_TLS_EXTRA_NAMES",
        value_delimiter = ','
    )]
    pub tls_extra_names: Vec<String>,
    /// A Secret (in the service namespace) where replicas share the serving certificate; none: each process
    /// generates its own (one replica).
    #[arg(long = "tls-secret", env = "PACKAGE_SERVER_TLS_SECRET")]
    pub tls_secret: Option<String>,
    /// The APIService whose caBundle this server keeps on its CA; empty: leave APIServices alone.
    #[arg(
        long = "apiservice-name",
        env = "PACKAGE_SERVER_APISERVICE",
        default_value = "v1.packages.operators.coreos.com"
    )]
    pub apiservice_name: String,
    /// Every catalog is read again this often, in seconds (OLM's `--interval`, 5m); 0: never.
    #[arg(long = "interval", env = "OLM_RESYNC_SECONDS", default_value_t = 300)]
    pub resync_seconds: u64,
    /// How often each catalog's registry connection is probed (seconds): a catalog down for this long loses its packages.
    #[arg(
        long = "registry-probe-seconds",
        env = "PACKAGE_SERVER_REGISTRY_PROBE_SECONDS",
        default_value_t = 5
    )]
    pub registry_probe_seconds: u64,
    #[command(flatten)]
    pub registry: oci::options::RegistryArgs,
    /// A pull secret (NAMESPACE/NAME) used for image catalogs after the CatalogSource's own `spec.secrets`, as
    /// catalog-operator's `--global-pull-secret`; package-server needs `get` on it.
    #[arg(long = "global-pull-secret", env = "OLM_RS_GLOBAL_PULL_SECRET", value_parser = catalog_image::secret_ref::parse_secret_ref)]
    pub global_pull_secret: Option<catalog_image::secret_ref::SecretRef>,
    /// Read image catalogs (`spec.image`, no address) from catalog-operator, which serves the ones it loaded on
    /// this gRPC address (its `--catalog-serve-addr`), instead of pulling and indexing each image here.
    #[arg(long = "image-catalogs-address", env = "OLM_RS_IMAGE_CATALOGS_ADDRESS")]
    pub image_catalogs_address: Option<String>,
    /// Log format on stdout.
    #[arg(long, env = "OLM_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl RunArgs {
    /// The names the serving certificate is for.
    pub fn serving_names(&self) -> Vec<String> {
        let ns = self
            .service_namespace
            .as_deref()
            .unwrap_or(&self.global_namespace);
        let svc = &self.service_name;
        let mut names = vec![
            format!("{svc}.{ns}.svc"),
            format!("{svc}.{ns}.svc.cluster.local"),
            format!("{svc}.{ns}"),
            svc.clone(),
        ];
        names.extend(
            self.tls_extra_names
                .iter()
                .filter(|n| !n.is_empty())
                .cloned(),
        );
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_certificate_names_follow_the_service() {
        let Command::Run(args) = Cli::try_parse_from([
            "package-server",
            "run",
            "--service-namespace",
            "olm",
            "--tls-extra-names",
            "192.0.2.2",
        ])
        .expect("parse")
        .command;
        assert_eq!(args.serving_names()[0], "packageserver-service.olm.svc");
        assert!(args.serving_names().contains(&"192.0.2.2".to_string()));
        assert_eq!(args.secure_port, 5443);
    }
}
