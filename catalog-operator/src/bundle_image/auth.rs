//! Pull secrets: the Secrets a CatalogSource names in `spec.secrets` (type `kubernetes.io/dockerconfigjson` or
//! the older `kubernetes.io/dockercfg`), read from the catalog's namespace, give the credentials for the
//! registry of a bundle or catalog image. Matching and decoding are pure ([`credentials_for`]).

use crate::shared::Shared;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use oci::Auth;
use resolver::CatalogKey;
use serde_json::Value;

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

/// Credentials for `registry` from secret payloads.
pub fn credentials_for(registry: &str, secrets: &[SecretPayload]) -> Auth {
    let docker_hub = |k: &str| k == "index.docker.io" || k == "registry-1.docker.io";
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
                let h = strip_scheme(host);
                if (h == registry || (registry == "docker.io" && docker_hub(h)))
                    && let Some(a) = entry_auth(entry)
                {
                    return a;
                }
            }
        }
    }
    Auth::Anonymous
}

/// The credentials the CatalogSource `catalog` provides for `image` (anonymous when it names no secrets or
/// none matches; a Secret that cannot be read is logged and skipped).
pub async fn for_catalog(shared: &Shared, catalog: &CatalogKey, image: &str) -> Auth {
    let sources = shared.catalog_sources();
    let source = sources.iter().find(|c| {
        c.metadata.name.as_deref() == Some(catalog.name.as_str())
            && c.metadata.namespace.as_deref() == Some(catalog.namespace.as_str())
    });
    let names: Vec<String> = source
        .and_then(|c| c.spec.secrets.clone())
        .unwrap_or_default();
    if names.is_empty() {
        return Auth::Anonymous;
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
        if matches!(&read, Err(kube::Error::Api(s)) if s.code == 403) && !granted {
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
            Ok(s) => payloads.push((
                s.type_.unwrap_or_default(),
                s.data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect(),
            )),
            Err(e) => {
                tracing::warn!(catalog = %catalog, secret = %name, error = &e as &dyn std::error::Error, "cannot read pull secret")
            }
        }
    }
    credentials_for(&registry_of(image), &payloads)
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
}
