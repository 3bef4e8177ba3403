//! Acting as a ServiceAccount: a kube [`Client`] that sends every request of the operator's own client with the
//! `Impersonate-User: system:serviceaccount:<ns>:<name>` header, so the API server authorizes it with that
//! account's permissions (its groups `system:serviceaccounts` and `system:serviceaccounts:<ns>` are added by the
//! API server itself). Used for OLM's scoped installs (an OperatorGroup's `spec.serviceAccountName`).
//!
//! The impersonating client wraps the operator's client as a tower service: it shares its connections, its
//! credentials and its layers (request metrics, warning counts, user agent), and is cheap to build per use. The
//! operator's identity needs `impersonate` on `serviceaccounts` (deploy/rbac says where and why).

use http::{HeaderName, HeaderValue, Request, Response};
use kube::Client;
use kube::client::Body;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The header the API server reads the impersonated user name from.
const IMPERSONATE_USER: HeaderName = HeaderName::from_static("impersonate-user");
/// Impersonation headers a request must not carry besides ours (a user or group set elsewhere).
const OTHER_IMPERSONATION: [HeaderName; 3] = [
    HeaderName::from_static("impersonate-group"),
    HeaderName::from_static("impersonate-uid"),
    HeaderName::from_static("impersonate-user"),
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImpersonateError {
    #[error("invalid service account reference {namespace:?}/{name:?}: {why}")]
    InvalidReference {
        namespace: String,
        name: String,
        why: &'static str,
    },
}

/// Kubernetes' user name of a ServiceAccount (`serviceaccount.MakeUsername`).
pub fn service_account_user(namespace: &str, name: &str) -> Result<String, ImpersonateError> {
    let invalid = |why| ImpersonateError::InvalidReference {
        namespace: namespace.to_string(),
        name: name.to_string(),
        why,
    };
    if namespace.is_empty() || name.is_empty() {
        return Err(invalid("namespace and name are both required"));
    }
    if namespace.contains(':') || name.contains(':') {
        // The API server splits the user name on ':'; such a name would impersonate someone else.
        return Err(invalid("a name may not contain ':'"));
    }
    let user = format!("system:serviceaccount:{namespace}:{name}");
    if HeaderValue::from_str(&user).is_err() {
        return Err(invalid("not a valid HTTP header value"));
    }
    Ok(user)
}

/// A client acting as the ServiceAccount `namespace/name`, over `base`'s connections.
pub fn as_service_account(
    base: &Client,
    namespace: &str,
    name: &str,
) -> Result<Client, ImpersonateError> {
    let user = service_account_user(namespace, name)?;
    let value = HeaderValue::from_str(&user).map_err(|_| ImpersonateError::InvalidReference {
        namespace: namespace.to_string(),
        name: name.to_string(),
        why: "not a valid HTTP header value",
    })?;
    let service = AsUser {
        base: base.clone(),
        user: value,
    };
    Ok(Client::new(service, namespace))
}

/// The tower service under the impersonating client: sets the header, then sends through the base client.
#[derive(Clone)]
struct AsUser {
    base: Client,
    user: HeaderValue,
}

type Sent = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

impl tower::Service<Request<Body>> for AsUser {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Sent;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        // The base client's own buffer applies backpressure when `send` is awaited.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Sent {
        let headers = request.headers_mut();
        for h in OTHER_IMPERSONATION {
            headers.remove(h);
        }
        headers.insert(IMPERSONATE_USER, self.user.clone());
        let base = self.base.clone();
        Box::pin(async move { base.send(request).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use rstest::rstest;
    use std::sync::{Arc, Mutex};

    #[rstest]
    #[case::a_service_account("ns", "deployer", Ok("system:serviceaccount:ns:deployer"))]
    #[case::no_name("ns", "", Err("namespace and name are both required"))]
    #[case::no_namespace("", "deployer", Err("namespace and name are both required"))]
    #[case::a_colon_would_name_another_user("ns", "a:b", Err("a name may not contain ':'"))]
    #[case::a_newline_is_no_header("ns", "a\nb", Err("not a valid HTTP header value"))]
    fn the_user_name_of_a_service_account(
        #[case] namespace: &str,
        #[case] name: &str,
        #[case] want: Result<&str, &'static str>,
    ) {
        let got = service_account_user(namespace, name).map_err(|e| match e {
            ImpersonateError::InvalidReference { why, .. } => why,
        });
        assert_eq!(got.as_deref().map_err(|e| *e), want);
    }

    /// The impersonation headers (name, value) of each request, in order.
    type Seen = Vec<Vec<(String, String)>>;

    /// A base "API server" that records the impersonation headers of each request and answers 404.
    #[derive(Clone, Default)]
    struct Recorder {
        seen: Arc<Mutex<Seen>>,
    }

    impl tower::Service<Request<Body>> for Recorder {
        type Response = Response<Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Response<Body>, std::convert::Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
            let headers: Vec<(String, String)> = request
                .headers()
                .iter()
                .filter(|(k, _)| k.as_str().starts_with("impersonate-"))
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
                .collect();
            self.seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(headers);
            let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"nope"}"#;
            let mut response = Response::new(Body::from(body.to_vec()));
            *response.status_mut() = http::StatusCode::NOT_FOUND;
            std::future::ready(Ok(response))
        }
    }

    #[tokio::test]
    async fn requests_through_the_scoped_client_carry_the_account_and_the_base_client_does_not() {
        let recorder = Recorder::default();
        let base = Client::new(recorder.clone(), "default");
        let scoped = as_service_account(&base, "ns", "deployer").expect("valid account");
        let get = |client: Client| async move {
            kube::Api::<ConfigMap>::namespaced(client, "ns")
                .get_opt("x")
                .await
        };
        assert!(matches!(get(scoped).await, Ok(None)));
        assert!(matches!(get(base).await, Ok(None)));
        let seen = recorder
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        assert_eq!(
            seen,
            vec![
                vec![(
                    "impersonate-user".to_string(),
                    "system:serviceaccount:ns:deployer".to_string()
                )],
                vec![],
            ]
        );
    }
}
