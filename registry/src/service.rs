//! The gRPC services: `api.Registry` (answers from [`crate::query`]), `api.ExperimentalRegistry`,
//! and `grpc.health.v1.Health`, which, like `opm serve`, answers SERVING to every `Check`.

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::api;
use crate::api::registry_server::Registry;
use crate::query::{self, QueryError};
use crate::store::{Gvk, Store};

pub type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// opm returns plain Go errors, which clients see as UNKNOWN with the text.
fn status(e: QueryError) -> Status {
    Status::unknown(e.to_string())
}

fn stream_of<T: Send + 'static>(items: Vec<T>) -> BoxStream<T> {
    Box::pin(tokio_stream::iter(items.into_iter().map(Ok)))
}

#[derive(Clone)]
pub struct RegistryService {
    store: Arc<Store>,
}

impl RegistryService {
    pub fn new(store: Arc<Store>) -> Self {
        RegistryService { store }
    }
}

#[tonic::async_trait]
impl Registry for RegistryService {
    type ListPackagesStream = BoxStream<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = BoxStream<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = BoxStream<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = BoxStream<api::ChannelEntry>;
    type ListBundlesStream = BoxStream<api::Bundle>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        Ok(Response::new(stream_of(query::list_packages(&self.store))))
    }

    async fn get_package(
        &self,
        req: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        query::get_package(&self.store, &req.get_ref().name)
            .map(Response::new)
            .map_err(status)
    }

    async fn get_bundle(
        &self,
        req: Request<api::GetBundleRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = req.get_ref();
        query::get_bundle(&self.store, &r.pkg_name, &r.channel_name, &r.csv_name)
            .map(Response::new)
            .map_err(status)
    }

    async fn get_bundle_for_channel(
        &self,
        req: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = req.get_ref();
        query::get_bundle_for_channel(&self.store, &r.pkg_name, &r.channel_name)
            .map(Response::new)
            .map_err(status)
    }

    async fn get_channel_entries_that_replace(
        &self,
        req: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        query::get_channel_entries_that_replace(&self.store, &req.get_ref().csv_name)
            .map(|v| Response::new(stream_of(v)))
            .map_err(status)
    }

    async fn get_bundle_that_replaces(
        &self,
        req: Request<api::GetReplacementRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = req.get_ref();
        query::get_bundle_that_replaces(&self.store, &r.csv_name, &r.pkg_name, &r.channel_name)
            .map(Response::new)
            .map_err(status)
    }

    async fn get_channel_entries_that_provide(
        &self,
        req: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let r = req.get_ref();
        let gvk = Gvk::new(&r.group, &r.version, &r.kind);
        query::get_channel_entries_that_provide(&self.store, &gvk)
            .map(|v| Response::new(stream_of(v)))
            .map_err(status)
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        req: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let r = req.get_ref();
        let gvk = Gvk::new(&r.group, &r.version, &r.kind);
        query::get_latest_channel_entries_that_provide(&self.store, &gvk)
            .map(|v| Response::new(stream_of(v)))
            .map_err(status)
    }

    async fn get_default_bundle_that_provides(
        &self,
        req: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let r = req.get_ref();
        let gvk = Gvk::new(&r.group, &r.version, &r.kind);
        query::get_default_bundle_that_provides(&self.store, &gvk)
            .map(Response::new)
            .map_err(status)
    }

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        let store = self.store.clone();
        // Built one by one as the client reads, so the whole list is never in memory.
        let it = (0..store.list_order().len())
            .filter_map(move |i| query::list_bundle_at(&store, i).map(|r| r.map_err(status)));
        Ok(Response::new(Box::pin(tokio_stream::iter(it))))
    }
}

/// Metadata key a caller must set to `true` to see experimental results.
pub const ACK_EXPERIMENTAL: &str = "x-acknowledge-experimental";

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[derive(Clone)]
pub struct ExperimentalService {
    store: Arc<Store>,
}

impl ExperimentalService {
    pub fn new(store: Arc<Store>) -> Self {
        ExperimentalService { store }
    }
}

#[tonic::async_trait]
impl api::experimental_registry_server::ExperimentalRegistry for ExperimentalService {
    type ExperimentalListPackageCustomSchemasStream = BoxStream<prost_types::Struct>;

    async fn experimental_list_package_custom_schemas(
        &self,
        req: Request<api::ExperimentalListPackageCustomSchemasRequest>,
    ) -> Result<Response<Self::ExperimentalListPackageCustomSchemasStream>, Status> {
        let acknowledged = req
            .metadata()
            .get(ACK_EXPERIMENTAL)
            .and_then(|v| v.to_str().ok())
            == Some("true");
        if !acknowledged {
            return Ok(Response::new(stream_of(Vec::new())));
        }
        let r = req.get_ref();
        if r.schema.is_empty() {
            return Err(Status::invalid_argument("schema is required"));
        }
        if !valid_name(&r.schema) || (!r.package_name.is_empty() && !valid_name(&r.package_name)) {
            return Err(Status::invalid_argument(
                "schema and packageName must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$",
            ));
        }
        Ok(Response::new(stream_of(
            self.store.custom(&r.schema, &r.package_name),
        )))
    }
}

/// Health as `opm serve` does it: every `Check` is SERVING; `Watch` is unimplemented.
#[derive(Clone, Copy, Default)]
pub struct AlwaysServing;

#[tonic::async_trait]
impl tonic_health::pb::health_server::Health for AlwaysServing {
    type WatchStream = BoxStream<tonic_health::pb::HealthCheckResponse>;

    async fn check(
        &self,
        _: Request<tonic_health::pb::HealthCheckRequest>,
    ) -> Result<Response<tonic_health::pb::HealthCheckResponse>, Status> {
        Ok(Response::new(tonic_health::pb::HealthCheckResponse {
            status: tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
        }))
    }

    async fn watch(
        &self,
        _: Request<tonic_health::pb::HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("Watch is not implemented"))
    }
}
