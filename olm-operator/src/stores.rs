//! The caches CSV actors read besides the CSV and OperatorGroup stores: the objects CSVs install
//! (Deployments, ServiceAccounts, Roles, ClusterRoles; filtered to CSV-owned ones where labels allow), the
//! CRDs and APIServices they require, the server version and discovery (read once at start), and the CSV
//! metrics. Filled by `csv::watches::start` (and `csv::served::watches::start`). A leaf of the module graph:
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
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Label selector of the objects installed for a CSV (the owned-object watches, the janitor's sweep).
pub const OWNED_BY_CSV: &str = "olm.owner.kind=ClusterServiceVersion";

#[derive(Default)]
pub struct CsvStores {
    pub deployments: OnceLock<Store<Deployment>>,
    pub service_accounts: OnceLock<Store<ServiceAccount>>,
    pub roles: OnceLock<Store<Role>>,
    pub cluster_roles: OnceLock<Store<ClusterRole>>,
    pub crds: OnceLock<Store<CustomResourceDefinition>>,
    pub api_services: OnceLock<Store<APIService>>,
    /// Subscriptions: the one whose `status.installedCSV` names a CSV supplies its `spec.config` (§2.6).
    pub subscriptions: OnceLock<Store<messages::crd::subscription::Subscription>>,
    /// OperatorConditions (one per CSV, named like it): the `Upgradeable` gate of the CSVs replacing it.
    pub operator_conditions: OnceLock<Store<messages::crd::operator_condition::OperatorCondition>>,
    /// Services and webhook configurations of served webhooks and API services.
    pub served: ServedStores,
    pub cluster_info: OnceLock<ClusterInfo>,
    pub metrics: OnceLock<CsvMetrics>,
    /// True once every store above (and the CSV and OperatorGroup stores) finished its first list: no
    /// decision is taken before, so a CSV is never failed for an OperatorGroup not yet seen.
    pub ready: olm_runtime::gate::Gate,
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
#[derive(Default)]
pub struct ServedStores {
    pub services: OnceLock<Store<Service>>,
    pub validating: OnceLock<Store<ValidatingWebhookConfiguration>>,
    pub mutating: OnceLock<Store<MutatingWebhookConfiguration>>,
}
