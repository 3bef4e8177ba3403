//! `package-server`: the PackageManifest aggregated API (see the crate docs in lib.rs).
use clap::Parser;
use package_server::cli::{Cli, Command};

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run(args) => package_server::run::run(args),
    }
}
