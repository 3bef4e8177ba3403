//! The API fault proxy of the chaos runs (issue 15): a loopback HTTP server between the operators and the
//! kube-apiserver. Operators reach it through a kubeconfig naming `http://127.0.0.1:<port>` (kube 5 accepts a
//! plain-HTTP server URL); it forwards every request with the [`kube::Client`] it is given (TLS towards the
//! apiserver, and the identity the requests run as: the test's admin, or an operator's ServiceAccount token from
//! [`crate::rbac::token_client`]), streaming responses (watches included), and injects the
//! faults of [`crate::api_faults`] at their seeded rates while switched on. Every injected fault is counted by
//! kind. Loopback only: it binds 127.0.0.1.
//!
//! Like the load balancer in front of a real cluster's apiservers, it sends nothing to an apiserver that is not
//! ready: once a request cannot reach the apiserver (killed by a chaos restart), every request is answered 503
//! until the apiserver's `/readyz` says ok. A restarted apiserver serves requests before its RBAC caches are
//! filled, and would refuse the operators' own rights (403) for a moment no real cluster routes to it.

use crate::api_faults::{ApiFault, ApiFaults, RequestKind, gone_event, status_body};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = UnsyncBoxBody<Bytes, BoxError>;

struct State {
    upstream: kube::Client,
    faults: ApiFaults,
    on: AtomicBool,
    rng: Mutex<rand::rngs::StdRng>,
    counts: Mutex<BTreeMap<String, u64>>,
    /// False from a request that could not reach the apiserver until its `/readyz` answers ok.
    ready: AtomicBool,
    /// A `/readyz` probe is under way.
    probing: AtomicBool,
}

/// A running proxy; it stops when dropped.
pub struct ApiProxy {
    port: u16,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl ApiProxy {
    /// Listen on a free loopback port and forward to `upstream`'s apiserver, faults on.
    pub async fn start(upstream: kube::Client, faults: ApiFaults) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(State {
            upstream,
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(faults.seed)),
            faults,
            on: AtomicBool::new(true),
            counts: Mutex::new(BTreeMap::new()),
            ready: AtomicBool::new(true),
            probing: AtomicBool::new(false),
        });
        let st = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let st = st.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(st.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(ApiProxy { port, state, task })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Write a kubeconfig naming the proxy into `dir` and return its path.
    pub fn write_kubeconfig(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        let path = dir.join(format!("kubeconfig-proxy-{}", self.port));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: {}\n\
             users:\n- name: proxy\n  user: {{}}\ncontexts:\n- name: proxy\n  context:\n    cluster: proxy\n    user: proxy\n\
             current-context: proxy\n",
            self.url()
        );
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// Stop injecting faults (the proxy keeps forwarding).
    pub fn faults_off(&self) {
        self.state.on.store(false, Ordering::SeqCst);
    }

    /// Faults injected so far, by kind.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.state
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for ApiProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let mut r = Response::new(full(status_body(code.as_u16(), reason, message)));
    *r.status_mut() = code;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, BoxError> {
    if !st.ready.load(Ordering::SeqCst) {
        return Ok(status(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "fault proxy: no ready apiserver behind the proxy",
        ));
    }
    let kind = RequestKind::of(req.method().as_str(), req.uri().query().unwrap_or_default());
    let (fault, draw) = if st.on.load(Ordering::SeqCst) {
        let mut rng = st.rng.lock().unwrap_or_else(PoisonError::into_inner);
        let d: f64 = rng.random();
        let extra: f64 = rng.random();
        (st.faults.decide(&kind, d), extra)
    } else {
        (None, 0.0)
    };
    if let Some(f) = fault {
        *st.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(f.as_str().to_string())
            .or_insert(0) += 1;
    }
    match fault {
        Some(ApiFault::ServerError) if draw < 0.5 => {
            return Ok(status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "fault proxy: internal error",
            ));
        }
        Some(ApiFault::ServerError) => {
            return Ok(status(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                "fault proxy: the server is currently unable to handle the request",
            ));
        }
        Some(ApiFault::Throttle) => {
            let mut r = status(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                "fault proxy: too many requests, please try again later",
            );
            r.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from_static("1"),
            );
            return Ok(r);
        }
        Some(ApiFault::Conflict) => {
            return Ok(status(
                StatusCode::CONFLICT,
                "Conflict",
                "fault proxy: the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        Some(ApiFault::Drop) => return Err("fault proxy: connection dropped".into()),
        Some(ApiFault::LostAnswer) => {
            // The apiserver has applied the write once its answer's head is back; the client never sees it.
            let answer = forward(&st, req, None).await?;
            drop(answer);
            return Err("fault proxy: the write was applied, its answer lost".into());
        }
        Some(ApiFault::Gone) => {
            let mut r = Response::new(full(gone_event()));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            return Ok(r);
        }
        Some(ApiFault::Latency) => {
            let ms = (draw * st.faults.max_latency_ms as f64) as u64;
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Some(ApiFault::CutWatch) | None => {}
    }
    let cut = (fault == Some(ApiFault::CutWatch))
        .then(|| Duration::from_millis((draw * st.faults.max_cut_ms as f64) as u64));
    forward(&st, req, cut).await
}

/// How long the proxy waits for an apiserver it cannot reach to be ready before it forwards again (its requests
/// then fail as they come, and the test sees why).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The apiserver could not be reached: answer 503 from now on, and ask its `/readyz` (every 100 ms, one probe
/// at a time, for at most [`READY_WITHIN`]) until it says ok.
fn unreachable(st: &Arc<State>) {
    st.ready.store(false, Ordering::SeqCst);
    if st.probing.swap(true, Ordering::SeqCst) {
        return;
    }
    let st = st.clone();
    tokio::spawn(async move {
        let _ = crate::eventually(
            READY_WITHIN,
            "the apiserver ready behind the proxy",
            || async {
                let probe = Request::builder()
                    .uri("/readyz")
                    .body(kube::client::Body::empty())?;
                Ok(st
                    .upstream
                    .send(probe)
                    .await
                    .ok()
                    .filter(|answer| answer.status().is_success())
                    .map(|_| ()))
            },
        )
        .await;
        st.ready.store(true, Ordering::SeqCst);
        st.probing.store(false, Ordering::SeqCst);
    });
}

/// Send the request on with the upstream client and stream its answer back (cut after `cut`, if given).
async fn forward(
    st: &Arc<State>,
    req: Request<Incoming>,
    cut: Option<Duration>,
) -> Result<Response<Body>, BoxError> {
    let (parts, body) = req.into_parts();
    let bytes = body.collect().await?.to_bytes();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".to_string());
    let mut out = Request::builder().method(parts.method).uri(path);
    for (name, value) in &parts.headers {
        if [
            hyper::header::HOST,
            hyper::header::AUTHORIZATION,
            hyper::header::CONNECTION,
            hyper::header::TRANSFER_ENCODING,
        ]
        .contains(name)
        {
            continue;
        }
        out = out.header(name, value);
    }
    let out = out.body(kube::client::Body::from(bytes.to_vec()))?;
    let answer = match st.upstream.send(out).await {
        Ok(answer) => answer,
        Err(e) => {
            if matches!(e, kube::Error::HyperError(_) | kube::Error::Service(_)) {
                unreachable(st);
            }
            return Err(e.into());
        }
    };
    let (parts, body) = answer.into_parts();
    let body: Body = match cut {
        None => body.map_err(|e| Box::new(e) as BoxError).boxed_unsync(),
        Some(after) => {
            let deadline = tokio::time::Instant::now() + after;
            let frames = futures::stream::unfold(Some(body), move |state| async move {
                let mut body = state?;
                match tokio::time::timeout_at(deadline, body.frame()).await {
                    Ok(Some(Ok(frame))) => Some((Ok::<Frame<Bytes>, BoxError>(frame), Some(body))),
                    Ok(Some(Err(e))) => Some((Err(Box::new(e) as BoxError), None)),
                    // The stream ended, or the cut: end it here.
                    Ok(None) | Err(_) => None,
                }
            });
            StreamBody::new(frames).boxed_unsync()
        }
    };
    Ok(Response::from_parts(parts, body))
}
