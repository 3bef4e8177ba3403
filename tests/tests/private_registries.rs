//! Private and disconnected registries, with the registry client both operators build from their flags
//! (`oci::options::RegistryArgs`): a docker-registry that demands htpasswd credentials and serves TLS from a
//! private CA (started here, on this machine's outward address), reached directly and as the mirror of an image
//! named after a registry this machine cannot reach (`quay.io/private-org/…`, a `registries.conf` v2 entry).
//! Each piece is shown necessary: no CA, no credentials, no mirror each fail with their own reason. Prints the pull
//! times. Local registry processes only, no API server.

mod auth_registry;

use auth_registry::{AuthRegistry, Tls, outward_ip};
use catalog_operator::unpacker::pull_bundle;
use oci::Auth;
use oci::options::RegistryArgs;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

fn bundle_layer() -> anyhow::Result<Vec<u8>> {
    let annotations = "annotations:\n  operators.operatorframework.io.bundle.package.v1: private\n  \
                       operators.operatorframework.io.bundle.channels.v1: stable\n";
    let csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  \
               name: private.v1.0.0\nspec: {}\n";
    Ok(oci::build::tar_gz(&[
        (
            "metadata/annotations.yaml".into(),
            annotations.as_bytes().to_vec(),
        ),
        ("manifests/csv.yaml".into(), csv.as_bytes().to_vec()),
    ])?)
}

/// A keyring holding the test registry's credentials under `host`.
fn keyring(host: &str) -> Auth {
    Auth::Keyring(Arc::new(BTreeMap::from([(
        host.to_string(),
        (
            auth_registry::USER.to_string(),
            auth_registry::PASSWORD.to_string(),
        ),
    )])))
}

#[tokio::test]
async fn a_private_ca_registry_with_credentials_is_pulled_directly_and_as_a_mirror()
-> anyhow::Result<()> {
    let ip = outward_ip()?;
    let tls = Tls::for_ip(ip)?;
    let private = AuthRegistry::start_on(ip, Some(&tls)).await?;
    let dir =
        std::env::temp_dir().join(format!("olm-rs-private-registries-{}", std::process::id()));
    let (ca, conf) =
        auth_registry::mirror_files(&dir, &tls, &format!("{}/mirrored", private.addr))?;
    let with_ca = RegistryArgs {
        registry_ca_bundle: Some(ca.clone()),
        ..Default::default()
    }
    .registry()
    .map_err(anyhow::Error::msg)?;
    let digest = with_ca
        .push(
            &format!("{}/mirrored/bundle:v1", private.addr),
            &AuthRegistry::basic(),
            vec![(oci::build::LAYER_MEDIA_TYPE.into(), bundle_layer()?)],
            &BTreeMap::new(),
        )
        .await?;
    let direct = format!("{}/mirrored/bundle@{digest}", private.addr);

    // Without the CA the registry's certificate is not trusted.
    let e = pull_bundle(&oci::Registry::default(), &direct, &keyring(&private.addr))
        .await
        .expect_err("untrusted certificate");
    assert!(
        e.to_string().to_lowercase().contains("certificate"),
        "{}: {e}",
        e.reason()
    );
    // With the CA and without credentials the registry refuses.
    let e = pull_bundle(&with_ca, &direct, &Auth::Anonymous)
        .await
        .expect_err("no credentials");
    assert_eq!(e.reason(), "Unauthorized", "{e}");
    // With both: pulled directly.
    let started = Instant::now();
    let b = pull_bundle(&with_ca, &direct, &keyring(&private.addr)).await?;
    let direct_time = started.elapsed();
    assert_eq!(b.csv["metadata"]["name"], "private.v1.0.0");

    // The image as the catalog names it, on a registry this machine cannot reach: only the mirror serves it.
    let named = format!("quay.io/private-org/bundle@{digest}");
    let mirrored = RegistryArgs {
        registry_ca_bundle: Some(ca),
        registries_conf: Some(conf),
        ..Default::default()
    }
    .registry()
    .map_err(anyhow::Error::msg)?;
    let started = Instant::now();
    let b = pull_bundle(&mirrored, &named, &keyring(&private.addr)).await?;
    let mirror_time = started.elapsed();
    assert_eq!(b.csv["metadata"]["name"], "private.v1.0.0");
    assert_eq!(b.digest, digest, "the digest is the one the catalog named");
    // Without the mirror's credentials the mirror refuses, and the source is out of reach: the pull fails.
    assert!(
        pull_bundle(&mirrored, &named, &Auth::Anonymous)
            .await
            .is_err()
    );

    println!(
        "private registry: TLS from a private CA with htpasswd: direct pull {:.0} ms, through the mirror {:.0} ms",
        direct_time.as_secs_f64() * 1e3,
        mirror_time.as_secs_f64() * 1e3
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
