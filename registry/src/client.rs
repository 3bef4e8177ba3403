//! The registry client the catalog-operator uses: every `api.Registry` RPC, plus a
//! connection health state with OLM's names (IDLE, CONNECTING, READY, TRANSIENT_FAILURE,
//! SHUTDOWN) that callers can read or watch.
//!
//! tonic does not expose gRPC connectivity state, so the client derives it: a monitor task
//! probes `grpc.health.v1.Health/Check` (service `"Registry"`, as operator-registry's Go client
//! does) every `probe_interval`, and each RPC's outcome updates the state at once.

use std::time::Duration;

use tokio::sync::watch;
use tokio_stream::StreamExt;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::api;
use crate::api::registry_client::RegistryClient as RawClient;

/// gRPC connectivity states, as OLM writes them in `CatalogSource.status.connectionState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    Idle,
    Connecting,
    Ready,
    TransientFailure,
    Shutdown,
}

impl ConnectionState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionState::Idle => "IDLE",
            ConnectionState::Connecting => "CONNECTING",
            ConnectionState::Ready => "READY",
            ConnectionState::TransientFailure => "TRANSIENT_FAILURE",
            ConnectionState::Shutdown => "SHUTDOWN",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "IDLE" => Some(ConnectionState::Idle),
            "CONNECTING" => Some(ConnectionState::Connecting),
            "READY" => Some(ConnectionState::Ready),
            "TRANSIENT_FAILURE" => Some(ConnectionState::TransientFailure),
            "SHUTDOWN" => Some(ConnectionState::Shutdown),
            _ => None,
        }
    }
}

impl std::fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state after a probe or RPC outcome (pure).
pub fn next_state(current: ConnectionState, outcome: Outcome) -> ConnectionState {
    match (current, outcome) {
        (ConnectionState::Shutdown, _) => ConnectionState::Shutdown,
        (_, Outcome::Attempting) => match current {
            ConnectionState::Ready | ConnectionState::TransientFailure => current,
            ConnectionState::Idle | ConnectionState::Connecting | ConnectionState::Shutdown => {
                ConnectionState::Connecting
            }
        },
        (_, Outcome::Reached) => ConnectionState::Ready,
        (_, Outcome::Unreachable) => ConnectionState::TransientFailure,
        (_, Outcome::Closed) => ConnectionState::Shutdown,
    }
}

/// What the client just learned about the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A probe or call is starting.
    Attempting,
    /// The server answered (any status other than UNAVAILABLE counts: it is reachable).
    Reached,
    /// Transport failure, UNAVAILABLE, a deadline, or a health status other than SERVING.
    Unreachable,
    /// The client was closed.
    Closed,
}

fn outcome_of<T>(r: &Result<T, Status>) -> Outcome {
    match r {
        Ok(_) => Outcome::Reached,
        Err(s)
            if matches!(
                s.code(),
                Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled
            ) =>
        {
            Outcome::Unreachable
        }
        Err(_) => Outcome::Reached,
    }
}

#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub connect_timeout: Duration,
    /// Per-call deadline for unary RPCs and probes (tonic's timeout: it bounds the response headers only).
    pub request_timeout: Duration,
    pub probe_interval: Duration,
    /// Largest message accepted (bundles with inline manifests can pass gRPC's 4 MiB default).
    pub max_message_bytes: usize,
    /// Deadline for a whole streamed RPC (`ListBundles`, `ListPackages`), first message to last.
    pub stream_timeout: Duration,
    /// Longest wait for the next message of a stream: a server that stops mid-stream fails the call then.
    pub stream_idle_timeout: Duration,
    /// Most messages one streamed RPC may return (a 10,000-bundle catalog is far below it).
    pub max_stream_messages: usize,
    /// HTTP/2 keepalive: a ping this often, and the connection dropped when one goes unanswered for
    /// `keepalive_timeout` (a peer that vanished without closing the connection).
    pub keepalive_interval: Duration,
    pub keepalive_timeout: Duration,
    /// The catalog (`<namespace>/<name>`) every request names in [`crate::routed::CATALOG_HEADER`], for a
    /// server that serves many (catalog-operator's); None for a registry of one catalog.
    pub catalog: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            probe_interval: Duration::from_secs(10),
            max_message_bytes: 128 << 20,
            stream_timeout: Duration::from_secs(300),
            stream_idle_timeout: Duration::from_secs(30),
            max_stream_messages: 500_000,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            catalog: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid registry address {addr:?}")]
    Address {
        addr: String,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("invalid catalog name {catalog:?} (not ASCII)")]
    Catalog { catalog: String },
    #[error("{rpc} failed")]
    Rpc {
        rpc: &'static str,
        #[source]
        source: Status,
    },
    #[error("{rpc}: {problem}")]
    Stream { rpc: &'static str, problem: String },
    #[error("connection did not become {want} within {waited:?} (last state {last})")]
    StateTimeout {
        want: ConnectionState,
        last: ConnectionState,
        waited: Duration,
    },
}

impl ClientError {
    /// The gRPC status, when the server answered with an error.
    pub fn status(&self) -> Option<&Status> {
        match self {
            ClientError::Rpc { source, .. } => Some(source),
            ClientError::Address { .. }
            | ClientError::Catalog { .. }
            | ClientError::StateTimeout { .. }
            | ClientError::Stream { .. } => None,
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// Names the catalog on every request ([`ClientOptions::catalog`]).
#[derive(Clone)]
pub struct CatalogHeader(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for CatalogHeader {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut()
                .insert(crate::routed::CATALOG_HEADER, v.clone());
        }
        Ok(req)
    }
}

/// A long-lived connection to one registry.
pub struct RegistryClient {
    raw: RawClient<InterceptedService<Channel, CatalogHeader>>,
    state: watch::Sender<ConnectionState>,
    options: ClientOptions,
    monitor: tokio::task::JoinHandle<()>,
}

impl RegistryClient {
    /// Creates the client and starts the monitor. The connection is made lazily: the state
    /// starts IDLE and moves to CONNECTING with the first probe.
    pub fn connect(addr: &str, options: ClientOptions) -> Result<Self> {
        let uri = if addr.contains("://") {
            addr.to_string()
        } else {
            format!("http://{addr}")
        };
        let endpoint = Endpoint::from_shared(uri)
            .map_err(|source| ClientError::Address {
                addr: addr.to_string(),
                source,
            })?
            .connect_timeout(options.connect_timeout)
            .timeout(options.request_timeout)
            .http2_keep_alive_interval(options.keepalive_interval)
            .keep_alive_timeout(options.keepalive_timeout)
            .keep_alive_while_idle(true)
            .tcp_nodelay(true);
        let channel = endpoint.connect_lazy();
        let header = match &options.catalog {
            Some(c) => Some(
                c.parse()
                    .map_err(|_| ClientError::Catalog { catalog: c.clone() })?,
            ),
            None => None,
        };
        let raw = RawClient::with_interceptor(channel.clone(), CatalogHeader(header))
            .max_decoding_message_size(options.max_message_bytes)
            .max_encoding_message_size(options.max_message_bytes);
        let (state, _) = watch::channel(ConnectionState::Idle);
        let monitor = tokio::spawn(monitor(
            HealthClient::new(channel),
            state.clone(),
            options.clone(),
        ));
        Ok(RegistryClient {
            raw,
            state,
            options,
            monitor,
        })
    }

    pub fn state(&self) -> ConnectionState {
        *self.state.borrow()
    }

    /// A receiver that sees every state change.
    pub fn watch_state(&self) -> watch::Receiver<ConnectionState> {
        self.state.subscribe()
    }

    /// Waits until the state is `want`, or fails after `deadline`.
    pub async fn wait_for(&self, want: ConnectionState, deadline: Duration) -> Result<()> {
        let mut rx = self.state.subscribe();
        match tokio::time::timeout(deadline, rx.wait_for(|s| *s == want)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(ClientError::StateTimeout {
                want,
                last: self.state(),
                waited: deadline,
            }),
        }
    }

    /// Stops the monitor; the state becomes SHUTDOWN.
    pub fn close(&self) {
        self.monitor.abort();
        self.state
            .send_modify(|s| *s = next_state(*s, Outcome::Closed));
    }

    fn record<T>(&self, r: &Result<T, Status>) {
        let outcome = outcome_of(r);
        self.state.send_if_modified(|s| {
            let next = next_state(*s, outcome);
            let changed = next != *s;
            *s = next;
            changed
        });
    }

    async fn unary<T>(
        &self,
        rpc: &'static str,
        fut: impl Future<Output = Result<tonic::Response<T>, Status>>,
    ) -> Result<T> {
        let r = fut.await.map(tonic::Response::into_inner);
        self.record(&r);
        r.map_err(|source| ClientError::Rpc { rpc, source })
    }

    /// A streamed RPC's messages, bounded: the whole call by `stream_timeout`, the wait for each message by
    /// `stream_idle_timeout`, the count by `max_stream_messages`. A stall counts as the server unreachable.
    async fn collect<T>(
        &self,
        rpc: &'static str,
        fut: impl Future<Output = Result<tonic::Response<tonic::Streaming<T>>, Status>>,
    ) -> Result<Vec<T>> {
        self.collect_map(rpc, fut, |t| t).await
    }

    /// [`RegistryClient::collect`], keeping `map` of each message (a reader that needs a little of each).
    async fn collect_map<T, U>(
        &self,
        rpc: &'static str,
        fut: impl Future<Output = Result<tonic::Response<tonic::Streaming<T>>, Status>>,
        mut map: impl FnMut(T) -> U,
    ) -> Result<Vec<U>> {
        let o = &self.options;
        let all = async {
            let r = fut.await;
            self.record(&r);
            let mut stream = r
                .map_err(|source| ClientError::Rpc { rpc, source })?
                .into_inner();
            let mut out = Vec::new();
            loop {
                let next = tokio::time::timeout(o.stream_idle_timeout, stream.next())
                    .await
                    .map_err(|_| {
                        self.stalled();
                        ClientError::Stream {
                            rpc,
                            problem: format!(
                                "no message for {:?} after {} (the registry stopped mid-stream)",
                                o.stream_idle_timeout,
                                out.len()
                            ),
                        }
                    })?;
                let Some(item) = next else { break };
                out.push(map(item.map_err(|source| ClientError::Rpc { rpc, source })?));
                if out.len() > o.max_stream_messages {
                    return Err(ClientError::Stream {
                        rpc,
                        problem: format!("more than {} messages", o.max_stream_messages),
                    });
                }
            }
            Ok(out)
        };
        tokio::time::timeout(o.stream_timeout, all)
            .await
            .unwrap_or_else(|_| {
                self.stalled();
                Err(ClientError::Stream {
                    rpc,
                    problem: format!("not finished within {:?}", o.stream_timeout),
                })
            })
    }

    /// A stream that stalled: the connection state says the server is unreachable.
    fn stalled(&self) {
        self.record::<()>(&Err(Status::deadline_exceeded("stream stalled")));
    }

    pub async fn list_packages(&self) -> Result<Vec<String>> {
        let mut raw = self.raw.clone();
        let v = self
            .collect(
                "ListPackages",
                raw.list_packages(api::ListPackageRequest {}),
            )
            .await?;
        Ok(v.into_iter().map(|p| p.name).collect())
    }

    pub async fn get_package(&self, name: &str) -> Result<api::Package> {
        let mut raw = self.raw.clone();
        self.unary(
            "GetPackage",
            raw.get_package(api::GetPackageRequest { name: name.into() }),
        )
        .await
    }

    pub async fn get_bundle(
        &self,
        package: &str,
        channel: &str,
        csv_name: &str,
    ) -> Result<api::Bundle> {
        let mut raw = self.raw.clone();
        let req = api::GetBundleRequest {
            pkg_name: package.into(),
            channel_name: channel.into(),
            csv_name: csv_name.into(),
        };
        self.unary("GetBundle", raw.get_bundle(req)).await
    }

    /// The channel head (`GetBundleForChannel`, deprecated upstream but used by packageserver).
    #[allow(deprecated)]
    pub async fn get_bundle_for_channel(
        &self,
        package: &str,
        channel: &str,
    ) -> Result<api::Bundle> {
        let mut raw = self.raw.clone();
        let req = api::GetBundleInChannelRequest {
            pkg_name: package.into(),
            channel_name: channel.into(),
        };
        self.unary("GetBundleForChannel", raw.get_bundle_for_channel(req))
            .await
    }

    pub async fn get_bundle_that_replaces(
        &self,
        csv_name: &str,
        package: &str,
        channel: &str,
    ) -> Result<api::Bundle> {
        let mut raw = self.raw.clone();
        let req = api::GetReplacementRequest {
            csv_name: csv_name.into(),
            pkg_name: package.into(),
            channel_name: channel.into(),
        };
        self.unary("GetBundleThatReplaces", raw.get_bundle_that_replaces(req))
            .await
    }

    pub async fn get_channel_entries_that_replace(
        &self,
        csv_name: &str,
    ) -> Result<Vec<api::ChannelEntry>> {
        let mut raw = self.raw.clone();
        let req = api::GetAllReplacementsRequest {
            csv_name: csv_name.into(),
        };
        self.collect(
            "GetChannelEntriesThatReplace",
            raw.get_channel_entries_that_replace(req),
        )
        .await
    }

    pub async fn get_channel_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<api::ChannelEntry>> {
        let mut raw = self.raw.clone();
        let req = api::GetAllProvidersRequest {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: String::new(),
        };
        self.collect(
            "GetChannelEntriesThatProvide",
            raw.get_channel_entries_that_provide(req),
        )
        .await
    }

    pub async fn get_latest_channel_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<api::ChannelEntry>> {
        let mut raw = self.raw.clone();
        let req = api::GetLatestProvidersRequest {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: String::new(),
        };
        self.collect(
            "GetLatestChannelEntriesThatProvide",
            raw.get_latest_channel_entries_that_provide(req),
        )
        .await
    }

    pub async fn get_default_bundle_that_provides(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<api::Bundle> {
        let mut raw = self.raw.clone();
        let req = api::GetDefaultProviderRequest {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: String::new(),
        };
        self.unary(
            "GetDefaultBundleThatProvides",
            raw.get_default_bundle_that_provides(req),
        )
        .await
    }

    /// Every bundle, read to the end (what OLM's resolver does).
    pub async fn list_bundles(&self) -> Result<Vec<api::Bundle>> {
        let mut raw = self.raw.clone();
        self.collect("ListBundles", raw.list_bundles(api::ListBundlesRequest {}))
            .await
    }

    /// ListBundles keeping `map` of each bundle, for callers that do not want whole bundles in memory; bounded
    /// as [`RegistryClient::list_bundles`] is.
    pub async fn list_bundles_mapped<U>(
        &self,
        map: impl FnMut(api::Bundle) -> U,
    ) -> Result<Vec<U>> {
        let mut raw = self.raw.clone();
        self.collect_map(
            "ListBundles",
            raw.list_bundles(api::ListBundlesRequest {}),
            map,
        )
        .await
    }

    pub fn options(&self) -> &ClientOptions {
        &self.options
    }
}

impl Drop for RegistryClient {
    fn drop(&mut self) {
        self.monitor.abort();
    }
}

async fn probe(health: &mut HealthClient<Channel>, timeout: Duration) -> Outcome {
    let req = tonic_health::pb::HealthCheckRequest {
        service: "Registry".into(),
    };
    match tokio::time::timeout(timeout, health.check(req)).await {
        Ok(Ok(r)) if r.get_ref().status == ServingStatus::Serving as i32 => Outcome::Reached,
        Ok(Ok(_)) | Ok(Err(_)) | Err(_) => Outcome::Unreachable,
    }
}

async fn monitor(
    mut health: HealthClient<Channel>,
    state: watch::Sender<ConnectionState>,
    options: ClientOptions,
) {
    let apply = |outcome| {
        state.send_if_modified(|s| {
            let next = next_state(*s, outcome);
            let changed = next != *s;
            *s = next;
            changed
        });
    };
    loop {
        apply(Outcome::Attempting);
        apply(probe(&mut health, options.request_timeout).await);
        if *state.borrow() == ConnectionState::Shutdown {
            return;
        }
        tokio::time::sleep(options.probe_interval).await;
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use ConnectionState::*;
    use rstest::rstest;

    #[rstest]
    #[case::first_attempt_from_idle_is_connecting(Idle, Outcome::Attempting, Connecting)]
    #[case::a_ready_connection_stays_ready_while_probing(Ready, Outcome::Attempting, Ready)]
    #[case::an_answer_makes_it_ready(Connecting, Outcome::Reached, Ready)]
    #[case::a_failure_makes_it_transient_failure(Ready, Outcome::Unreachable, TransientFailure)]
    #[case::recovery_after_failure_is_ready(TransientFailure, Outcome::Reached, Ready)]
    #[case::closing_is_shutdown(Ready, Outcome::Closed, Shutdown)]
    #[case::nothing_revives_a_shut_down_client(Shutdown, Outcome::Reached, Shutdown)]
    fn connection_state_follows_outcomes(
        #[case] from: ConnectionState,
        #[case] outcome: Outcome,
        #[case] want: ConnectionState,
    ) {
        assert_eq!(next_state(from, outcome), want);
    }

    #[rstest]
    #[case::idle(Idle)]
    #[case::connecting(Connecting)]
    #[case::ready(Ready)]
    #[case::transient_failure(TransientFailure)]
    #[case::shutdown(Shutdown)]
    fn state_names_round_trip(#[case] s: ConnectionState) {
        assert_eq!(ConnectionState::from_wire(s.as_str()), Some(s));
    }
}
