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
    Run(RunArgs),
    /// Write the operators.coreos.com CustomResourceDefinitions (generated from our types) into a folder.
    Crds(CrdsArgs),
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
