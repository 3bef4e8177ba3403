//! The command line of `catalog-operator` (OLM's `catalog` binary flags where they exist, kebab-case with env vars).

use clap::{Args, Parser, Subcommand};
use olm_runtime::args::{CommonArgs, CrdsArgs};

#[derive(Parser, Debug)]
#[command(
    name = "catalog-operator",
    version,
    about = "olm-rs catalog-operator: CatalogSources, Subscriptions and InstallPlans (OLM v0 compatible)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the operator.
    Run(Box<RunArgs>),
    /// Write the operators.coreos.com CustomResourceDefinitions (generated from our types) into a folder.
    Crds(CrdsArgs),
    /// Index a staged catalog image (run by `run` itself as a short-lived child, crate catalog-image `indexer`).
    #[command(hide = true)]
    IndexCatalog(IndexCatalogArgs),
}

#[derive(Args, Debug, Clone)]
pub struct IndexCatalogArgs {
    /// The job folder `run` staged.
    #[arg(long)]
    pub job: std::path::PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// How long an InstallPlan retries a failing step before it fails (OLM's `--install-plan-retry-timeout`, a Go duration).
    #[arg(long = "install-plan-retry-timeout", env = "OLM_INSTALL_PLAN_RETRY_TIMEOUT", default_value = "1m", value_parser = go_duration)]
    pub install_plan_retry_timeout: std::time::Duration,
    /// How often registry connections are probed (a Go duration).
    #[arg(long = "registry-probe-interval", env = "OLM_REGISTRY_PROBE_INTERVAL", default_value = "2s", value_parser = go_duration)]
    pub registry_probe_interval: std::time::Duration,
    #[command(flatten)]
    pub registry: oci::options::RegistryArgs,
    /// A pull secret (NAMESPACE/NAME, type kubernetes.io/dockerconfigjson) used for every image pull after the
    /// CatalogSource's own `spec.secrets` (as OLM v1's catalogd `--global-pull-secret`); catalog-operator needs
    /// `get` on it.
    #[arg(long = "global-pull-secret", env = "OLM_RS_GLOBAL_PULL_SECRET", value_parser = catalog_image::secret_ref::parse_secret_ref)]
    pub global_pull_secret: Option<catalog_image::secret_ref::SecretRef>,
    /// Where catalog images are unpacked and indexed (a child process per load) and their bundle bodies kept
    /// (unlinked files): an emptyDir in the pod. Default: `olm-rs-catalogs` in the temp folder.
    #[arg(long = "catalog-cache-dir", env = "OLM_RS_CATALOG_CACHE_DIR")]
    pub catalog_cache_dir: Option<std::path::PathBuf>,
    /// Serve the catalog images this process loaded over the registry gRPC API on this address (each request
    /// names its CatalogSource in `x-olm-catalog: <namespace>/<name>`), for package-server's
    /// `--image-catalogs-address`. Off when unset.
    #[arg(long = "catalog-serve-addr", env = "OLM_RS_CATALOG_SERVE_ADDR")]
    pub catalog_serve_addr: Option<std::net::SocketAddr>,
    /// The Service (no selector, in `--namespace`) that routes to the catalogs served on `--catalog-serve-addr`:
    /// the leader, once it listens, points the Service's EndpointSlice `<service>-leader` at `--pod-ip` (the
    /// standby serves nothing). Off when unset.
    #[arg(
        long = "catalog-serve-service",
        env = "OLM_RS_CATALOG_SERVE_SERVICE",
        requires_all = ["catalog_serve_addr", "pod_ip"]
    )]
    pub catalog_serve_service: Option<String>,
    /// This pod's IP (the downward API's `status.podIP`), for `--catalog-serve-service`.
    #[arg(long = "pod-ip", env = "POD_IP")]
    pub pod_ip: Option<std::net::IpAddr>,
    /// This pod's name (the downward API's `metadata.name`), named by the EndpointSlice's endpoint.
    #[arg(long = "pod-name", env = "POD_NAME")]
    pub pod_name: Option<String>,
}

fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    messages::crd::catalog_source::parse_go_duration(s).map_err(|e| e.to_string())
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
    fn the_retry_timeout_is_a_go_duration_defaulting_to_one_minute() {
        let Command::Run(args) = Cli::try_parse_from(["catalog-operator", "run"])
            .expect("parse")
            .command
        else {
            panic!("run expected")
        };
        assert_eq!(
            args.install_plan_retry_timeout,
            std::time::Duration::from_secs(60)
        );
        let Command::Run(args) = Cli::try_parse_from([
            "catalog-operator",
            "run",
            "--install-plan-retry-timeout",
            "1m30s",
        ])
        .expect("parse")
        .command
        else {
            panic!("run expected")
        };
        assert_eq!(
            args.install_plan_retry_timeout,
            std::time::Duration::from_secs(90)
        );
    }
}
