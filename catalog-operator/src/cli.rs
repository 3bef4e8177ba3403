//! The command line of `catalog-operator` (OLM's `catalog` binary flags where they exist, kebab-case with env vars).

use clap::{Args, Parser, Subcommand};
use olm_runtime::args::CommonArgs;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "catalog-operator", version, about = "olm-rs catalog-operator: CatalogSources, Subscriptions and InstallPlans (OLM v0 compatible)")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the operator.
    Run(RunArgs),
    /// Write the operators.coreos.com CustomResourceDefinitions (generated from our types) into a folder.
    Crds(CrdsArgs),
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
}

fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    messages::crd::catalog_source::parse_go_duration(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug, Clone)]
pub struct CrdsArgs {
    /// Output folder.
    #[arg(long, default_value = "deploy/crds")]
    pub out: PathBuf,
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
    fn watched_namespaces_accepts_olms_spelling_and_a_comma_list() {
        let cli = Cli::try_parse_from(["catalog-operator", "run", "--watchedNamespaces", "a,b"]).expect("parse");
        let Command::Run(args) = cli.command else { panic!("run expected") };
        assert_eq!(args.common.watch_scope(), Some(vec!["a".to_string(), "b".to_string()]));
    }

    #[test]
    fn the_retry_timeout_is_a_go_duration_defaulting_to_one_minute() {
        let Command::Run(args) = Cli::try_parse_from(["catalog-operator", "run"]).expect("parse").command else { panic!("run expected") };
        assert_eq!(args.install_plan_retry_timeout, std::time::Duration::from_secs(60));
        let Command::Run(args) = Cli::try_parse_from(["catalog-operator", "run", "--install-plan-retry-timeout", "1m30s"]).expect("parse").command else { panic!("run expected") };
        assert_eq!(args.install_plan_retry_timeout, std::time::Duration::from_secs(90));
    }
}
