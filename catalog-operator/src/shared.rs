//! What every actor of catalog-operator shares: the client, the reflector stores, the metrics, the catalogs'
//! served content, and the registries' addresses (so actors can send typed messages to each other's actors).

use actix::Recipient;
use kube::Client;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Subscription;
use messages::key::ObjectKey;
use olm_runtime::metrics::Metrics;
use olm_runtime::own_account::OwnAccount;
use olm_runtime::registry::Forward;
use std::sync::Arc;
use std::time::Duration;

use crate::catalogs::Catalogs;
use crate::group_view::GroupView;
use crate::handover::{HandedOver, Handovers};
use crate::metrics::CatalogMetrics;
use crate::routes::{Cause, Resolve};
use crate::wants::{Decision, Want};

#[derive(Clone)]
pub struct Shared {
    pub client: Client,
    pub metrics: Metrics,
    pub catalog_metrics: CatalogMetrics,
    pub stores: Arc<Stores>,
    pub registries: Arc<Registries>,
    pub catalogs: Arc<Catalogs>,
    pub config: Arc<Config>,
    /// Discovery answers for InstallPlan steps.
    pub kinds: crate::kinds::Kinds,
    /// Bundle images pulled and unpacked in this process, cached by digest.
    pub bundles: Arc<crate::unpacker::Unpacker>,
    /// Catalog images served in-process.
    pub catalog_images: Arc<crate::catalog_images::CatalogImages>,
    /// Subscription status writes that change only catalog health (a global catalog's fan-out rewrites every
    /// Subscription) take one of these, so that such a fan-out never floods the API server ahead of the writes
    /// of an install ([`HEALTH_WRITES`]).
    pub health_writes: Arc<tokio::sync::Semaphore>,
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
    /// catalog-operator's account for its self-grants (pull secrets, CRD lists), with package-server's
    /// (`self_grant`).
    pub self_grantee: Option<crate::self_grant::Grantee>,
    /// Resolution's decision numbers, shared by every namespace actor.
    pub decision_numbers: crate::wants::DecisionNumbers,
}

/// Health-only Subscription status writes in flight at once.
pub const HEALTH_WRITES: usize = 8;

/// Settings from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    /// The global catalog namespace (OLM's `--namespace`): its catalogs serve every namespace.
    pub global_namespace: String,
    /// How long an InstallPlan keeps retrying a failing step before it fails (OLM's `--install-plan-retry-timeout`).
    pub install_plan_retry_timeout: Duration,
    /// How often a registry connection is probed.
    pub probe_interval: Duration,
    /// The pull secret every image pull may use after the CatalogSource's own (`--global-pull-secret`).
    pub global_pull_secret: Option<catalog_image::secret_ref::SecretRef>,
}

/// Read-only caches filled by the watches, made before the actors (empty until their watches list).
pub struct Stores {
    pub catalog_sources: Store<CatalogSource>,
    pub subscriptions: Store<Subscription>,
    pub install_plans: Store<InstallPlan>,
    pub csvs: Store<ClusterServiceVersion>,
    /// Metadata and `spec.upgradeStrategy` only ([`GroupView`]): a spec we cannot decode must not hide a group.
    pub operator_groups: Store<GroupView>,
    /// Open once every store above has completed its first list ([`Stores::watch_readiness`]).
    ready: olm_runtime::gate::Gate,
}

/// The writing ends of the stores plain watches fill (the other stores are their registries').
pub struct StoreWriters {
    pub csvs: Writer<ClusterServiceVersion>,
    pub operator_groups: Writer<GroupView>,
}

impl Stores {
    /// The stores, the registries' own given, the rest empty with their writers.
    pub fn new(
        catalog_sources: Store<CatalogSource>,
        subscriptions: Store<Subscription>,
        install_plans: Store<InstallPlan>,
    ) -> (Self, StoreWriters) {
        let writers = StoreWriters {
            csvs: Writer::default(),
            operator_groups: Writer::default(),
        };
        let stores = Self {
            catalog_sources,
            subscriptions,
            install_plans,
            csvs: writers.csvs.as_reader(),
            operator_groups: writers.operator_groups.as_reader(),
            ready: olm_runtime::gate::Gate::default(),
        };
        (stores, writers)
    }

    /// Wait for every store's first list, then open the gate [`Shared::stores_ready`] waits on. Call once. This
    /// task is the only one to wait on the stores themselves: kube-runtime's `Store::wait_until_ready` sits on a
    /// futures `oneshot` receiver, which keeps the waker of the last task that polled it only, so with two
    /// concurrent waiters one of them may never wake (an InstallPlan present at start then hung forever, waiting
    /// beside the namespace sync).
    pub async fn watch_readiness(&self) {
        let _ = self.subscriptions.wait_until_ready().await;
        let _ = self.install_plans.wait_until_ready().await;
        let _ = self.catalog_sources.wait_until_ready().await;
        let _ = self.csvs.wait_until_ready().await;
        let _ = self.operator_groups.wait_until_ready().await;
        self.ready.open();
    }
}

/// Where actors send each other typed messages: recipients of message types (never actor types, so this module
/// imports no actor module), made before the actors (`olm_runtime::wiring::Prepared`, the resolver's context).
pub struct Registries {
    /// The Subscription registry: the namespace actors' decisions, routed to each Subscription's actor.
    pub subscriptions: Recipient<Forward<Decision>>,
    /// The namespace router (`namespace::NamespaceResolver`): resolution requests and Subscriptions' wants.
    pub resolve: Recipient<Resolve>,
    pub wants: Recipient<Want>,
    /// The InstallPlan registry: nudges to the actor of a plan whose first status was handed over.
    pub install_plans: Recipient<Forward<HandedOver>>,
    /// First statuses of new InstallPlans, from resolution to each plan's actor.
    pub handovers: Handovers,
}

impl Shared {
    /// Ask for the resolution of `namespace` (coalesced by the resolver).
    pub fn resolve(&self, namespace: &str, cause: Cause) {
        self.registries.resolve.do_send(Resolve {
            namespace: namespace.to_string(),
            cause,
        });
    }

    /// Wait until every store has completed its first list (a dropped writer counts as ready). Any number of
    /// tasks may wait at once.
    pub async fn stores_ready(&self) {
        self.stores.ready.opened().await;
    }

    pub fn subscriptions(&self) -> Vec<Arc<Subscription>> {
        self.stores.subscriptions.state()
    }

    pub fn install_plans(&self) -> Vec<Arc<InstallPlan>> {
        self.stores.install_plans.state()
    }

    /// Plan `key` as the store holds it.
    pub fn install_plan(&self, key: &ObjectKey) -> Option<Arc<InstallPlan>> {
        self.stores.install_plans.get(
            &kube::runtime::reflector::ObjectRef::new(&key.name).within(key.namespace_or_empty()),
        )
    }

    pub fn catalog_sources(&self) -> Vec<Arc<CatalogSource>> {
        self.stores.catalog_sources.state()
    }

    /// Whether any Subscription lives in `namespace`.
    pub fn has_subscription(&self, namespace: &str) -> bool {
        self.stores
            .subscriptions
            .state()
            .iter()
            .any(|sub| sub.metadata.namespace.as_deref() == Some(namespace))
    }

    pub fn csvs(&self) -> Vec<Arc<ClusterServiceVersion>> {
        self.stores.csvs.state()
    }

    pub fn operator_groups(&self) -> Vec<Arc<GroupView>> {
        self.stores.operator_groups.state()
    }
}

#[cfg(test)]
impl Shared {
    /// A `Shared` on `client` with empty stores (listed: nothing), registries whose actors never run (what is
    /// sent to them is dropped), global namespace `olm` (actor tests without a cluster).
    pub fn for_tests(client: Client) -> Self {
        use crate::install_plan::InstallPlanActor;
        use crate::namespace::NamespaceResolver;
        use crate::subscription::SubscriptionActor;
        use actix::AsyncContext;
        use olm_runtime::wiring::Wiring;
        let metrics = Metrics::new().expect("metrics");
        let catalog_metrics = CatalogMetrics::register(&metrics.registry).expect("catalog metrics");
        let (stores, _writers) = Stores::new(
            Writer::default().as_reader(),
            Writer::default().as_reader(),
            Writer::default().as_reader(),
        );
        let resolver = actix::Context::<NamespaceResolver>::new().address();
        Shared {
            client,
            metrics,
            catalog_metrics,
            stores: Arc::new(stores),
            registries: Arc::new(Registries {
                subscriptions: Wiring::prepare::<SubscriptionActor>().addr().recipient(),
                resolve: resolver.clone().recipient(),
                wants: resolver.recipient(),
                install_plans: Wiring::prepare::<InstallPlanActor>().addr().recipient(),
                handovers: Handovers::default(),
            }),
            catalogs: Arc::new(Catalogs::default()),
            config: Arc::new(Config {
                global_namespace: "olm".into(),
                install_plan_retry_timeout: Duration::from_secs(60),
                probe_interval: Duration::from_secs(10),
                global_pull_secret: None,
            }),
            kinds: Default::default(),
            bundles: Arc::default(),
            catalog_images: Arc::default(),
            health_writes: Arc::new(tokio::sync::Semaphore::new(HEALTH_WRITES)),
            process: Arc::default(),
        }
    }
}
