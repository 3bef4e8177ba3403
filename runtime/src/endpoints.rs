//! The HTTP endpoints of an operator: `/healthz` (the process serves and its actor thread runs:
//! [`crate::heartbeat`]), `/readyz` (every watch has listed once;
//! a standby replica, waiting for the leader Lease, is ready too: it is healthy and ready to take over),
//! `/metrics` (Prometheus text format, OLM's metric names), `/debug/actors` (live object actors per kind, JSON)
//! and `/debug/journal` (the registries' routing journal, MessagePack). Every path but the probes is checked
//! by [`crate::endpoint_auth`] first (`--metrics-auth`); with `--metrics-bind-address` the probes and the rest
//! are served on two addresses ([`Surface`]).

use crate::endpoint_auth::{EndpointAuth, PathClass, Verdict, classify};
use crate::journal::SharedJournal;
use crate::leader::Role;
use crate::metrics::Metrics;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What the endpoints read. Registries started after the endpoints (once this replica leads) add their
/// journal and synced flag to the shared lists.
#[derive(Clone)]
pub struct EndpointState {
    pub metrics: Metrics,
    pub journals: Arc<Mutex<Vec<SharedJournal>>>,
    /// Each flag turns true when one watch has routed its first full list.
    pub synced: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
    pub role: watch::Receiver<Role>,
    /// Who may read what is not a probe.
    pub auth: Arc<EndpointAuth>,
    /// The actor thread's heartbeat: `/healthz` fails once it is silent past `heartbeat::STALL_LIMIT`.
    pub heartbeat: crate::heartbeat::Heartbeat,
}

/// Which endpoints one address serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// Probes, metrics and debug endpoints.
    All,
    /// `/healthz` and `/readyz` only (the metrics and debug endpoints are on `--metrics-bind-address`).
    Probes,
}

enum Readiness {
    Ready,
    Standby,
    Syncing,
}

impl EndpointState {
    fn readiness(&self) -> Readiness {
        if *self.role.borrow() == Role::Candidate {
            return Readiness::Standby;
        }
        let synced = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
        if !synced.is_empty() && synced.iter().all(|f| f.load(Ordering::Acquire)) {
            Readiness::Ready
        } else {
            Readiness::Syncing
        }
    }

    /// Answer a request on `surface`: the probes to anyone, the rest once [`EndpointAuth`] allows it.
    async fn handle(
        &self,
        surface: Surface,
        path: &str,
        authorization: Option<&str>,
    ) -> Response<Full<Bytes>> {
        if surface == Surface::Probes && classify(path) != PathClass::Probe {
            return text(StatusCode::NOT_FOUND, "not found".into());
        }
        match self.auth.check(path, authorization).await {
            Verdict::Serve => self.respond(path),
            Verdict::Unauthenticated => {
                let mut response = text(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: a bearer token the API server accepts is required".into(),
                );
                response.headers_mut().insert(
                    hyper::header::WWW_AUTHENTICATE,
                    hyper::header::HeaderValue::from_static("Bearer realm=\"olm-rs\""),
                );
                response
            }
            Verdict::Forbidden => text(
                StatusCode::FORBIDDEN,
                format!("Forbidden: this user may not get the non-resource URL {path}"),
            ),
            Verdict::Unavailable | Verdict::Authenticate | Verdict::Authorize => text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the API server could not review this request".into(),
            ),
        }
    }

    fn respond(&self, path: &str) -> Response<Full<Bytes>> {
        match path {
            "/healthz" if self.heartbeat.stalled() => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the actor thread has not run for {:?}",
                    self.heartbeat.silent_for()
                ),
            ),
            "/healthz" => text(StatusCode::OK, "ok".into()),
            "/readyz" => match self.readiness() {
                Readiness::Ready => text(StatusCode::OK, "ready".into()),
                Readiness::Standby => text(
                    StatusCode::OK,
                    "standby: another replica holds the leader Lease".into(),
                ),
                Readiness::Syncing => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "watches not synced yet".into(),
                ),
            },
            "/metrics" => match self.metrics.encode() {
                Ok(body) => text(StatusCode::OK, body),
                Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("metrics: {e}")),
            },
            "/debug/actors" => match serde_json::to_string(&self.metrics.actor_counts()) {
                Ok(body) => with_type(StatusCode::OK, "application/json", body.into_bytes()),
                Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("actors: {e}")),
            },
            "/debug/journal" => {
                let mut merged = messages::msg::Journal::with_capacity(usize::MAX);
                let journals = self
                    .journals
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                for journal in &journals {
                    let guard = journal
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    merged.absorb(&guard);
                }
                match merged.to_msgpack() {
                    Ok(bytes) => with_type(StatusCode::OK, "application/msgpack", bytes),
                    Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("journal: {e}")),
                }
            }
            _ => text(StatusCode::NOT_FOUND, "not found".into()),
        }
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    with_type(
        status,
        "text/plain; version=0.0.4; charset=utf-8",
        body.into_bytes(),
    )
}

fn with_type(
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

/// Bind `addr` and serve `surface` until the process ends. Returns the bound address (port 0 picks a free one).
pub async fn serve(
    addr: SocketAddr,
    surface: Surface,
    state: EndpointState,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(conn) => conn,
                Err(error) => {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "endpoint accept failed"
                    );
                    continue;
                }
            };
            let state = state.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let state = state.clone();
                    async move {
                        let authorization = req
                            .headers()
                            .get(hyper::header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok());
                        let response = state.handle(surface, req.uri().path(), authorization).await;
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(
                        error = &error as &dyn std::error::Error,
                        "endpoint connection ended"
                    );
                }
            });
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_role(synced: &[bool], role: Role) -> EndpointState {
        let metrics = Metrics::new().expect("metrics");
        metrics.set_actor_count("Subscription", 2);
        let (_tx, role) = watch::channel(role);
        EndpointState {
            metrics,
            journals: Arc::new(Mutex::new(vec![Arc::new(Mutex::new(
                messages::msg::Journal::with_capacity(4),
            ))])),
            synced: Arc::new(Mutex::new(
                synced
                    .iter()
                    .map(|s| Arc::new(AtomicBool::new(*s)))
                    .collect(),
            )),
            role,
            auth: Arc::new(EndpointAuth::open()),
            heartbeat: crate::heartbeat::Heartbeat::default(),
        }
    }

    #[rstest::rstest]
    #[case::beating(std::time::Duration::ZERO, StatusCode::OK)]
    #[case::stuck(crate::heartbeat::STALL_LIMIT, StatusCode::SERVICE_UNAVAILABLE)]
    fn healthz_fails_once_the_actor_thread_is_stuck(
        #[case] silent: std::time::Duration,
        #[case] want: StatusCode,
    ) {
        let s = EndpointState {
            heartbeat: crate::heartbeat::Heartbeat::silent(silent),
            ..state(true)
        };
        assert_eq!(s.respond("/healthz").status(), want);
    }

    fn state(synced: bool) -> EndpointState {
        with_role(&[synced], Role::Single)
    }

    #[test]
    fn readiness_waits_for_every_watch_to_sync() {
        assert_eq!(
            state(false).respond("/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(state(true).respond("/readyz").status(), StatusCode::OK);
        assert_eq!(state(false).respond("/healthz").status(), StatusCode::OK);
    }

    #[test]
    fn a_leader_with_no_watch_started_yet_is_not_ready() {
        assert_eq!(
            with_role(&[], Role::Leader).respond("/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            with_role(&[true, false], Role::Leader)
                .respond("/readyz")
                .status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn a_standby_replica_is_ready_to_take_over() {
        let response = with_role(&[], Role::Candidate).respond("/readyz");
        assert_eq!(response.status(), StatusCode::OK);
    }

    /// A reviewer that knows no token.
    struct NoOne;

    impl crate::endpoint_auth::Reviewer for NoOne {
        fn authenticate(
            &self,
            _token: &str,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = crate::endpoint_auth::Authn> + Send>>
        {
            Box::pin(async { crate::endpoint_auth::Authn::Rejected })
        }

        fn authorize(
            &self,
            _user: &k8s_openapi::api::authentication::v1::UserInfo,
            _path: &str,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = crate::endpoint_auth::Authz> + Send>>
        {
            Box::pin(async { crate::endpoint_auth::Authz::Denied })
        }
    }

    fn checked() -> EndpointState {
        EndpointState {
            auth: Arc::new(EndpointAuth::with_reviewer(
                crate::endpoint_auth::AuthMode::Rbac,
                Arc::new(NoOne),
            )),
            ..state(true)
        }
    }

    #[rstest::rstest]
    #[case::metrics_anonymous(Surface::All, "/metrics", None, StatusCode::UNAUTHORIZED)]
    #[case::journal_anonymous(Surface::All, "/debug/journal", None, StatusCode::UNAUTHORIZED)]
    #[case::journal_with_an_unknown_token(
        Surface::All,
        "/debug/journal",
        Some("Bearer forged"),
        StatusCode::UNAUTHORIZED
    )]
    #[case::actors_anonymous(Surface::All, "/debug/actors", None, StatusCode::UNAUTHORIZED)]
    #[case::unknown_path_anonymous(Surface::All, "/nope", None, StatusCode::UNAUTHORIZED)]
    #[case::healthz_anonymous(Surface::All, "/healthz", None, StatusCode::OK)]
    #[case::readyz_anonymous(Surface::All, "/readyz", None, StatusCode::OK)]
    #[case::metrics_not_on_the_probe_address(
        Surface::Probes,
        "/metrics",
        Some("Bearer forged"),
        StatusCode::NOT_FOUND
    )]
    #[case::probe_on_the_probe_address(Surface::Probes, "/healthz", None, StatusCode::OK)]
    #[tokio::test]
    async fn what_each_caller_gets(
        #[case] surface: Surface,
        #[case] path: &str,
        #[case] authorization: Option<&str>,
        #[case] expected: StatusCode,
    ) {
        let response = checked().handle(surface, path, authorization).await;
        assert_eq!(response.status(), expected);
        if expected == StatusCode::UNAUTHORIZED {
            assert_eq!(
                response
                    .headers()
                    .get(hyper::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok()),
                Some("Bearer realm=\"olm-rs\"")
            );
            assert_eq!(
                response
                    .headers()
                    .get(hyper::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok()),
                Some("text/plain; version=0.0.4; charset=utf-8"),
                "a refusal carries no journal"
            );
        }
    }

    #[test]
    fn unknown_paths_are_not_found() {
        assert_eq!(state(true).respond("/nope").status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_server_answers_metrics_over_tcp() {
        let bound = serve(
            "127.0.0.1:0".parse().expect("addr"),
            Surface::All,
            state(true),
        )
        .await
        .expect("bind");
        let mut stream = tokio::net::TcpStream::connect(bound)
            .await
            .expect("connect");
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut body = String::new();
        stream.read_to_string(&mut body).await.expect("read");
        assert!(body.starts_with("HTTP/1.1 200"), "{body}");
        assert!(
            body.contains("olm_rs_object_actors{kind=\"Subscription\"} 2"),
            "{body}"
        );
    }
}
