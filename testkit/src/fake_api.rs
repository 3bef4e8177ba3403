//! TEST ONLY: a fake API server for actor tests without a cluster (controller-rs scenario style): a tower
//! service given to `kube::Client::new` that records every request and answers from a script of status
//! codes (a 200 echoes the request body with a new resourceVersion, answers a DELETE with a success `Status`
//! and a GET of a listed path with its list; any other code answers a `Status`). With [`FakeApi::keeping`] it
//! keeps what it is sent by path instead of echoing (POST creates, answering `409 AlreadyExists` for a name it
//! holds; GET reads; PUT replaces, `/status` only the status, `409 Conflict` for a stale resourceVersion; PATCH
//! merges (RFC 7386), `/status` only into the status; DELETE removes).

use kube::client::Body;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

/// One request the fake API received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The query string as sent (e.g. a label selector), percent-encoded.
    pub query: String,
    pub body: Value,
}

/// A path and the items a GET of it lists.
type Listed = (String, Vec<Value>);

#[derive(Clone, Default)]
pub struct FakeApi {
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
    /// The stored object a 200 to a PATCH answers with, the patch merged in (else the body is echoed).
    object: Option<Arc<Mutex<Value>>>,
    /// Paths whose GET answers a list of these items.
    lists: Arc<Mutex<Vec<Listed>>>,
    /// The objects kept, by path (see [`FakeApi::keeping`]).
    objects: Option<Arc<Mutex<BTreeMap<String, Value>>>>,
}

impl FakeApi {
    /// Answers the next requests with these codes in turn, then 200.
    pub fn new(script: impl IntoIterator<Item = u16>) -> Self {
        Self {
            seen: Arc::default(),
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            object: None,
            lists: Arc::default(),
            objects: None,
        }
    }

    /// Keep the objects sent (a small API server: create, read, replace, delete by path).
    pub fn keeping(mut self) -> Self {
        self.objects = Some(Arc::default());
        self
    }

    /// The objects kept under a collection path (e.g. `/apis/g/v1/namespaces/ns/things`).
    pub fn objects_under(&self, collection: &str) -> Vec<Value> {
        let prefix = format!("{collection}/");
        self.objects
            .iter()
            .flat_map(|o| {
                o.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .filter(|(k, _)| k.starts_with(&prefix) && !k[prefix.len()..].contains('/'))
                    .map(|(_, v)| v.clone())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Answer a GET of `path` with a list of these items.
    pub fn with_list(self, path: &str, items: Vec<Value>) -> Self {
        self.lists
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((path.to_string(), items));
        self
    }

    /// Answer a PATCH with this object, the patch merged in (a merge patch, as the API server does).
    pub fn with_object(mut self, object: Value) -> Self {
        self.object = Some(Arc::new(Mutex::new(object)));
        self
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn client(&self) -> kube::Client {
        let me = self.clone();
        let service = tower::service_fn(move |req: http::Request<Body>| {
            let me = me.clone();
            async move {
                let method = req.method().to_string();
                let path = req.uri().path().trim_end_matches('/').to_string();
                let query = req.uri().query().unwrap_or_default().to_string();
                let bytes = http_body_util::BodyExt::collect(req.into_body())
                    .await
                    .map(|c| c.to_bytes())
                    .unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let code = me
                    .script
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front()
                    .unwrap_or(200);
                let n = {
                    let mut seen = me.seen.lock().unwrap_or_else(PoisonError::into_inner);
                    seen.push(Seen {
                        method: method.clone(),
                        path: path.clone(),
                        query,
                        body: body.clone(),
                    });
                    seen.len()
                };
                let listed = me
                    .lists
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, items)| items.clone());
                let (code, answer) = if code != 200 {
                    (code, status(code))
                } else if let Some(objects) = &me.objects {
                    let mut objects = objects.lock().unwrap_or_else(PoisonError::into_inner);
                    keep(&mut objects, &method, &path, body, n)
                } else if method == "DELETE" {
                    (
                        200,
                        json!({"apiVersion": "v1", "kind": "Status", "status": "Success", "code": 200}),
                    )
                } else if let ("GET", Some(items)) = (method.as_str(), listed) {
                    (
                        200,
                        json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": format!("rv-{n}")}, "items": items}),
                    )
                } else {
                    let mut echo = match (&me.object, method.as_str()) {
                        (Some(object), "PATCH") => {
                            let mut stored = object.lock().unwrap_or_else(PoisonError::into_inner);
                            merge(&mut stored, &body);
                            stored.clone()
                        }
                        _ => body,
                    };
                    echo["metadata"]["resourceVersion"] = json!(format!("rv-{n}"));
                    (code, echo)
                };
                let response = http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&answer).unwrap_or_default()))
                    .unwrap_or_else(|_| http::Response::new(Body::empty()));
                Ok::<_, Infallible>(response)
            }
        });
        kube::Client::new(service, "default")
    }
}

/// A `Status` answer with the reason the apiserver gives for `code`.
fn status(code: u16) -> Value {
    let reason = match code {
        404 => "NotFound",
        409 => "Conflict",
        _ => "InternalError",
    };
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code,
           "reason": reason, "message": "scripted"})
}

/// One request to a keeping fake: the code and body of its answer. `n` numbers resourceVersions and
/// `generateName` suffixes.
fn keep(
    objects: &mut BTreeMap<String, Value>,
    method: &str,
    path: &str,
    mut body: Value,
    n: usize,
) -> (u16, Value) {
    let (object_path, status_only) = match path.strip_suffix("/status") {
        Some(p) => (p.to_string(), true),
        None => (path.to_string(), false),
    };
    match method {
        "POST" => {
            let name = match body["metadata"]["name"].as_str() {
                Some(name) => name.to_string(),
                None => format!(
                    "{}{n:05}",
                    body["metadata"]["generateName"]
                        .as_str()
                        .unwrap_or_default()
                ),
            };
            let key = format!("{path}/{name}");
            if objects.contains_key(&key) {
                let mut s = status(409);
                s["reason"] = json!("AlreadyExists");
                s["message"] = json!(format!("{name} already exists"));
                return (409, s);
            }
            body["metadata"]["name"] = json!(name);
            body["metadata"]["resourceVersion"] = json!(format!("rv-{n}"));
            objects.insert(key, body.clone());
            (201, body)
        }
        "GET" => match objects.get(path) {
            Some(o) => (200, o.clone()),
            None => (404, status(404)),
        },
        "PUT" => match objects.get_mut(&object_path) {
            // Optimistic concurrency, as the apiserver: a stale resourceVersion is a conflict.
            Some(o)
                if body["metadata"]["resourceVersion"]
                    .as_str()
                    .is_some_and(|rv| Some(rv) != o["metadata"]["resourceVersion"].as_str()) =>
            {
                (409, status(409))
            }
            Some(o) => {
                if status_only {
                    o["status"] = body["status"].take();
                } else {
                    *o = body;
                }
                o["metadata"]["resourceVersion"] = json!(format!("rv-{n}"));
                (200, o.clone())
            }
            None => (404, status(404)),
        },
        "PATCH" => match objects.get_mut(&object_path) {
            Some(o) => {
                if status_only {
                    merge(&mut o["status"], &body["status"]);
                } else {
                    merge(o, &body);
                }
                o["metadata"]["resourceVersion"] = json!(format!("rv-{n}"));
                (200, o.clone())
            }
            None => (404, status(404)),
        },
        "DELETE" => match objects.remove(path) {
            Some(o) => (200, o),
            None => (404, status(404)),
        },
        _ => (405, status(405)),
    }
}

/// RFC 7386 merge patch: objects merge key by key, `null` removes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    if let Value::Object(target) = target {
        for (k, v) in patch {
            if v.is_null() {
                target.remove(k);
            } else {
                merge(target.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}
