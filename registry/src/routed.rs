//! One `api.Registry` server for many catalogs (issue 33): catalog-operator serves the catalog images it loaded,
//! and package-server reads them through it instead of pulling and indexing each image a second time. A request
//! names its catalog in the [`CATALOG_HEADER`] metadata (`<namespace>/<name>` of the CatalogSource); the
//! answer is the one [`RegistryService`] gives for that catalog's store. A catalog not loaded (yet) answers
//! NOT_FOUND, a request without the header INVALID_ARGUMENT.
//!
//! ```text
//! package-server ─ RegistryClient (ClientOptions::catalog = ns/name) ─ x-olm-catalog: ns/name ─▶ RoutedRegistry
//!     ─ Catalogs::store("ns/name") ─▶ Arc<Store> ─▶ RegistryService (the same queries as `registry serve`)
//! ```

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::api;
use crate::api::registry_server::Registry;
use crate::service::{BoxStream, RegistryService};
use crate::store::Store;

/// The metadata key naming the catalog of a request.
pub const CATALOG_HEADER: &str = "x-olm-catalog";

/// Where a routed server finds a catalog's store.
pub trait Catalogs: Send + Sync + 'static {
    /// The store of catalog `key` (`<namespace>/<name>`), when it is loaded.
    fn store(&self, key: &str) -> Option<Arc<Store>>;
}

/// The catalog a request names (pure).
pub fn catalog_of(metadata: &tonic::metadata::MetadataMap) -> Result<&str, Status> {
    let value = metadata.get(CATALOG_HEADER).ok_or_else(|| {
        Status::invalid_argument(format!(
            "no {CATALOG_HEADER} metadata: name the catalog as <namespace>/<name>"
        ))
    })?;
    value
        .to_str()
        .ok()
        .filter(|v| {
            v.split_once('/')
                .is_some_and(|(ns, name)| !ns.is_empty() && !name.is_empty())
        })
        .ok_or_else(|| {
            Status::invalid_argument(format!("{CATALOG_HEADER} is not <namespace>/<name>"))
        })
}

#[derive(Clone)]
pub struct RoutedRegistry {
    catalogs: Arc<dyn Catalogs>,
}

impl RoutedRegistry {
    pub fn new(catalogs: Arc<dyn Catalogs>) -> Self {
        RoutedRegistry { catalogs }
    }

    fn service<T>(&self, req: &Request<T>) -> Result<RegistryService, Status> {
        let key = catalog_of(req.metadata())?;
        self.catalogs
            .store(key)
            .map(RegistryService::new)
            .ok_or_else(|| Status::not_found(format!("catalog {key} is not loaded here")))
    }
}

#[tonic::async_trait]
impl Registry for RoutedRegistry {
    type ListPackagesStream = BoxStream<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = BoxStream<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = BoxStream<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = BoxStream<api::ChannelEntry>;
    type ListBundlesStream = BoxStream<api::Bundle>;

    async fn list_packages(
        &self,
        req: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        self.service(&req)?.list_packages(req).await
    }

    async fn get_package(
        &self,
        req: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        self.service(&req)?.get_package(req).await
    }

    async fn get_bundle(
        &self,
        req: Request<api::GetBundleRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        self.service(&req)?.get_bundle(req).await
    }

    async fn get_bundle_for_channel(
        &self,
        req: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        self.service(&req)?.get_bundle_for_channel(req).await
    }

    async fn get_channel_entries_that_replace(
        &self,
        req: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        self.service(&req)?
            .get_channel_entries_that_replace(req)
            .await
    }

    async fn get_bundle_that_replaces(
        &self,
        req: Request<api::GetReplacementRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        self.service(&req)?.get_bundle_that_replaces(req).await
    }

    async fn get_channel_entries_that_provide(
        &self,
        req: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        self.service(&req)?
            .get_channel_entries_that_provide(req)
            .await
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        req: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        self.service(&req)?
            .get_latest_channel_entries_that_provide(req)
            .await
    }

    async fn get_default_bundle_that_provides(
        &self,
        req: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        self.service(&req)?
            .get_default_bundle_that_provides(req)
            .await
    }

    async fn list_bundles(
        &self,
        req: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        self.service(&req)?.list_bundles(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use tonic::metadata::MetadataMap;

    #[rstest]
    #[case::named(Some("ns/catalog"), Ok("ns/catalog"))]
    #[case::absent(None, Err(tonic::Code::InvalidArgument))]
    #[case::no_namespace(Some("catalog"), Err(tonic::Code::InvalidArgument))]
    #[case::empty_name(Some("ns/"), Err(tonic::Code::InvalidArgument))]
    fn a_request_names_its_catalog_as_namespace_slash_name(
        #[case] header: Option<&str>,
        #[case] want: Result<&str, tonic::Code>,
    ) {
        let mut metadata = MetadataMap::new();
        if let Some(h) = header {
            metadata.insert(CATALOG_HEADER, h.parse().expect("ascii"));
        }
        assert_eq!(catalog_of(&metadata).map_err(|s| s.code()), want);
    }
}
