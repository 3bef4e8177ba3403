//! The kube client: from `--kubeconfig`/`$KUBECONFIG`, else the in-cluster service account (token, CA and
//! `KUBERNETES_SERVICE_HOST`/`PORT`). Create it on the long-lived multi-thread runtime (see crate-stack §4).

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot read kubeconfig {path}")]
    ReadKubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("invalid kubeconfig {path}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("no kubeconfig given and not running in a cluster")]
    Infer(#[source] kube::config::InferConfigError),
    #[error("cannot build the Kubernetes client")]
    Build(#[source] kube::Error),
}

pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, ClientError> {
    let config = match kubeconfig {
        Some(path) => {
            let shown = path.display().to_string();
            let kc = Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                path: shown.clone(),
                source,
            })?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|source| ClientError::Kubeconfig {
                    path: shown,
                    source,
                })?
        }
        None => Config::infer().await.map_err(ClientError::Infer)?,
    };
    let mut config = config;
    if let Ok(agent) = hyper::header::HeaderValue::from_str(&user_agent()) {
        config.headers.push((hyper::header::USER_AGENT, agent));
    }
    // API request latency by verb (`rest_client_request_duration_seconds`).
    let builder = kube::client::ClientBuilder::try_from(config).map_err(ClientError::Build)?;
    // A stalled watch ends after `watch_idle::IDLE_LIMIT` instead of kube-runtime's 605 s.
    Ok(builder
        .with_layer(&crate::watch_idle::LimitIdleWatches::default())
        .with_layer(&crate::api_metrics::TimeRequests)
        .build())
}

/// `olm-rs/<binary>/<version>`: the apiserver's audit log and metrics tell our components apart by it (the scale
/// bench counts each operator's requests this way), as OLM v0's components are told apart by theirs.
pub fn user_agent() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".into());
    format!("olm-rs/{binary}/{}", env!("CARGO_PKG_VERSION"))
}
