//! The caches CSV actors read besides the CSV and OperatorGroup stores: the objects CSVs install
//! (Deployments, ServiceAccounts, Roles, ClusterRoles; filtered to CSV-owned ones where labels allow), the
//! CRDs and APIServices they require, the server version and discovery (read once at start), and the CSV
//! metrics. Made empty before the actors ([`CsvStores::new`]), filled by the watches `csv::watches::start` (and
//! `csv::served::watches::start`) start with their writers. A leaf of the module graph:
//! types only, so `shared.rs` holds them without importing an actor module.

use crate::metrics::CsvMetrics;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use std::collections::BTreeSet;

/// Label selector of the objects installed for a CSV (the owned-object watches, the janitor's sweep).
pub const OWNED_BY_CSV: &str = "olm.owner.kind=ClusterServiceVersion";

pub struct CsvStores {
    pub deployments: Store<Deployment>,
    pub service_accounts: Store<ServiceAccount>,
    pub roles: Store<Role>,
    pub cluster_roles: Store<ClusterRole>,
    pub crds: Store<CustomResourceDefinition>,
    pub api_services: Store<APIService>,
    /// Subscriptions: the one whose `status.installedCSV` names a CSV supplies its `spec.config` (§2.6).
    pub subscriptions: Store<messages::crd::subscription::Subscription>,
    /// OperatorConditions (one per CSV, named like it): the `Upgradeable` gate of the CSVs replacing it.
    pub operator_conditions: Store<messages::crd::operator_condition::OperatorCondition>,
    /// Services and webhook configurations of served webhooks and API services.
    pub served: ServedStores,
    pub cluster_info: ClusterInfo,
    pub metrics: CsvMetrics,
    /// True once every store above (and the CSV and OperatorGroup stores) finished its first list: no
    /// decision is taken before, so a CSV is never failed for an OperatorGroup not yet seen.
    pub ready: olm_runtime::gate::Gate,
}

/// The writing ends of the stores of [`CsvStores`] that plain watches fill (`csv::watches::start`); the
/// OperatorConditions' store is its registry's.
pub struct CsvWriters {
    pub deployments: Writer<Deployment>,
    pub service_accounts: Writer<ServiceAccount>,
    pub roles: Writer<Role>,
    pub cluster_roles: Writer<ClusterRole>,
    pub crds: Writer<CustomResourceDefinition>,
    pub api_services: Writer<APIService>,
    pub subscriptions: Writer<messages::crd::subscription::Subscription>,
    pub served: ServedWriters,
}

impl CsvStores {
    /// Empty stores (filled once their watches run) and their writers.
    pub fn new(
        operator_conditions: Store<messages::crd::operator_condition::OperatorCondition>,
        cluster_info: ClusterInfo,
        metrics: CsvMetrics,
    ) -> (Self, CsvWriters) {
        let writers = CsvWriters {
            deployments: Writer::default(),
            service_accounts: Writer::default(),
            roles: Writer::default(),
            cluster_roles: Writer::default(),
            crds: Writer::default(),
            api_services: Writer::default(),
            subscriptions: Writer::default(),
            served: ServedWriters {
                services: Writer::default(),
                validating: Writer::default(),
                mutating: Writer::default(),
            },
        };
        let stores = Self {
            deployments: writers.deployments.as_reader(),
            service_accounts: writers.service_accounts.as_reader(),
            roles: writers.roles.as_reader(),
            cluster_roles: writers.cluster_roles.as_reader(),
            crds: writers.crds.as_reader(),
            api_services: writers.api_services.as_reader(),
            subscriptions: writers.subscriptions.as_reader(),
            operator_conditions,
            served: ServedStores {
                services: writers.served.services.as_reader(),
                validating: writers.served.validating.as_reader(),
                mutating: writers.served.mutating.as_reader(),
            },
            cluster_info,
            metrics,
            ready: olm_runtime::gate::Gate::default(),
        };
        (stores, writers)
    }
}

/// What the API server said about itself at start.
#[derive(Clone, Debug, Default)]
pub struct ClusterInfo {
    /// `gitVersion`, e.g. `v1.20.2`.
    pub server_version: Option<String>,
    /// `group/version/kind` of every discovered resource; `None` when discovery failed.
    pub kinds: Option<BTreeSet<(String, String, String)>>,
}

/// Services and webhook configurations carrying a CSV's owner labels. Filled by `csv::served::watches::start`.
pub struct ServedStores {
    pub services: Store<Service>,
    pub validating: Store<ValidatingWebhookConfiguration>,
    pub mutating: Store<MutatingWebhookConfiguration>,
}

/// The writing ends of [`ServedStores`].
pub struct ServedWriters {
    pub services: Writer<Service>,
    pub validating: Writer<ValidatingWebhookConfiguration>,
    pub mutating: Writer<MutatingWebhookConfiguration>,
}
