//! Request-header authentication, as every aggregated API server does it: the API server proxies a user's
//! request over TLS with its front-proxy client certificate, which must chain to the request-header client CA
//! (checked by rustls during the handshake) and, when `requestheader-allowed-names` is not empty, carry one of
//! those names as its CN; the user is then read from the configured headers (`X-Remote-User`,
//! `X-Remote-Group`, `X-Remote-Extra-<key>`). The CA, names and headers come from
//! `kube-system/extension-apiserver-authentication`, which the API server publishes from its flags.

use crate::routes::unescape;
use hyper::HeaderMap;
use std::collections::BTreeMap;

pub const AUTH_CONFIG_MAP_NAMESPACE: &str = "kube-system";
pub const AUTH_CONFIG_MAP: &str = "extension-apiserver-authentication";
const AUTHENTICATED: &str = "system:authenticated";

#[derive(Clone, Debug, PartialEq)]
pub struct RequestHeaderConfig {
    pub client_ca_pem: String,
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_prefixes: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error(
        "{AUTH_CONFIG_MAP_NAMESPACE}/{AUTH_CONFIG_MAP} has no requestheader-client-ca-file: the API server runs without --requestheader-client-ca-file, so it cannot proxy to aggregated API servers"
    )]
    NoClientCa,
    #[error(
        "{AUTH_CONFIG_MAP_NAMESPACE}/{AUTH_CONFIG_MAP} key {key} is not a JSON list of strings: {value:?}"
    )]
    BadList { key: &'static str, value: String },
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AuthError {
    #[error("no client certificate signed by the request-header CA was presented")]
    NoClientCertificate,
    #[error("client certificate CN {0:?} is not one of requestheader-allowed-names")]
    NameNotAllowed(String),
    #[error("no user in the request headers")]
    NoUser,
}

fn list(
    data: &BTreeMap<String, String>,
    key: &'static str,
    default: &[&str],
) -> Result<Vec<String>, ConfigError> {
    match data.get(key) {
        None => Ok(default.iter().map(|s| s.to_string()).collect()),
        Some(v) if v.trim().is_empty() => Ok(Vec::new()),
        Some(v) => serde_json::from_str(v).map_err(|_| ConfigError::BadList {
            key,
            value: v.clone(),
        }),
    }
}

impl RequestHeaderConfig {
    /// From the ConfigMap's data.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let client_ca_pem = data
            .get("requestheader-client-ca-file")
            .filter(|v| !v.trim().is_empty())
            .ok_or(ConfigError::NoClientCa)?
            .clone();
        Ok(RequestHeaderConfig {
            client_ca_pem,
            allowed_names: list(data, "requestheader-allowed-names", &[])?,
            username_headers: list(data, "requestheader-username-headers", &["X-Remote-User"])?,
            group_headers: list(data, "requestheader-group-headers", &["X-Remote-Group"])?,
            extra_prefixes: list(
                data,
                "requestheader-extra-headers-prefix",
                &["X-Remote-Extra-"],
            )?,
        })
    }

    /// The user of a request whose TLS peer presented a certificate verified against the CA, with `peer_cn` its
    /// subject CN (`None`: no certificate).
    pub fn authenticate(
        &self,
        peer: Option<Option<&str>>,
        headers: &HeaderMap,
    ) -> Result<UserInfo, AuthError> {
        let cn = peer.ok_or(AuthError::NoClientCertificate)?;
        if !self.allowed_names.is_empty() {
            let cn = cn.unwrap_or("");
            if !self.allowed_names.iter().any(|n| n == cn) {
                return Err(AuthError::NameNotAllowed(cn.to_string()));
            }
        }
        let values = |name: &str| {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let name = self
            .username_headers
            .iter()
            .flat_map(|h| values(h))
            .find(|v| !v.is_empty())
            .ok_or(AuthError::NoUser)?;
        let mut groups: Vec<String> = self.group_headers.iter().flat_map(|h| values(h)).collect();
        // As generic API servers' authenticated-group adder: every authenticated user is in system:authenticated
        // (the aggregator's own requests, e.g. for /openapi/v2, carry no group header at all).
        if name != "system:anonymous" && !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_string());
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let header = header.as_str();
            for prefix in &self.extra_prefixes {
                let prefix = prefix.to_ascii_lowercase();
                if let Some(key) = header.strip_prefix(&prefix)
                    && let Ok(value) = value.to_str()
                {
                    extra
                        .entry(unescape(key, false).to_ascii_lowercase())
                        .or_default()
                        .push(value.to_string());
                }
            }
        }
        Ok(UserInfo {
            name,
            groups,
            extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn config(allowed: &str) -> RequestHeaderConfig {
        let data = BTreeMap::from([
            (
                "requestheader-client-ca-file".to_string(),
                "PEM".to_string(),
            ),
            (
                "requestheader-allowed-names".to_string(),
                allowed.to_string(),
            ),
            (
                "requestheader-username-headers".to_string(),
                r#"["X-Remote-User"]"#.to_string(),
            ),
            (
                "requestheader-group-headers".to_string(),
                r#"["X-Remote-Group"]"#.to_string(),
            ),
            (
                "requestheader-extra-headers-prefix".to_string(),
                r#"["X-Remote-Extra-"]"#.to_string(),
            ),
        ]);
        RequestHeaderConfig::from_data(&data).expect("config")
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    #[test]
    fn the_user_groups_and_extras_come_from_the_headers() {
        let user = config(r#"["front-proxy-client"]"#)
            .authenticate(
                Some(Some("front-proxy-client")),
                &headers(&[
                    ("X-Remote-User", "alice"),
                    ("X-Remote-Group", "system:authenticated"),
                    ("X-Remote-Group", "devs"),
                    ("X-Remote-Extra-Scopes", "a"),
                    (
                        "X-Remote-Extra-Authentication.kubernetes.io%2fpod-name",
                        "p",
                    ),
                ]),
            )
            .expect("authenticated");
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["system:authenticated", "devs"]);
        assert_eq!(user.extra["scopes"], ["a"]);
        assert_eq!(user.extra["authentication.kubernetes.io/pod-name"], ["p"]);
    }

    #[rstest]
    #[case::no_certificate(r#"["front-proxy-client"]"#, None, &[("X-Remote-User", "alice")], AuthError::NoClientCertificate)]
    #[case::wrong_name(r#"["front-proxy-client"]"#, Some(Some("mallory")), &[("X-Remote-User", "alice")], AuthError::NameNotAllowed("mallory".into()))]
    #[case::no_cn(r#"["front-proxy-client"]"#, Some(None), &[("X-Remote-User", "alice")], AuthError::NameNotAllowed("".into()))]
    #[case::no_user(r#"["front-proxy-client"]"#, Some(Some("front-proxy-client")), &[("X-Remote-Group", "g")], AuthError::NoUser)]
    fn refused(
        #[case] allowed: &str,
        #[case] peer: Option<Option<&str>>,
        #[case] pairs: &[(&str, &str)],
        #[case] want: AuthError,
    ) {
        assert_eq!(
            config(allowed).authenticate(peer, &headers(pairs)),
            Err(want)
        );
    }

    #[test]
    fn empty_allowed_names_accept_any_certificate_of_the_ca() {
        let user = config("[]")
            .authenticate(
                Some(Some("anything")),
                &headers(&[("X-Remote-User", "bob")]),
            )
            .expect("authenticated");
        assert_eq!(user.name, "bob");
        assert_eq!(
            user.groups,
            ["system:authenticated"],
            "every authenticated user is in system:authenticated"
        );
    }

    #[test]
    fn a_config_map_without_the_ca_is_a_clear_error() {
        assert_eq!(
            RequestHeaderConfig::from_data(&BTreeMap::new()),
            Err(ConfigError::NoClientCa)
        );
    }
}
