//! The command line of `olm-operator` (OLM's `olm` binary flags where they exist, kebab-case with env vars).

use clap::{Args, Parser, Subcommand};
use olm_runtime::args::{CommonArgs, CrdsArgs};

#[derive(Parser, Debug)]
#[command(
    name = "olm-operator",
    version,
    about = "olm-rs olm-operator: ClusterServiceVersions and OperatorGroups (OLM v0 compatible)"
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
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Comma-separated namespaces that keep the copies of all-namespaces operators even when OLMConfig
    /// `disableCopiedCSVs` is true (OLM's `--protectedCopiedCSVNamespaces`).
    #[arg(
        long = "protected-copied-csv-namespaces",
        alias = "protectedCopiedCSVNamespaces",
        env = "OLM_PROTECTED_COPIED_CSV_NAMESPACES",
        value_delimiter = ','
    )]
    pub protected_copied_csv_namespaces: Vec<String>,
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
    fn protected_copy_namespaces_accept_olms_spelling_and_a_comma_list() {
        let cli = Cli::try_parse_from([
            "olm-operator",
            "run",
            "--protectedCopiedCSVNamespaces",
            "openshift,tools",
        ])
        .expect("parses");
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.protected_copied_csv_namespaces, ["openshift", "tools"]);
    }
}
