//! TEST ONLY: the webhook server of the full-cluster proofs. It serves HTTPS on `:$WEBHOOK_PORT` (default 9443)
//! with the pair OLM mounts at `/tmp/k8s-webhook-server/serving-certs/tls.{crt,key}` (read again for every
//! connection, so a rotated certificate is used without a restart; a pair that does not read whole, as while
//! the kubelet swaps the Secret's files, leaves the last good one in use). It answers on any path, by what the
//! request carries, so it can stand in for a real operator whose image cannot be pulled offline (the paths are
//! that operator's CSV's `webhookPath`s):
//! - a ConversionReview: every object gets the desired `apiVersion` and the annotation
//!   `olm-rs.io/converted-by: test-webhook`; `spec.color` (v1) ⇄ `spec.colour` (v2);
//! - an AdmissionReview on a path that starts with `/mutate`: allowed, with a JSON patch that adds the annotation
//!   `olm-rs.io/mutated-by: test-webhook` (the proof that the API server called the mutating webhook);
//! - any other AdmissionReview: objects whose `spec.deny` is true or whose label `olm-rs.io/deny` is `"true"`
//!   are denied with a message (a label, because a real CRD's schema prunes an unknown `spec.deny`);
//! - `GET /healthz`: 200, for the readiness probe.
//!
//! On SIGTERM it keeps serving for `SHUTDOWN_DELAY_SECONDS` (default 5), as operator authors do with a
//! preStop delay: the pod leaves the Service's endpoints only after the kubelet got the delete, and the API
//! server may still route a request to it meanwhile. Then it stops accepting, lets the requests in flight
//! finish, and exits.

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

const CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

fn tls_config(dir: &str) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(format!("{dir}/tls.crt"))
        .context("read tls.crt")?
        .collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/tls.key")).context("read tls.key")?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)?;
    Ok(Arc::new(config))
}

/// AdmissionReview → response: deny when `spec.deny` is true.
fn validate(review: &Value) -> Value {
    let request = &review["request"];
    let object = &request["object"];
    let by_spec = object["spec"]["deny"].as_bool() == Some(true);
    let by_label = object["metadata"]["labels"]["olm-rs.io/deny"].as_str() == Some("true");
    let deny = by_spec || by_label;
    let mut response = json!({"uid": request["uid"], "allowed": !deny});
    if deny {
        let why = if by_spec {
            "spec.deny is true"
        } else {
            "label olm-rs.io/deny is \"true\""
        };
        response["status"] =
            json!({"code": 403, "message": format!("denied by the test webhook: {why}")});
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// AdmissionReview → response: allowed, patched with the annotation `olm-rs.io/mutated-by: test-webhook`.
fn mutate(review: &Value) -> Value {
    use base64::Engine;
    let request = &review["request"];
    let has_annotations = request["object"]["metadata"]["annotations"].is_object();
    let patch = if has_annotations {
        json!([{"op": "add", "path": "/metadata/annotations/olm-rs.io~1mutated-by", "value": "test-webhook"}])
    } else {
        json!([{"op": "add", "path": "/metadata/annotations", "value": {"olm-rs.io/mutated-by": "test-webhook"}}])
    };
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "response": {"uid": request["uid"], "allowed": true, "patchType": "JSONPatch", "patch": patch}})
}

/// ConversionReview → response: `spec.color` (v1) ⇄ `spec.colour` (v2).
fn convert(review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let to_v2 = desired.ends_with("/v2");
    let converted: Vec<Value> = request["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut o| {
            o["apiVersion"] = json!(desired);
            // A conversion may change labels and annotations: mark the object, the proof that it went through here.
            if !o["metadata"]["annotations"].is_object() {
                o["metadata"]["annotations"] = json!({});
            }
            o["metadata"]["annotations"]["olm-rs.io/converted-by"] = json!("test-webhook");
            if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                let (from, to) = if to_v2 {
                    ("color", "colour")
                } else {
                    ("colour", "color")
                };
                if let Some(v) = spec.remove(from) {
                    spec.insert(to.into(), v);
                }
            }
            o
        })
        .collect();
    json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
           "response": {"uid": request["uid"], "convertedObjects": converted, "result": {"status": "Success"}}})
}

async fn handle(req: Request<Incoming>) -> anyhow::Result<Response<Full<Bytes>>> {
    let path = req.uri().path().to_string();
    if path == "/healthz" {
        return Ok(Response::new(Full::new(Bytes::from_static(b"ok"))));
    }
    let body = req.into_body().collect().await?.to_bytes();
    let review: Value = serde_json::from_slice(&body)?;
    let answer = match (review["kind"].as_str(), path.starts_with("/mutate")) {
        (Some("ConversionReview"), _) => convert(&review),
        (Some("AdmissionReview"), true) => mutate(&review),
        (Some("AdmissionReview"), false) => validate(&review),
        _ => {
            let mut r = Response::new(Full::new(Bytes::from_static(
                b"neither an AdmissionReview nor a ConversionReview",
            )));
            *r.status_mut() = StatusCode::BAD_REQUEST;
            return Ok(r);
        }
    };
    let mut response = Response::new(Full::new(Bytes::from(serde_json::to_vec(&answer)?)));
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// Serve one accepted connection until it ends or `stop` says so (then finish the request in flight).
async fn serve(
    stream: tokio::net::TcpStream,
    config: Arc<rustls::ServerConfig>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    {
        let tls = match tokio_rustls::TlsAcceptor::from(config).accept(stream).await {
            Ok(tls) => tls,
            Err(e) => return eprintln!("TLS handshake: {e}"),
        };
        let service = hyper::service::service_fn(|req| async move {
            handle(req).await.or_else(|e| {
                let mut r = Response::new(Full::new(Bytes::from(format!("{e:#}"))));
                *r.status_mut() = StatusCode::BAD_REQUEST;
                Ok::<_, std::convert::Infallible>(r)
            })
        });
        let io = hyper_util::rt::TokioIo::new(tls);
        let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
        tokio::pin!(conn);
        let ended = tokio::select! {
            r = conn.as_mut() => Some(r),
            _ = stop.wait_for(|s| *s) => None,
        };
        let served = match ended {
            Some(r) => r,
            None => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        };
        if let Err(e) = served {
            eprintln!("connection: {e}");
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::var("CERT_DIR").unwrap_or_else(|_| CERT_DIR.into());
    let delay = std::env::var("SHUTDOWN_DELAY_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(5);
    let port = std::env::var("WEBHOOK_PORT")
        .ok()
        .and_then(|s| s.trim().parse::<u16>().ok())
        .unwrap_or(9443);
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", port)).await?;
    eprintln!("test-webhook listening on :{port} with the pair in {dir}");
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    // Until SIGTERM, then for the delay: accept and serve.
    let drain = tokio::time::sleep(std::time::Duration::from_secs(365 * 24 * 3600));
    tokio::pin!(drain);
    let mut terminating = false;
    let mut last_good: Option<Arc<rustls::ServerConfig>> = None;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted?;
                // A pair read while the kubelet swaps the Secret's files may mix the old certificate with
                // the new key: serve with the last good pair then (it is still trusted during a rotation).
                match tls_config(&dir) {
                    Ok(config) => last_good = Some(config),
                    Err(e) => eprintln!("serving certificate not read ({e:#}); using the last one read"),
                }
                match &last_good {
                    Some(config) => {
                        connections.spawn(serve(stream, config.clone(), stopped.clone()));
                    }
                    None => eprintln!("no serving certificate yet: connection dropped"),
                }
            }
            _ = sigterm.recv(), if !terminating => {
                eprintln!("SIGTERM: serving {delay} s more before shutting down");
                terminating = true;
                drain.as_mut().reset(tokio::time::Instant::now() + std::time::Duration::from_secs(delay));
            }
            _ = &mut drain, if terminating => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let _ = stop.send(true);
    let open = connections.len();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    eprintln!("test-webhook: stopped ({open} connections were open)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deny_spec_is_denied_and_others_allowed() {
        let review =
            |deny: bool| json!({"request": {"uid": "u1", "object": {"spec": {"deny": deny}}}});
        assert_eq!(validate(&review(true))["response"]["allowed"], json!(false));
        assert_eq!(validate(&review(false))["response"]["allowed"], json!(true));
        assert_eq!(validate(&review(false))["response"]["uid"], json!("u1"));
        let labelled = json!({"request": {"uid": "u2", "object": {"metadata": {"labels": {"olm-rs.io/deny": "true"}}}}});
        assert_eq!(validate(&labelled)["response"]["allowed"], json!(false));
    }

    #[test]
    fn a_mutation_adds_the_annotation_with_or_without_annotations() {
        use base64::Engine;
        for (object, op_path) in [
            (json!({"metadata": {}}), "/metadata/annotations"),
            (
                json!({"metadata": {"annotations": {"a": "b"}}}),
                "/metadata/annotations/olm-rs.io~1mutated-by",
            ),
        ] {
            let answer = mutate(&json!({"request": {"uid": "u", "object": object}}));
            assert_eq!(answer["response"]["allowed"], json!(true));
            let patch = answer["response"]["patch"].as_str().unwrap_or_default();
            let patch: Value = serde_json::from_slice(
                &base64::engine::general_purpose::STANDARD
                    .decode(patch)
                    .unwrap_or_default(),
            )
            .unwrap_or_default();
            assert_eq!(patch[0]["path"], json!(op_path));
        }
    }

    #[test]
    fn colour_and_color_convert_both_ways() {
        let review = |to: &str, spec: Value| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "request": {"uid": "u", "desiredAPIVersion": to,
                   "objects": [{"apiVersion": "x/v1", "kind": "Widget", "spec": spec}]}})
        };
        let up = convert(&review("x/v2", json!({"color": "red"})));
        assert_eq!(
            up["response"]["convertedObjects"][0]["metadata"]["annotations"]["olm-rs.io/converted-by"],
            json!("test-webhook")
        );
        assert_eq!(
            up["response"]["convertedObjects"][0]["spec"],
            json!({"colour": "red"})
        );
        assert_eq!(
            up["response"]["convertedObjects"][0]["apiVersion"],
            json!("x/v2")
        );
        let down = convert(&review("x/v1", json!({"colour": "blue"})));
        assert_eq!(
            down["response"]["convertedObjects"][0]["spec"],
            json!({"color": "blue"})
        );
    }
}
