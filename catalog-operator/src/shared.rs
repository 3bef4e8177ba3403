//! What every actor of catalog-operator shares: the client, the reflector stores, the metrics, and the registries'
//! addresses (so actors can send typed messages to each other's actors).

use actix::Addr;
use kube::Client;
use kube::runtime::reflector::Store;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Subscription;
use olm_runtime::metrics::Metrics;
use olm_runtime::registry::Registry;
use std::sync::{Arc, OnceLock};

use crate::catalog_source::CatalogSourceActor;
use crate::install_plan::InstallPlanActor;
use crate::subscription::SubscriptionActor;

#[derive(Clone)]
pub struct Shared {
    pub client: Client,
    pub metrics: Metrics,
    pub stores: Arc<Stores>,
    pub registries: Arc<Registries>,
}

/// Read-only caches filled by the watches.
#[derive(Default)]
pub struct Stores {
    pub catalog_sources: OnceLock<Store<CatalogSource>>,
    pub subscriptions: OnceLock<Store<Subscription>>,
    pub install_plans: OnceLock<Store<InstallPlan>>,
}

/// Registries are started after `Shared` is built (they hold it), hence the `OnceLock`s.
#[derive(Default)]
pub struct Registries {
    pub catalog_sources: OnceLock<Addr<Registry<CatalogSourceActor>>>,
    pub subscriptions: OnceLock<Addr<Registry<SubscriptionActor>>>,
    pub install_plans: OnceLock<Addr<Registry<InstallPlanActor>>>,
}
