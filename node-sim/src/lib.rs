//! The node simulator (dev/test support only; a real cluster has kubelets).
//!
//! It registers one Node that reports Ready and keeps its Lease renewed, binds every unscheduled pod to it,
//! marks bound pods Running and Ready (so the real deployment controller reports Deployments Available), and
//! finishes the deletion of pods being deleted (the kubelet's job: without it they stay Terminating forever).

mod node;
mod pods;

use clap::Parser;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::PathBuf;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "node-sim",
    about = "Dev/test support: plays the kubelet so pods become Running and Ready (like kwok)"
)]
pub struct Cli {
    /// Kubeconfig of the control plane.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Name of the simulated node.
    #[arg(long, env = "NODE_SIM_NAME", default_value = "olm-rs-sim-node")]
    pub node_name: String,
    /// Seconds between heartbeats (Lease renewals).
    #[arg(long, default_value_t = 5)]
    pub heartbeat_seconds: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot load kubeconfig")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    #[error("cannot infer a cluster config")]
    Infer(#[source] kube::config::InferConfigError),
    #[error("kubernetes API call failed: {what}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
}

pub async fn run(cli: Cli) -> Result<(), SimError> {
    let config = match &cli.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(SimError::Kubeconfig)?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(SimError::Kubeconfig)?
        }
        None => kube::Config::infer().await.map_err(SimError::Infer)?,
    };
    let client = Client::try_from(config).map_err(|source| SimError::Api {
        what: "client".into(),
        source,
    })?;
    node::register(&client, &cli.node_name).await?;
    tracing::info!(node = %cli.node_name, "node simulator registered its node");
    let heartbeat = tokio::spawn(node::heartbeat(
        client.clone(),
        cli.node_name.clone(),
        cli.heartbeat_seconds,
    ));
    let pods = pods::run(client, cli.node_name.clone());
    tokio::select! {
        r = pods => r,
        _ = heartbeat => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
