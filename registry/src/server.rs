//! Running the registry gRPC server: `api.Registry`, `api.ExperimentalRegistry`,
//! `grpc.health.v1.Health` and server reflection, plain-text HTTP/2 like `opm serve`.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::api;
use crate::service::{AlwaysServing, ExperimentalService, RegistryService};
use crate::store::Store;

/// OLM's registry port.
pub const DEFAULT_PORT: u16 = 50051;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("reflection descriptors are invalid")]
    Reflection(#[source] tonic_reflection::server::Error),
    #[error("gRPC transport failed")]
    Transport(#[source] tonic::transport::Error),
}

/// Binds `addr` (port 0 picks a free port).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves `store` on `listener` until `shutdown` completes.
pub async fn serve(
    store: Arc<Store>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(ServeError::Reflection)?;
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(ServeError::Reflection)?;
    tonic::transport::Server::builder()
        .add_service(api::registry_server::RegistryServer::new(
            RegistryService::new(store.clone()),
        ))
        .add_service(
            api::experimental_registry_server::ExperimentalRegistryServer::new(
                ExperimentalService::new(store),
            ),
        )
        .add_service(tonic_health::pb::health_server::HealthServer::new(
            AlwaysServing,
        ))
        .add_service(reflection)
        .add_service(reflection_alpha)
        // Without TCP_NODELAY small responses wait for the peer's delayed ACK (~40 ms).
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
        .map_err(ServeError::Transport)
}

/// Serves the catalogs of `catalogs` on `listener` (`api.Registry` routed by [`crate::routed::CATALOG_HEADER`],
/// and health) until `shutdown` completes.
pub async fn serve_routed(
    catalogs: Arc<dyn crate::routed::Catalogs>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    tonic::transport::Server::builder()
        .add_service(api::registry_server::RegistryServer::new(
            crate::routed::RoutedRegistry::new(catalogs),
        ))
        .add_service(tonic_health::pb::health_server::HealthServer::new(
            AlwaysServing,
        ))
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
        .map_err(ServeError::Transport)
}
