//! Command line of the `registry` binary: `serve`, `validate`, `render`, `gen-synthetic`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "registry",
    about = "Operator catalog registry (opm serve compatible)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve catalogs over gRPC (api.Registry, health, reflection).
    Serve(ServeArgs),
    /// Load and validate catalogs; print every problem found.
    Validate(SourceArgs),
    /// Render catalogs as an FBC JSON stream.
    Render(RenderArgs),
    /// Write a synthetic FBC catalog: `--factor` renamed copies of every package of the source.
    GenSynthetic(GenArgs),
    /// Load, validate and write the serving index to `--out` (what `serve` runs in a child process).
    #[command(hide = true)]
    CacheBuild(CacheArgs),
}

#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Directory to write `index.msgpack` and `bodies` into.
    #[arg(long, env = "REGISTRY_CACHE_OUT")]
    pub out: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct SourceArgs {
    /// Catalog paths: FBC dirs/files, package-manifest dirs, bundle dirs, ConfigMap files.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Force a format instead of detecting it: fbc, package-manifests, bundles, configmap.
    #[arg(long, env = "REGISTRY_FORMAT")]
    pub format: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Port to listen on (0 picks a free one; the chosen address is printed).
    #[arg(short, long, env = "REGISTRY_PORT", default_value_t = crate::server::DEFAULT_PORT)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, env = "REGISTRY_LISTEN", default_value = "0.0.0.0")]
    pub listen: std::net::IpAddr,
    /// Where CSV JSON and manifests are kept: `disk` (an unlinked temp file; small RSS) or `memory`.
    #[arg(long, env = "REGISTRY_BODIES", default_value = "disk", value_parser = ["disk", "memory"])]
    pub bodies: String,
    /// Load the catalog in this process instead of a short-lived child process. The child keeps
    /// the parsing garbage out of the server's resident memory.
    #[arg(long, env = "REGISTRY_LOAD_IN_PROCESS")]
    pub load_in_process: bool,
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output file (default: stdout).
    #[arg(short, long, env = "REGISTRY_RENDER_OUTPUT")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct GenArgs {
    /// Source catalog to multiply.
    #[arg(long, env = "REGISTRY_GEN_FROM")]
    pub from: PathBuf,
    /// How many copies of each package.
    #[arg(long, env = "REGISTRY_GEN_FACTOR", default_value_t = 10)]
    pub factor: usize,
    /// Output directory (one sub-folder per package).
    #[arg(long, env = "REGISTRY_GEN_OUT")]
    pub out: PathBuf,
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
