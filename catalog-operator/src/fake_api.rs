//! TEST ONLY: a fake API server for actor tests without a cluster (controller-rs scenario style): a tower
//! service given to `kube::Client::new` that records every request and answers from a script of status
//! codes (a 200 echoes the request body with a new resourceVersion, answers a DELETE with a success `Status`
//! and a GET of a listed path with its list; any other code answers a `Status`).

use kube::client::Body;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

/// One request the fake API received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
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
}

impl FakeApi {
    /// Answers the next requests with these codes in turn, then 200.
    pub fn new(script: impl IntoIterator<Item = u16>) -> Self {
        Self {
            seen: Arc::default(),
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            object: None,
            lists: Arc::default(),
        }
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
                let path = req.uri().path().to_string();
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
                let answer = if code == 200 && method == "DELETE" {
                    json!({"apiVersion": "v1", "kind": "Status", "status": "Success", "code": 200})
                } else if let (200, "GET", Some(items)) = (code, method.as_str(), listed) {
                    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": format!("rv-{n}")}, "items": items})
                } else if code == 200 {
                    let mut echo = match (&me.object, method.as_str()) {
                        (Some(object), "PATCH") => {
                            let mut stored = object.lock().unwrap_or_else(PoisonError::into_inner);
                            merge(&mut stored, &body);
                            stored.clone()
                        }
                        _ => body,
                    };
                    echo["metadata"]["resourceVersion"] = json!(format!("rv-{n}"));
                    echo
                } else {
                    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code,
                           "reason": if code == 409 { "Conflict" } else { "InternalError" }, "message": "scripted"})
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
