//! What every actor of olm-operator shares: the client, the reflector stores, the metrics, and where to send
//! typed messages to each other's actors (`Recipient`s and [`Route`]s of message types, never actor types:
//! this module imports no actor module, so no import circle runs through it; `run.rs` wires them in).

use crate::events::Debouncer;
use crate::routes::{JanitorMsg, Route, ViewChanged};
use crate::stores::{CsvStores, CsvWriters};
use actix::Recipient;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::olm_config::OLMConfig;
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{ChangeProvidedApis, OperatorGroupMsg, Requeue, RequeueReason};
use olm_runtime::metrics::Metrics;
use olm_runtime::own_account::OwnAccount;
use olm_runtime::registry::{Ask, Forward};
use olm_runtime::scope::Scope;
use olm_runtime::singleton::Singleton;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct Shared {
    pub client: Client,
    pub metrics: Metrics,
    pub stores: Arc<Stores>,
    pub registries: Arc<Registries>,
    /// Namespaces that keep all-namespaces copies while copies are disabled (`--protected-copied-csv-namespaces`).
    pub protected_copy_namespaces: Arc<std::collections::BTreeSet<String>>,
    /// What the process holds for every actor besides stores and mailboxes, made once at start.
    pub process: Arc<Process>,
}

/// What the process holds for every actor besides stores and mailboxes (no process-wide statics).
#[derive(Default)]
pub struct Process {
    /// The fault injector of the actors' loops (`OLM_RS_CHAOS`; none: no faults).
    pub chaos: Option<Arc<olm_runtime::chaos::Injector>>,
    /// Who this process is and the accounts it may act as (`olm_runtime::own_account`).
    pub own_account: OwnAccount,
    /// The certificate Secrets this process granted itself: (namespace, CSV uid, the Secrets' names)
    /// (`csv::served::cert_grant`).
    pub cert_grants: Mutex<HashSet<(String, String, Vec<String>)>>,
    /// The serving certificates' validity when `OLM_RS_CERT_VALIDITY_SECONDS` sets one (else OLM's two years).
    pub cert_validity: Option<std::time::Duration>,
    /// Phase Events, debounced per CSV (`events::announce_phase`).
    pub phase_events: Debouncer,
}

/// Read-only caches filled by the watches, made before the actors (empty until their watches list).
pub struct Stores {
    pub csvs: Store<ClusterServiceVersion>,
    pub operator_groups: Store<OperatorGroup>,
    pub namespaces: Store<Namespace>,
    /// The cluster's OLMConfig (`disableCopiedCSVs`).
    pub olm_config: Store<OLMConfig>,
    /// The namespaces the operator watches (copies and labels stay inside them).
    pub scope: Scope,
    /// What CSV actors read besides CSVs and OperatorGroups (installed objects, CRDs, cluster info, metrics).
    pub csv: CsvStores,
    /// The version of each OperatorGroup its members were last asked to look at (outlives a group actor).
    pub groups_announced: crate::group_announced::Announced,
}

/// The writing ends of the stores plain watches fill (the CSV and OperatorGroup stores are their registries').
pub struct StoreWriters {
    pub namespaces: Writer<Namespace>,
    pub olm_config: Writer<OLMConfig>,
    pub csv: CsvWriters,
}

impl Stores {
    /// The stores, the CSV and OperatorGroup ones given (their registries' own), the rest empty with their
    /// writers.
    pub fn new(
        csvs: Store<ClusterServiceVersion>,
        operator_groups: Store<OperatorGroup>,
        scope: Scope,
        (csv, csv_writers): (CsvStores, CsvWriters),
    ) -> (Self, StoreWriters) {
        let writers = StoreWriters {
            namespaces: Writer::default(),
            olm_config: Writer::default(),
            csv: csv_writers,
        };
        let stores = Self {
            csvs,
            operator_groups,
            namespaces: writers.namespaces.as_reader(),
            olm_config: writers.olm_config.as_reader(),
            scope,
            csv,
            groups_announced: Default::default(),
        };
        (stores, writers)
    }
}

/// Where actors send each other typed messages, made before the actors: the registries' mailboxes exist before
/// they run (`olm_runtime::wiring::Prepared`), the singletons' likewise (`Singleton::prepare`).
pub struct Registries {
    /// The CSV registry: requeues of CSV actors.
    pub csvs: Route<Requeue>,
    /// The OperatorGroup registry: nudges of group actors.
    pub operator_groups: Route<OperatorGroupMsg>,
    /// The OperatorGroup registry: a CSV's request to change its group's provided APIs (answered).
    pub group_asks: Recipient<Ask<ChangeProvidedApis>>,
    /// The Operator view (`operators.coreos.com/v1` Operators); started again by the next message when it died.
    pub operator_view: Singleton<ViewChanged>,
    /// The cluster janitor (`janitor/`): what gone CSVs leave in the cluster, the start-up RBAC sweep; started
    /// again by the next message when it died.
    pub janitor: Singleton<JanitorMsg>,
    /// The actor keeping the OLMConfig `DisabledCopiedCSVs` condition (`operator_group::olm_config`).
    pub olm_config_status: Singleton<Requeue>,
}

impl Shared {
    /// Ask the actor of CSV `key` (if it runs) to reconcile now: routed by the CSV registry itself.
    pub fn requeue_csv(&self, key: ObjectKey) {
        self.registries.csvs.do_send(Forward(
            key,
            Requeue {
                reason: RequeueReason::DependencyChanged,
            },
        ));
    }

    /// Requeue every cached CSV matching `pred`.
    pub fn requeue_csvs_where(&self, pred: impl Fn(&ClusterServiceVersion) -> bool) {
        for csv in self.stores.csvs.state() {
            if pred(&csv)
                && let Some(key) = ObjectKey::of(csv.as_ref())
            {
                self.requeue_csv(key);
            }
        }
    }
}
