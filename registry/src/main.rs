//! `registry`: serve, validate, render and generate catalogs.

use std::process::ExitCode;

use registry::cli::{Cli, Command};

fn main() -> anyhow::Result<ExitCode> {
    let cli = <Cli as clap::Parser>::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve(args) => rt.block_on(registry::commands::serve(args))?,
        Command::Validate(args) => {
            if !registry::commands::validate(args)? {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Render(args) => registry::commands::render(args)?,
        Command::GenSynthetic(args) => registry::commands::gen_synthetic(args)?,
        Command::CacheBuild(args) => {
            if !registry::commands::cache_build(args)? {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
