//! Pull secrets: the Secrets a CatalogSource names in `spec.secrets` (type `kubernetes.io/dockerconfigjson` or
//! the older `kubernetes.io/dockercfg`), read from the catalog's namespace, and the global pull secret
//! (`--global-pull-secret`), give the credentials for the registry of a bundle or catalog image. Matching and
//! decoding are pure ([`keyring`], [`credentials_for`]); [`credentials`] reads the Secrets in order through the
//! caller's reader, so each binary reads them as it may (catalog-operator grants itself `get` on a Forbidden).

use crate::secret_ref::SecretRef;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use oci::Auth;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// The registry host of an image reference (`quay.io/a/b:1` → `quay.io`; `a/b` → `docker.io`).
pub fn registry_of(image: &str) -> String {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            first.to_string()
        }
        _ => "docker.io".to_string(),
    }
}

fn strip_scheme(key: &str) -> &str {
    let k = key
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    k.split('/').next().unwrap_or(k)
}

fn entry_auth(entry: &Value) -> Option<Auth> {
    if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
        return Some(Auth::Basic {
            username: u.to_string(),
            password: p.to_string(),
        });
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(entry["auth"].as_str()?)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (u, p) = text.split_once(':')?;
    Some(Auth::Basic {
        username: u.to_string(),
        password: p.to_string(),
    })
}

/// A Secret as read: its type and its data (key, bytes).
pub type SecretPayload = (String, Vec<(String, Vec<u8>)>);

/// Every registry's credentials in secret payloads, as one keyring: the first secret naming a host wins, so a
/// CatalogSource's own secrets come before the global pull secret. Docker Hub's names are one host.
pub fn keyring(secrets: &[SecretPayload]) -> Auth {
    let mut keys: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (_, data) in secrets {
        for (key, bytes) in data {
            let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
                continue;
            };
            let auths = match key.as_str() {
                ".dockerconfigjson" => v["auths"].clone(),
                ".dockercfg" => v,
                _ => continue,
            };
            let Some(map) = auths.as_object() else {
                continue;
            };
            for (host, entry) in map {
                if let Some(Auth::Basic { username, password }) = entry_auth(entry) {
                    keys.entry(strip_scheme(host).to_string())
                        .or_insert((username, password));
                }
            }
        }
    }
    if keys.is_empty() {
        Auth::Anonymous
    } else {
        Auth::Keyring(Arc::new(keys))
    }
}

/// Credentials for `registry` from secret payloads.
pub fn credentials_for(registry: &str, secrets: &[SecretPayload]) -> Auth {
    keyring(secrets).for_registry(registry)
}

/// A Secret as read, or why not.
pub async fn read_secret(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<SecretPayload, kube::Error> {
    let s = Api::<Secret>::namespaced(client.clone(), namespace)
        .get(name)
        .await?;
    Ok(payload(s))
}

/// The type and data of a Secret as read.
pub fn payload(s: Secret) -> SecretPayload {
    (
        s.type_.unwrap_or_default(),
        s.data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect(),
    )
}

/// The global pull secret's payload, when one is configured and readable (a failure is logged: pulls go on with
/// what else there is).
pub async fn global_payload(
    client: &kube::Client,
    global: Option<&SecretRef>,
) -> Option<SecretPayload> {
    let g = global?;
    match read_secret(client, &g.namespace, &g.name).await {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(secret = %format!("{}/{}", g.namespace, g.name), error = &e as &dyn std::error::Error, "cannot read the global pull secret");
            None
        }
    }
}

/// The credentials for pulling a catalog's images: its pull Secrets `names` (each read by `read`, in order; one
/// that cannot be read is logged, naming `catalog`, and skipped), then `global` (the global pull secret's payload),
/// as one keyring by registry host (a mirror on another host finds its own); anonymous when there is none.
pub async fn credentials<R, Fut, E>(
    catalog: &str,
    names: &[String],
    global: Option<SecretPayload>,
    mut read: R,
) -> Auth
where
    R: FnMut(String) -> Fut,
    Fut: Future<Output = Result<SecretPayload, E>>,
    E: std::error::Error + 'static,
{
    let mut payloads = Vec::with_capacity(names.len() + 1);
    for name in names {
        match read(name.clone()).await {
            Ok(p) => payloads.push(p),
            Err(e) => {
                tracing::warn!(%catalog, secret = %name, error = &e as &dyn std::error::Error, "cannot read the catalog's pull secret")
            }
        }
    }
    payloads.extend(global);
    keyring(&payloads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[rstest]
    #[case::host_port("127.0.0.1:25000/a/b@sha256:x", "127.0.0.1:25000")]
    #[case::quay("quay.io/org/op:v1", "quay.io")]
    #[case::hub("org/op:v1", "docker.io")]
    fn the_registry_of_an_image(#[case] image: &str, #[case] host: &str) {
        assert_eq!(registry_of(image), host);
    }

    fn secret(key: &str, json: String) -> SecretPayload {
        (
            "kubernetes.io/dockerconfigjson".into(),
            vec![(key.to_string(), json.into_bytes())],
        )
    }

    #[rstest]
    #[case::auth_field(secret(".dockerconfigjson", format!(r#"{{"auths":{{"127.0.0.1:25000":{{"auth":"{}"}}}}}}"#, b64("u:p"))), "127.0.0.1:25000", Some(("u", "p")))]
    #[case::username_password(secret(".dockerconfigjson", r#"{"auths":{"https://quay.io":{"username":"u","password":"p"}}}"#.into()), "quay.io", Some(("u", "p")))]
    #[case::legacy_dockercfg(secret(".dockercfg", format!(r#"{{"quay.io":{{"auth":"{}"}}}}"#, b64("u:p"))), "quay.io", Some(("u", "p")))]
    #[case::other_registry(secret(".dockerconfigjson", format!(r#"{{"auths":{{"quay.io":{{"auth":"{}"}}}}}}"#, b64("u:p"))), "ghcr.io", None)]
    #[case::garbage(secret(".dockerconfigjson", "not json".into()), "quay.io", None)]
    #[case::docker_hub(secret(".dockerconfigjson", format!(r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{}"}}}}}}"#, b64("u:p"))), "docker.io", Some(("u", "p")))]
    fn pull_secrets_give_credentials_per_registry(
        #[case] s: SecretPayload,
        #[case] registry: &str,
        #[case] want: Option<(&str, &str)>,
    ) {
        let want = want.map_or(Auth::Anonymous, |(u, p)| Auth::Basic {
            username: u.into(),
            password: p.into(),
        });
        assert_eq!(credentials_for(registry, &[s]), want);
    }

    #[test]
    fn a_catalogs_own_secret_comes_before_the_global_one_and_each_host_keeps_its_own() {
        let own = secret(
            ".dockerconfigjson",
            format!(r#"{{"auths":{{"quay.io":{{"auth":"{}"}}}}}}"#, b64("own:1")),
        );
        let global = secret(
            ".dockerconfigjson",
            format!(
                r#"{{"auths":{{"quay.io":{{"auth":"{}"}},"mirror.local:5000":{{"auth":"{}"}}}}}}"#,
                b64("global:2"),
                b64("mirror:3")
            ),
        );
        let keys = keyring(&[own, global]);
        let basic = |u: &str, p: &str| Auth::Basic {
            username: u.into(),
            password: p.into(),
        };
        assert_eq!(keys.for_registry("quay.io"), basic("own", "1"));
        assert_eq!(keys.for_registry("mirror.local:5000"), basic("mirror", "3"));
        assert_eq!(keys.for_registry("ghcr.io"), Auth::Anonymous);
        assert_eq!(keyring(&[]), Auth::Anonymous);
    }

    #[tokio::test]
    async fn credentials_read_the_catalogs_secrets_in_order_skip_unreadable_ones_and_end_with_the_global_one()
     {
        let own = secret(
            ".dockerconfigjson",
            format!(r#"{{"auths":{{"quay.io":{{"auth":"{}"}}}}}}"#, b64("own:1")),
        );
        let global = secret(
            ".dockerconfigjson",
            format!(
                r#"{{"auths":{{"quay.io":{{"auth":"{}"}},"ghcr.io":{{"auth":"{}"}}}}}}"#,
                b64("global:2"),
                b64("global:3")
            ),
        );
        let mut asked = Vec::new();
        let auth = credentials(
            "ns/cat",
            &["missing".to_string(), "own".to_string()],
            Some(global),
            |name| {
                asked.push(name.clone());
                let found = (name == "own").then(|| own.clone());
                async move { found.ok_or_else(|| std::io::Error::other("forbidden")) }
            },
        )
        .await;
        assert_eq!(asked, ["missing", "own"]);
        let basic = |u: &str, p: &str| Auth::Basic {
            username: u.into(),
            password: p.into(),
        };
        assert_eq!(auth.for_registry("quay.io"), basic("own", "1"));
        assert_eq!(auth.for_registry("ghcr.io"), basic("global", "3"));
        let none = credentials("ns/cat", &[], None, |_| async {
            Err::<SecretPayload, _>(std::io::Error::other("never asked"))
        })
        .await;
        assert_eq!(none, Auth::Anonymous);
    }
}
