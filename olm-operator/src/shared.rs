//! What every actor of olm-operator shares: the client, the reflector stores, the metrics, and the addresses of
//! the registries (so actors can send typed messages to each other's actors).

use actix::Addr;
use kube::Client;
use kube::runtime::reflector::Store;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;
use olm_runtime::metrics::Metrics;
use olm_runtime::registry::Registry;
use std::sync::{Arc, OnceLock};

use crate::csv::CsvActor;
use crate::operator_group::OperatorGroupActor;

#[derive(Clone)]
pub struct Shared {
    pub client: Client,
    pub metrics: Metrics,
    pub stores: Arc<Stores>,
    pub registries: Arc<Registries>,
    /// Namespaces that keep all-namespaces copies while copies are disabled (`--protected-copied-csv-namespaces`).
    pub protected_copy_namespaces: Arc<std::collections::BTreeSet<String>>,
}

/// Read-only caches filled by the watches.
pub struct Stores {
    pub csvs: OnceLock<Store<ClusterServiceVersion>>,
    pub operator_groups: OnceLock<Store<OperatorGroup>>,
    pub namespaces: OnceLock<Store<k8s_openapi::api::core::v1::Namespace>>,
    /// The cluster's OLMConfig (`disableCopiedCSVs`).
    pub olm_config: OnceLock<Store<messages::crd::olm_config::OLMConfig>>,
    /// The actor keeping the OLMConfig `DisabledCopiedCSVs` condition (`operator_group::olm_config`).
    pub olm_config_status: OnceLock<actix::Recipient<messages::msg::Requeue>>,
    /// The namespaces the operator watches (copies and labels stay inside them).
    pub scope: OnceLock<olm_runtime::wiring::Scope>,
    /// What CSV actors read besides CSVs and OperatorGroups (installed objects, CRDs, cluster info, metrics).
    pub csv: crate::csv::stores::CsvStores,
}

/// Registries are started after `Shared` is built (they hold it), hence the `OnceLock`s.
#[derive(Default)]
pub struct Registries {
    pub csvs: OnceLock<Addr<Registry<CsvActor>>>,
    pub operator_groups: OnceLock<Addr<Registry<OperatorGroupActor>>>,
    /// The Operator view (`operators.coreos.com/v1` Operators).
    pub operator_view: OnceLock<Addr<crate::operator_view::OperatorViewActor>>,
    /// The cluster janitor (`janitor/`): what gone CSVs leave in the cluster, the start-up RBAC sweep.
    pub janitor: OnceLock<actix::Recipient<crate::routes::JanitorMsg>>,
}

impl Stores {
    pub fn empty() -> Self {
        Self {
            csvs: OnceLock::new(),
            operator_groups: OnceLock::new(),
            namespaces: OnceLock::new(),
            olm_config: OnceLock::new(),
            olm_config_status: OnceLock::new(),
            scope: OnceLock::new(),
            csv: Default::default(),
        }
    }
}
