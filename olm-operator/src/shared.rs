//! What every actor of olm-operator shares: the client, the reflector stores, the metrics, and where to send
//! typed messages to each other's actors (`Recipient`s and [`Route`]s of message types, never actor types:
//! this module imports no actor module, so no import circle runs through it; `run.rs` wires them in).

use crate::routes::{JanitorMsg, Route, ViewChanged};
use actix::Recipient;
use kube::Client;
use kube::runtime::reflector::Store;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{ChangeProvidedApis, OperatorGroupMsg, Requeue, RequeueReason};
use olm_runtime::metrics::Metrics;
use olm_runtime::registry::{Ask, Forward};
use std::sync::{Arc, OnceLock};

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
    pub olm_config_status: OnceLock<olm_runtime::singleton::Singleton<messages::msg::Requeue>>,
    /// The namespaces the operator watches (copies and labels stay inside them).
    pub scope: OnceLock<olm_runtime::scope::Scope>,
    /// What CSV actors read besides CSVs and OperatorGroups (installed objects, CRDs, cluster info, metrics).
    pub csv: crate::stores::CsvStores,
    /// The version of each OperatorGroup its members were last asked to look at (outlives a group actor).
    pub groups_announced: crate::group_announced::Announced,
}

/// Registries are started after `Shared` is built (they hold it), hence the `OnceLock`s.
#[derive(Default)]
pub struct Registries {
    /// The CSV registry: requeues of CSV actors.
    pub csvs: OnceLock<Route<Requeue>>,
    /// The OperatorGroup registry: nudges of group actors.
    pub operator_groups: OnceLock<Route<OperatorGroupMsg>>,
    /// The OperatorGroup registry: a CSV's request to change its group's provided APIs (answered).
    pub group_asks: OnceLock<Recipient<Ask<ChangeProvidedApis>>>,
    /// The Operator view (`operators.coreos.com/v1` Operators); started again by the next message when it died.
    pub operator_view: OnceLock<olm_runtime::singleton::Singleton<ViewChanged>>,
    /// The cluster janitor (`janitor/`): what gone CSVs leave in the cluster, the start-up RBAC sweep; started
    /// again by the next message when it died.
    pub janitor: OnceLock<olm_runtime::singleton::Singleton<JanitorMsg>>,
}

impl Shared {
    /// Ask the actor of CSV `key` (if it runs) to reconcile now: routed by the CSV registry itself.
    pub fn requeue_csv(&self, key: ObjectKey) {
        if let Some(registry) = self.registries.csvs.get() {
            registry.do_send(Forward(
                key,
                Requeue {
                    reason: RequeueReason::DependencyChanged,
                },
            ));
        }
    }

    /// Requeue every cached CSV matching `pred`.
    pub fn requeue_csvs_where(&self, pred: impl Fn(&ClusterServiceVersion) -> bool) {
        let Some(csvs) = self.stores.csvs.get() else {
            return;
        };
        for csv in csvs.state() {
            if pred(&csv)
                && let Some(key) = ObjectKey::of(csv.as_ref())
            {
                self.requeue_csv(key);
            }
        }
    }
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
            groups_announced: Default::default(),
        }
    }
}
