//! The HTTPS server the aggregator proxies to: TLS with the managed serving certificate, request-header
//! authentication, a SubjectAccessReview per request, then discovery (aggregated or not, by Accept), the
//! OpenAPI v2 and v3 documents, and list, get and watch of PackageManifests (JSON, or a Table for
//! `kubectl get`), with label and field selectors.

use crate::aggregated_discovery::{self, AggregatedDiscovery, Answer};
use crate::auth::{RequestHeaderConfig, UserInfo};
use crate::authorize::{Attributes, Authorizer, forbidden_message};
use crate::conditional::{Conditions, Reply};
use crate::discovery;
use crate::openapi_service::OpenApiService;
use crate::routes::{self, Format, Route};
use crate::select::{FieldSelector, LabelSelector};
use crate::store::{PackageStore, Start, StoreEvent, catalog_ns};
use crate::table::{self, IncludeObject};
use crate::types::{API_VERSION, GROUP, LIST_KIND, PackageManifest, PackageManifestList, RESOURCE};
use futures::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status, StatusDetails};
use serde::Serialize;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

type Body = BoxBody<Bytes, Infallible>;

/// Watches end after this long unless `timeoutSeconds` says otherwise (the API server's default is 30-60 min).
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

pub struct Server {
    store: Arc<PackageStore>,
    auth: RequestHeaderConfig,
    authorizer: Authorizer,
    openapi: OpenApiService,
    discovery: AggregatedDiscovery,
}

fn full(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    r
}

fn from_reply(reply: Reply) -> Response<Body> {
    let Reply {
        status,
        headers,
        body,
    } = reply;
    let mut r = Response::new(Full::new(body).boxed());
    *r.status_mut() = status;
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            r.headers_mut().insert(name, value);
        }
    }
    r
}

fn json<T: Serialize>(value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(body) => full(StatusCode::OK, "application/json", body),
        Err(e) => status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            &e.to_string(),
            None,
        ),
    }
}

/// A `metav1.Status` error answer.
pub fn status(code: StatusCode, reason: &str, message: &str, name: Option<&str>) -> Response<Body> {
    let s = Status {
        code: Some(i32::from(code.as_u16())),
        message: Some(message.into()),
        reason: Some(reason.into()),
        status: Some("Failure".into()),
        details: name.map(|n| StatusDetails {
            name: Some(n.into()),
            group: Some(GROUP.into()),
            kind: Some(RESOURCE.into()),
            ..Default::default()
        }),
        metadata: ListMeta::default(),
    };
    let body = serde_json::to_vec(&s).unwrap_or_default();
    full(code, "application/json", body)
}

#[derive(Serialize)]
struct WatchEvent<T: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    object: T,
}

struct ListRequest {
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    name: Option<String>,
    format: Format,
    include: IncludeObject,
}

impl ListRequest {
    fn keeps(&self, m: &PackageManifest) -> bool {
        let name = m.metadata.name.as_deref().unwrap_or("");
        let ns = m.metadata.namespace.as_deref().unwrap_or("");
        self.labels.matches(m.metadata.labels.as_ref())
            && self.fields.matches(name, ns)
            && self.name.as_deref().is_none_or(|n| n == name)
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Server {
    /// The server, with its documents (OpenAPI, aggregated discovery) serialized once.
    pub fn new(
        store: Arc<PackageStore>,
        auth: RequestHeaderConfig,
        authorizer: Authorizer,
    ) -> Result<Server, serde_json::Error> {
        Ok(Server {
            store,
            auth,
            authorizer,
            openapi: OpenApiService::build(SystemTime::now())?,
            discovery: AggregatedDiscovery::build()?,
        })
    }

    pub async fn handle(
        self: Arc<Self>,
        peer: Option<Option<String>>,
        req: Request<Incoming>,
    ) -> Response<Body> {
        let query = routes::query(req.uri().query());
        let path = req.uri().path().to_string();
        let route = routes::route(&path, &query);
        if route == Route::Health {
            return full(StatusCode::OK, "text/plain", b"ok".to_vec());
        }
        let user = match self
            .auth
            .authenticate(peer.as_ref().map(|p| p.as_deref()), req.headers())
        {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(%path, error = %e, "unauthenticated request");
                return status(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized",
                    "Unauthorized",
                    None,
                );
            }
        };
        if req.method() != Method::GET {
            return status(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                &format!(
                    "the server does not allow this method on the requested resource ({} {path}): PackageManifests are read-only",
                    req.method()
                ),
                None,
            );
        }
        let attrs = match &route {
            Route::List {
                namespace, name, ..
            } => Attributes::Resource {
                namespace: namespace.clone(),
                verb: route.verb(),
                name: name.clone(),
            },
            Route::Get { namespace, name } => Attributes::Resource {
                namespace: Some(namespace.clone()),
                verb: "get",
                name: Some(name.clone()),
            },
            _ => Attributes::NonResource { path: path.clone() },
        };
        match self.authorizer.check(&user, &attrs).await {
            Ok(d) if d.allowed => {}
            Ok(d) => {
                tracing::debug!(user = %user.name, reason = %d.reason, "forbidden");
                return status(
                    StatusCode::FORBIDDEN,
                    "Forbidden",
                    &forbidden_message(&user, &attrs),
                    None,
                );
            }
            Err(e) => {
                tracing::warn!(
                    error = &e as &dyn std::error::Error,
                    "SubjectAccessReview failed"
                );
                return status(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    &format!("authorization check failed: {e}"),
                    None,
                );
            }
        }
        self.dispatch(route, &query, req.headers(), &user)
    }

    fn dispatch(
        &self,
        route: Route,
        query: &BTreeMap<String, String>,
        headers: &HeaderMap,
        _user: &UserInfo,
    ) -> Response<Body> {
        let accept = headers
            .get(hyper::header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        let conditions = Conditions::from_headers(headers);
        let format = routes::format(accept);
        let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
        match route {
            Route::Health => full(StatusCode::OK, "text/plain", b"ok".to_vec()),
            Route::ApiGroupList => match aggregated_discovery::negotiate(accept) {
                Answer::Aggregated => {
                    from_reply(self.discovery.reply(conditions.if_none_match.as_deref()))
                }
                Answer::Unaggregated => json(&discovery::api_group_list()),
            },
            Route::ApiGroup => json(&discovery::api_group()),
            Route::ResourceList => json(&discovery::api_resource_list()),
            Route::OpenApiV2 => from_reply(self.openapi.v2(accept, &conditions)),
            Route::OpenApiV3Index => from_reply(self.openapi.v3_index(&conditions)),
            Route::OpenApiV3 { path } => match self.openapi.v3_document(
                &path,
                query.get("hash").map(String::as_str),
                accept,
                &conditions,
                SystemTime::now(),
            ) {
                Some(reply) => from_reply(reply),
                None => status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "the server could not find the requested resource",
                    None,
                ),
            },
            Route::NotFound => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
                None,
            ),
            Route::Get { namespace, name } => match self.store.get(&namespace, &name) {
                Some(m) => match format {
                    Format::Table(v) => {
                        json(&table::table(vec![m], None, &v, include, now_secs(), true))
                    }
                    Format::Json => json(&m),
                },
                None => status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    &format!("{RESOURCE}.{GROUP} {name:?} not found"),
                    Some(&name),
                ),
            },
            Route::List {
                namespace,
                watch,
                name,
            } => {
                let labels = LabelSelector::parse(
                    query.get("labelSelector").map(String::as_str).unwrap_or(""),
                );
                let fields = FieldSelector::parse(
                    query.get("fieldSelector").map(String::as_str).unwrap_or(""),
                );
                let (labels, fields) = match (labels, fields) {
                    (Ok(l), Ok(f)) => (l, f),
                    (Err(e), _) => {
                        return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string(), None);
                    }
                    (_, Err(e)) => {
                        return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string(), None);
                    }
                };
                let r = ListRequest {
                    namespace,
                    labels,
                    fields,
                    name,
                    format,
                    include,
                };
                if watch {
                    let timeout = query
                        .get("timeoutSeconds")
                        .and_then(|t| t.parse().ok())
                        .map(Duration::from_secs)
                        .unwrap_or(DEFAULT_WATCH_TIMEOUT);
                    self.watch(r, query.get("resourceVersion").map(String::as_str), timeout)
                } else {
                    self.list(r)
                }
            }
        }
    }

    fn list(&self, r: ListRequest) -> Response<Body> {
        let (items, rv) = self.store.list(r.namespace.as_deref());
        let items: Vec<_> = items.into_iter().filter(|m| r.keeps(m)).collect();
        match r.format {
            Format::Table(v) => json(&table::table(
                items,
                Some(rv.to_string()),
                &v,
                r.include,
                now_secs(),
                true,
            )),
            Format::Json => json(&PackageManifestList {
                api_version: API_VERSION.into(),
                kind: LIST_KIND.into(),
                metadata: ListMeta {
                    resource_version: Some(rv.to_string()),
                    ..Default::default()
                },
                items,
            }),
        }
    }

    fn watch(&self, r: ListRequest, rv: Option<&str>, timeout: Duration) -> Response<Body> {
        let start = match Start::parse(rv) {
            Ok(s) => s,
            Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string(), None),
        };
        let sub = match self.store.subscribe(r.namespace.as_deref(), start) {
            Ok(s) => s,
            Err(e) => return status(StatusCode::GONE, "Expired", &e.to_string(), None),
        };
        let r = Arc::new(r);
        let store = self.store.clone();
        let encode = {
            let r = r.clone();
            move |event: &StoreEvent| -> Option<Bytes> {
                let ns = r.namespace.as_deref();
                if !store.visible_in(catalog_ns(event), ns) {
                    return None;
                }
                let object = PackageStore::present(&event.object, ns);
                if !r.keeps(&object) {
                    return None;
                }
                let kind = event.kind.as_str();
                let mut line = match &r.format {
                    Format::Table(v) => serde_json::to_vec(&WatchEvent {
                        kind,
                        object: table::table(vec![object], None, v, r.include, now_secs(), true),
                    }),
                    Format::Json => serde_json::to_vec(&WatchEvent { kind, object }),
                }
                .ok()?;
                line.push(b'\n');
                Some(Bytes::from(line))
            }
        };
        let backlog: Vec<Bytes> = sub.backlog.iter().filter_map(|e| encode(e)).collect();
        let seen = sub.seen;
        let live = futures::stream::unfold(sub.live, move |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(e) if e.rv <= seen => continue,
                    Ok(e) => return Some((e, rx)),
                    // A watcher too slow for the event rate, or the store is gone: end; the client lists again.
                    Err(_) => return None,
                }
            }
        })
        .filter_map(move |e| futures::future::ready(encode(&e)));
        let deadline = tokio::time::sleep(timeout);
        let stream = futures::stream::iter(backlog)
            .chain(live)
            .take_until(deadline)
            .map(|b| Ok::<_, Infallible>(Frame::data(b)));
        let mut resp = Response::new(BodyExt::boxed(StreamBody::new(stream)));
        resp.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        resp
    }
}

/// Serve HTTPS on `addr` until the process ends; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    tls: rustls::ServerConfig,
    server: Arc<Server>,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    tokio::spawn(async move {
        loop {
            let (tcp, remote) = match listener.accept().await {
                Ok(c) => c,
                Err(error) => {
                    tracing::warn!(error = &error as &dyn std::error::Error, "accept failed");
                    continue;
                }
            };
            let acceptor = acceptor.clone();
            let server = server.clone();
            tokio::spawn(async move {
                let _ = tcp.set_nodelay(true);
                let tls = match acceptor.accept(tcp).await {
                    Ok(t) => t,
                    Err(error) => {
                        tracing::debug!(%remote, error = &error as &dyn std::error::Error, "TLS handshake failed");
                        return;
                    }
                };
                let peer: Option<Option<String>> = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|certs| certs.first())
                    .map(|c| crate::der::subject_common_name(c.as_ref()));
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let server = server.clone();
                    let peer = peer.clone();
                    async move { Ok::<_, Infallible>(server.handle(peer, req).await) }
                });
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await
                {
                    tracing::debug!(%remote, error = &error as &dyn std::error::Error, "connection ended");
                }
            });
        }
    });
    Ok(bound)
}
