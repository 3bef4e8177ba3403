//! Command-line flags both operator binaries share (flattened into each binary's own clap `Cli`).

use crate::endpoint_auth::AuthMode;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Clone, Debug)]
pub struct CommonArgs {
    /// Path to a kubeconfig. Without it: $KUBECONFIG, then the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// The namespace the operator runs in (OLM's `--namespace`).
    #[arg(long, env = "OPERATOR_NAMESPACE", default_value = "olm")]
    pub namespace: String,

    /// Comma-separated namespaces to watch; empty means all namespaces (OLM's `--watchedNamespaces`).
    #[arg(
        long = "watched-namespaces",
        alias = "watchedNamespaces",
        env = "OLM_WATCHED_NAMESPACES",
        value_delimiter = ',',
        default_value = ""
    )]
    pub watched_namespaces: Vec<String>,

    /// Address of the health, metrics and debug HTTP endpoints (OLM serves them on :8080).
    #[arg(long, env = "OLM_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,

    #[command(flatten)]
    pub endpoints: EndpointArgs,

    /// Log format on stdout.
    #[arg(long, env = "OLM_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Full resync interval in seconds (OLM's `--interval`).
    #[arg(long, env = "OLM_RESYNC_SECONDS", default_value_t = 300)]
    pub resync_seconds: u64,

    #[command(flatten)]
    pub leader: LeaderArgs,
}

/// Who may read the metrics and debug endpoints, and where they are served (every binary's endpoints: see
/// `endpoint_auth`).
#[derive(Args, Clone, Debug)]
pub struct EndpointArgs {
    /// Who may read `/metrics` and `/debug/*`: `rbac`, a caller whose bearer token the API server accepts
    /// (TokenReview) and who may `get` the path (SubjectAccessReview); `none`, anyone who reaches the port.
    #[arg(long = "metrics-auth", env = "OLM_METRICS_AUTH", value_enum, default_value_t = AuthMode::Rbac)]
    pub metrics_auth: AuthMode,

    /// Serve `/metrics` and `/debug/*` on this address instead (e.g. `127.0.0.1:8081`, loopback only); the
    /// probes stay on the health address.
    #[arg(long = "metrics-bind-address", env = "OLM_METRICS_BIND_ADDRESS")]
    pub metrics_bind_address: Option<SocketAddr>,
}

/// Leader election on a `coordination.k8s.io/v1` Lease named after the binary, in `--namespace` (see
/// `leader`). Off by default (tests, one replica); on in `deploy/`, so two replicas can run with one active.
#[derive(Args, Clone, Debug)]
pub struct LeaderArgs {
    /// Take part in leader election; watches and actors start only while this replica leads.
    #[arg(long = "leader-elect", env = "OLM_LEADER_ELECT", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enabled: bool,

    /// Name of the Lease (default: the binary's name).
    #[arg(long = "leader-elect-lease-name", env = "OLM_LEADER_ELECT_LEASE_NAME")]
    pub lease_name: Option<String>,

    /// This replica's identity in the Lease (default: $POD_NAME, else <hostname>-<pid>).
    #[arg(long = "leader-elect-identity", env = "OLM_LEADER_ELECT_IDENTITY")]
    pub identity: Option<String>,

    /// Seconds a standby waits, after it last saw the Lease change, before taking it over.
    #[arg(
        long = "leader-elect-lease-duration",
        env = "OLM_LEADER_ELECT_LEASE_DURATION",
        default_value_t = 15
    )]
    pub lease_duration_seconds: u64,

    /// Seconds a leader keeps leading without a successful renewal before it steps down (and exits).
    #[arg(
        long = "leader-elect-renew-deadline",
        env = "OLM_LEADER_ELECT_RENEW_DEADLINE",
        default_value_t = 10
    )]
    pub renew_deadline_seconds: u64,

    /// Seconds between tries to acquire or renew.
    #[arg(
        long = "leader-elect-retry-period",
        env = "OLM_LEADER_ELECT_RETRY_PERIOD",
        default_value_t = 2
    )]
    pub retry_period_seconds: u64,
}

impl CommonArgs {
    /// The namespaces to watch: `None` means the whole cluster.
    pub fn watch_scope(&self) -> Option<Vec<String>> {
        let list: Vec<String> = self
            .watched_namespaces
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if list.is_empty() { None } else { Some(list) }
    }
}

/// Flags of the `crds` subcommand both binaries have.
#[derive(Args, Clone, Debug)]
pub struct CrdsArgs {
    /// Output folder.
    #[arg(long, default_value = "deploy/crds")]
    pub out: PathBuf,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Probe {
        #[command(flatten)]
        common: CommonArgs,
    }

    #[test]
    fn watched_namespaces_accepts_olms_spelling_and_a_comma_list() {
        let probe = Probe::try_parse_from(["x", "--watchedNamespaces", "a,b"]).expect("parse");
        assert_eq!(
            probe.common.watch_scope(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn leader_election_is_off_unless_asked_for() {
        let probe = Probe::try_parse_from(["x"]).expect("parse");
        assert!(!probe.common.leader.enabled);
        let probe = Probe::try_parse_from(["x", "--leader-elect"]).expect("parse");
        assert!(probe.common.leader.enabled);
        let probe = Probe::try_parse_from(["x", "--leader-elect=false"]).expect("parse");
        assert!(!probe.common.leader.enabled);
    }

    #[test]
    fn the_metrics_are_checked_unless_turned_off() {
        let probe = Probe::try_parse_from(["x"]).expect("parse");
        assert_eq!(probe.common.endpoints.metrics_auth, AuthMode::Rbac);
        assert_eq!(probe.common.endpoints.metrics_bind_address, None);
        let probe = Probe::try_parse_from([
            "x",
            "--metrics-auth=none",
            "--metrics-bind-address=127.0.0.1:8081",
        ])
        .expect("parse");
        assert_eq!(probe.common.endpoints.metrics_auth, AuthMode::None);
        assert_eq!(
            probe.common.endpoints.metrics_bind_address,
            Some("127.0.0.1:8081".parse().expect("addr"))
        );
        assert!(Probe::try_parse_from(["x", "--metrics-auth=token"]).is_err());
    }

    #[test]
    fn no_watched_namespaces_means_the_whole_cluster() {
        let probe = Probe::try_parse_from(["x"]).expect("parse");
        assert_eq!(probe.common.watch_scope(), None);
    }
}
