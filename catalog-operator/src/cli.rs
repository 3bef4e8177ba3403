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
}
