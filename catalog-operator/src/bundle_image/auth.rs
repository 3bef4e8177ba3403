//! Pull secrets: the Secrets a CatalogSource names in `spec.secrets` (type `kubernetes.io/dockerconfigjson` or
//! the older `kubernetes.io/dockercfg`), read from the catalog's namespace, give the credentials for the
//! registry of a bundle or catalog image. Matching and decoding are pure ([`credentials_for`]).

use crate::secret_ref::SecretRef;
use crate::shared::Shared;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use oci::Auth;
use olm_runtime::error::{self as api_error, Class};
use resolver::CatalogKey;
use serde_json::Value;
use std::collections::BTreeMap;
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

fn payload(s: Secret) -> SecretPayload {
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

/// The credentials for pulling `image` for CatalogSource `catalog`: its `spec.secrets`, then the global pull
/// secret, as a keyring by registry host (a mirror on another host finds its own); anonymous when none is named.
/// A Secret that cannot be read is logged and skipped.
pub async fn for_catalog(shared: &Shared, catalog: &CatalogKey) -> Auth {
    let sources = shared.catalog_sources();
    let source = sources.iter().find(|c| {
        c.metadata.name.as_deref() == Some(catalog.name.as_str())
            && c.metadata.namespace.as_deref() == Some(catalog.namespace.as_str())
    });
    let names: Vec<String> = source
        .and_then(|c| c.spec.secrets.clone())
        .unwrap_or_default();
    let global = global_payload(&shared.client, shared.config.global_pull_secret.as_ref()).await;
    if names.is_empty() {
        return keyring(&Vec::from_iter(global));
    }
    let uid = source
        .and_then(|c| c.metadata.uid.clone())
        .unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(shared.client.clone(), &catalog.namespace);
    let mut granted = false;
    let mut payloads = Vec::new();
    for name in names.iter() {
        let mut read = api.get(name).await;
        // deploy/rbac does not let catalog-operator read Secrets: it grants itself these ones (self_grant.rs).
        if matches!(&read, Err(e) if api_error::is(e, Class::Forbidden)) && !granted {
            let reference = crate::self_grant::CatalogRef {
                namespace: &catalog.namespace,
                name: &catalog.name,
                uid: &uid,
                secrets: &names,
            };
            granted = crate::self_grant::grant_pull_secrets(&shared.client, &reference).await;
            if granted {
                read = crate::self_grant::after_grant(|| api.get(name)).await;
            }
        }
        match read {
            Ok(s) => payloads.push(payload(s)),
            Err(e) => {
                tracing::warn!(catalog = %catalog, secret = %name, error = &e as &dyn std::error::Error, "cannot read pull secret")
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
}
