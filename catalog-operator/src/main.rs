//! `catalog-operator`: CatalogSources, Subscriptions and InstallPlans (see the crate docs in lib.rs).
use catalog_operator::cli::{Cli, Command};
use clap::Parser;

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crds(args) => {
            for path in messages::crd::write_crds(&args.out)? {
                println!("{}", path.display());
            }
            Ok(())
        }
        Command::Run(args) => catalog_operator::run::run(*args),
        Command::IndexCatalog(args) => match catalog_image::indexer::run_job(&args.job) {
            Ok(summary) => {
                println!("{summary}");
                Ok(())
            }
            Err(e) => {
                // One line: the parent reads the last line of stderr into the CatalogSource's status.
                eprintln!("{}", olm_runtime::error::chain(&e));
                std::process::exit(1)
            }
        },
    }
}
