//! `node-sim`: dev/test support, NOT part of OLM. Plays the kubelet (as kwok does) on a control plane without nodes.
use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = node_sim::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(node_sim::run(cli))?;
    Ok(())
}
