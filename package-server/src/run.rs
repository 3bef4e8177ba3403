//! `package-server run`: connect, read the request-header authentication settings, get the serving
//! certificate (generated, or shared through a Secret), keep the APIService's caBundle on its CA, start one
//! actor per CatalogSource (every replica reads the catalogs itself: no leader election, so every ready
//! endpoint of the Service can answer), serve the HTTPS API and the plain endpoints, then wait for SIGTERM.

use crate::auth::{AUTH_CONFIG_MAP, AUTH_CONFIG_MAP_NAMESPACE, RequestHeaderConfig};
use crate::authorize::Authorizer;
use crate::catalogs::{CatalogActor, Shared};
use crate::cli::RunArgs;
use crate::server::{self, Server};
use crate::store::PackageStore;
use crate::{apiservice, tls};
use anyhow::Context;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use olm_runtime::activation::Activation;
use olm_runtime::metrics::Metrics;
use olm_runtime::scope::Scope;
use olm_runtime::wiring::{self, Wiring};
use registry::client::ClientOptions;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let names = args.serving_names();
    let RunArgs {
        kubeconfig,
        global_namespace,
        bind_address,
        secure_port,
        http_addr,
        endpoints,
        service_name: _,
        service_namespace,
        tls_extra_names: _,
        tls_secret,
        apiservice_name,
        resync_seconds,
        registry_probe_seconds,
        registry,
        global_pull_secret,
        image_catalogs_address,
        log_format,
    } = args;
    // Bad registry files stop package-server here, naming the file.
    let images = registry.registry().map_err(anyhow::Error::msg)?;
    let _telemetry = olm_runtime::telemetry::init("package-server", log_format)?;
    wiring::block_on_system(async move {
        let client = olm_runtime::client::connect(kubeconfig.as_deref()).await?;
        let auth_cm: Api<ConfigMap> = Api::namespaced(client.clone(), AUTH_CONFIG_MAP_NAMESPACE);
        let data = auth_cm
            .get(AUTH_CONFIG_MAP)
            .await
            .with_context(|| format!("read {AUTH_CONFIG_MAP_NAMESPACE}/{AUTH_CONFIG_MAP}"))?
            .data
            .unwrap_or_default();
        let auth = RequestHeaderConfig::from_data(&data)?;

        let service_ns = service_namespace.unwrap_or_else(|| global_namespace.clone());
        let cert = match &tls_secret {
            Some(secret) => tls::from_shared_secret(&client, &service_ns, secret, &names).await?,
            None => tls::generate(&names)?,
        };
        let tls_config = tls::server_config(&cert, &auth.client_ca_pem)?;
        if !apiservice_name.is_empty() {
            apiservice::spawn_keeper(client.clone(), apiservice_name.clone(), cert.ca_pem.clone());
        }

        let metrics = Metrics::new()?;
        let mut wiring = Wiring::new(client.clone(), metrics.clone(), Scope::Cluster)
            .with_resync(Duration::from_secs(resync_seconds));
        let activation = Activation::new(&client, &metrics, None)?;
        let http = wiring.serve(http_addr, &endpoints, &activation).await?;
        let store = Arc::new(PackageStore::new(global_namespace.clone()));
        let options = ClientOptions {
            probe_interval: Duration::from_secs(registry_probe_seconds.max(1)),
            ..ClientOptions::default()
        };
        wiring.start(
            Wiring::prepare::<CatalogActor>(),
            Shared {
                client: client.clone(),
                store: store.clone(),
                options,
                images,
                global_pull_secret,
                image_catalogs: image_catalogs_address,
            },
        );
        let server = Arc::new(
            Server::new(store, auth, Authorizer::new(client.clone()))
                .context("serialize the OpenAPI and discovery documents")?,
        );
        let https = server::serve(
            SocketAddr::new(bind_address, secure_port),
            tls_config,
            server,
        )
        .await?;
        tracing::info!(%https, %http, global_namespace = %global_namespace, names = ?names, "package-server serving");
        activation.run_until_stopped().await;
        tracing::info!("package-server stopping");
        anyhow::Ok(())
    })?
}
