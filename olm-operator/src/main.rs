//! `olm-operator`: ClusterServiceVersions and OperatorGroups (see the crate docs in lib.rs).
use clap::Parser;
use olm_operator::cli::{Cli, Command};

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crds(args) => {
            for path in messages::crd::write_crds(&args.out)? {
                println!("{}", path.display());
            }
            Ok(())
        }
        Command::Run(args) => olm_operator::run::run(*args),
    }
}
