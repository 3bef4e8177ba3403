//! One actor per CatalogSource (through the runtime's registry), on the reconcile contract
//! (`olm_runtime::reconcile`): it keeps a registry gRPC connection to the catalog's address (`spec.address`, else
//! `status.registryService`, OLM's `Address()`), or, for a `configmap` catalog (which olm-rs serves without OLM's
//! registry pod), reads its ConfigMap, or, for an image catalog, pulls its image (crate::catalogs::image_catalog); it reads
//! the catalog (`load.rs`) and replaces the catalog's packages in the store. It reads again when the catalog's
//! served content may have changed: the address, display name, publisher or labels change, the catalog-operator
//! records a poll (`latestImageRegistryPoll`) or a new connection state, our own connection becomes READY, or
//! the periodic resync. As OLM's packageserver, a catalog whose connection goes TRANSIENT_FAILURE (or that is
//! deleted, or has no address, or whose current version does not decode) has its packages removed; they come
//! back when it answers again.
//!
//! Every cause (watch event, connection state, resync, the loop's timer) triggers a run; the loop runs one at a
//! time (a read holds the mailbox), coalesces the causes that arrive during a read into one more run, abandons a
//! run past its deadline and retries a failed read with backoff ([`decide::policy`]); runs are journaled and
//! counted as every actor's. Each run: [`decide::decide`] (pure) → connect, clear or read → the store.
//!
//! ```text
//! Observed / Requeue (resync) ───────────────────────────▶ trigger ─▶ run: decide ─▶ connect | clear | read ─▶ PackageStore
//! Connection { generation, state } (client monitor) ───────┤  (READY asks for a read, TRANSIENT_FAILURE clears)
//! the loop's timer (retry of a failed read) ────────────────┘
//! ```

pub mod decide;
pub mod image_catalog;

use crate::load;
use crate::manifest::CatalogInfo;
use crate::store::{CatalogKey, PackageStore};
use actix::prelude::*;
use decide::{Act, Observed, Source};
use k8s_openapi::api::core::v1::ConfigMap;
use messages::crd::catalog_source::CatalogSource;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::children::KeyedActor;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{ErrorClass, Failure, Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::ObjectActor;
use registry::client::{ClientOptions, ConnectionState, RegistryClient};
use std::sync::Arc;

#[derive(Clone)]
pub struct Shared {
    pub client: kube::Client,
    pub store: Arc<PackageStore>,
    pub options: ClientOptions,
    /// Pulls image catalogs (crate::catalogs::image_catalog).
    pub images: oci::Registry,
    /// The pull secret every image pull may use after the CatalogSource's own (`--global-pull-secret`).
    pub global_pull_secret: Option<catalog_image::secret_ref::SecretRef>,
    /// catalog-operator's catalog gRPC address (`--image-catalogs-address`): image catalogs are read there,
    /// not pulled (crate::catalogs::image_catalog::served).
    pub image_catalogs: Option<String>,
}

/// The registry connection changed state (sent by the monitor task of connection `generation`).
#[derive(Message)]
#[rtype(result = "()")]
struct Connection {
    generation: u64,
    state: ConnectionState,
}

pub struct CatalogActor {
    key: ObjectKey,
    shared: Shared,
    control: Loop,
    /// The newest observation of the CatalogSource (None until one decodes).
    latest: Option<Observed>,
    /// The observation the last run acted on.
    acted_on: Option<Observed>,
    client: Option<Arc<RegistryClient>>,
    monitor: Option<tokio::task::JoinHandle<()>>,
    /// Bumped on every new connection: a state reported by an older one is ignored.
    generation: u64,
    /// The last state the current connection reported.
    connection: Option<ConnectionState>,
    /// A read is owed though nothing observed changed: our connection became READY, the resync, or the last
    /// read failed or was abandoned at the deadline (the loop's retry reads again). A read that ends well pays it.
    asked: bool,
    /// The image and digest of an image catalog's last read.
    image_read: Option<(String, String)>,
}

type Run = ResponseActFuture<CatalogActor, Outcome>;

impl CatalogActor {
    fn catalog_key(&self) -> CatalogKey {
        CatalogKey {
            namespace: self.key.namespace_or_empty().to_string(),
            name: self.key.name.clone(),
        }
    }

    fn disconnect(&mut self) {
        if let Some(c) = self.client.take() {
            c.close();
        }
        if let Some(m) = self.monitor.take() {
            m.abort();
        }
        self.generation += 1;
        self.connection = None;
    }

    fn clear(&mut self) {
        let removed = self
            .shared
            .store
            .replace_catalog(&self.catalog_key(), Vec::new());
        if removed > 0 {
            tracing::info!(catalog = %self.key, removed, "catalog packages removed");
        }
    }

    /// The CatalogSource's current version does not decode: what it said is stale, so its connection and
    /// packages go, as for a catalog with no address, and the loop holds until a version that decodes is
    /// observed (it counts as new: the catalog is connected and read again).
    fn hold(&mut self, ctx: &mut Context<Self>, error: String) {
        tracing::warn!(catalog = %self.key, %error, "the CatalogSource does not decode; its packages are removed until it does");
        reconcile::hold(self, ctx, error);
        self.latest = None;
        self.acted_on = None;
        self.image_read = None;
        self.disconnect();
        self.clear();
    }

    fn connect(&mut self, address: &str, ctx: &mut Context<Self>) {
        self.disconnect();
        match RegistryClient::connect(address, self.shared.options.clone()) {
            Ok(client) => {
                let mut states = client.watch_state();
                let me = ctx.address();
                let generation = self.generation;
                self.monitor = Some(tokio::spawn(async move {
                    // The state as it is now (the probe may have finished already), then every change.
                    loop {
                        let state = *states.borrow_and_update();
                        if me.send(Connection { generation, state }).await.is_err()
                            || states.changed().await.is_err()
                        {
                            break;
                        }
                    }
                }));
                // The first read follows the first READY (a health probe or RPC that succeeded), so a catalog is
                // not read twice on start.
                self.client = Some(Arc::new(client));
            }
            Err(error) => {
                tracing::warn!(catalog = %self.key, %address, error = &error as &dyn std::error::Error, "invalid catalog address");
                self.clear();
            }
        }
    }

    /// Read the catalog as `observed` names it; the run ends when the packages are in the store.
    fn read(&mut self, observed: Observed) -> Run {
        let source = match (&observed.source, self.client.clone()) {
            (Source::Grpc(_), Some(client)) => Read::Grpc(client),
            (Source::ConfigMap(name), _) => {
                Read::ConfigMap(self.shared.client.clone(), name.clone())
            }
            (Source::Image(image), _) => match &self.shared.image_catalogs {
                Some(address) => Read::Served(address.clone(), self.shared.options.clone()),
                None => Read::Image(
                    self.shared.images.clone(),
                    image.clone(),
                    self.image_read
                        .as_ref()
                        .filter(|(i, _)| i == image)
                        .map(|(_, d)| d.clone()),
                ),
            },
            _ => return reconcile::now(Outcome::Done(Next::Idle)),
        };
        let started = std::time::Instant::now();
        let client = self.shared.client.clone();
        let global = self.shared.global_pull_secret.clone();
        let fut = async move {
            match source {
                Read::Grpc(client) => load::load(&client, &observed.info)
                    .await
                    .map_err(|e| olm_runtime::error::chain(&e))
                    .map(|p| (Some(p), None)),
                Read::Served(address, options) => {
                    crate::catalogs::image_catalog::served(&address, options, &observed.info)
                        .await
                        .map(|p| (Some(p), None))
                }
                Read::ConfigMap(client, name) => read_config_map(client, name, observed.info)
                    .await
                    .map(|p| (Some(p), None)),
                Read::Image(registry, image, last) => {
                    let auth = crate::catalogs::image_catalog::credentials(
                        &client,
                        &observed,
                        global.as_ref(),
                    )
                    .await;
                    crate::catalogs::image_catalog::read(
                        &registry,
                        &image,
                        &auth,
                        last.as_deref(),
                        observed.info,
                    )
                    .await
                    .map(|r| (r.packages, Some((image, r.digest))))
                }
            }
        };
        Box::pin(fut.into_actor(self).map(move |result, act, _ctx| match result {
            Ok((None, _)) => {
                act.asked = false;
                tracing::debug!(catalog = %act.key, "catalog image unchanged");
                Outcome::Done(Next::Idle)
            }
            Ok((Some(packages), image_read)) => {
                act.asked = false;
                if image_read.is_some() {
                    act.image_read = image_read;
                }
                let count = packages.len();
                let changes = act.shared.store.replace_catalog(&act.catalog_key(), packages);
                tracing::info!(catalog = %act.key, packages = count, changes, took_ms = started.elapsed().as_millis() as u64, "catalog read");
                Outcome::Done(Next::Idle)
            }
            Err(message) => {
                tracing::warn!(catalog = %act.key, error = %message, "catalog unreadable; its packages are removed until it can be read");
                act.image_read = None;
                act.clear();
                Outcome::Failed(Failure {
                    class: ErrorClass::Transient,
                    message,
                })
            }
        }))
    }
}

impl Reconciler for CatalogActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, ctx: &mut Context<Self>) -> Run {
        let Some(now) = self.latest.clone() else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        let lost = matches!(
            self.connection,
            Some(ConnectionState::TransientFailure | ConnectionState::Shutdown)
        );
        let act = decide::decide(self.acted_on.as_ref(), &now, self.asked, lost);
        self.acted_on = Some(now.clone());
        // Owed until a read ends well (a READY after a connect or a lost connection asks again).
        self.asked = act == Act::Read;
        match act {
            Act::Nothing => {}
            Act::Clear => {
                if !matches!(now.source, Source::Grpc(_)) {
                    self.disconnect();
                }
                self.clear();
            }
            Act::Connect(address) => self.connect(&address, ctx),
            Act::Read => {
                if !matches!(now.source, Source::Grpc(_)) && self.client.is_some() {
                    self.disconnect();
                }
                return self.read(now);
            }
        }
        reconcile::now(Outcome::Done(Next::Idle))
    }
}

enum Read {
    Grpc(Arc<RegistryClient>),
    /// catalog-operator's catalog server (address, client options).
    Served(String, ClientOptions),
    ConfigMap(kube::Client, String),
    /// Registry, image, digest read last.
    Image(oci::Registry, String, Option<String>),
}

/// A `configmap` catalog: its ConfigMap read, indexed as the registry server would, and queried the same way.
async fn read_config_map(
    client: kube::Client,
    name: String,
    info: CatalogInfo,
) -> Result<Vec<crate::types::PackageManifest>, String> {
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, &info.namespace);
    let cm = api
        .get_opt(&name)
        .await
        .map_err(|e| {
            format!(
                "cannot read configmap {}/{name}: {}",
                info.namespace,
                olm_runtime::error::chain(&e)
            )
        })?
        .ok_or_else(|| format!("configmap {}/{name} not found", info.namespace))?;
    let data = cm.data.unwrap_or_default();
    tokio::task::spawn_blocking(move || {
        let catalog = catalog::Catalog::from_configmap_data(&data).map_err(|e| {
            format!(
                "invalid catalog in configmap {name}: {}",
                olm_runtime::error::chain(&e)
            )
        })?;
        let store = registry::store::Store::build(catalog).map_err(|e| {
            format!(
                "cannot index the catalog of configmap {name}: {}",
                olm_runtime::error::chain(&e)
            )
        })?;
        Ok(load::from_store(&store, &info))
    })
    .await
    .map_err(|e| format!("catalog indexing task failed: {e}"))?
}

impl Actor for CatalogActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.disconnect();
        self.clear();
    }
}

impl ObjectActor for CatalogActor {
    type Object = CatalogSource;
}

impl KeyedActor for CatalogActor {
    type Shared = Shared;
    const KIND: &'static str = "CatalogSource";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        CatalogActor {
            control: Loop::new(Self::KIND, key.clone(), decide::policy()),
            key,
            shared,
            latest: None,
            acted_on: None,
            client: None,
            monitor: None,
            generation: 0,
            connection: None,
            asked: false,
            image_read: None,
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

impl Handler<ObjectEvent<CatalogSource>> for CatalogActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<CatalogSource>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(cs) => {
                self.latest = Some(decide::observe(&cs));
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => ctx.stop(),
            ObjectEvent::Undecodable(error) => self.hold(ctx, error),
        }
    }
}

impl Handler<Connection> for CatalogActor {
    type Result = ();

    fn handle(&mut self, msg: Connection, ctx: &mut Self::Context) {
        if msg.generation != self.generation {
            return;
        }
        tracing::debug!(catalog = %self.key, state = %msg.state, "registry connection");
        self.connection = Some(msg.state);
        match msg.state {
            ConnectionState::Ready => {
                self.asked = true;
                reconcile::trigger(self, ctx, Cause::Message("connection ready"));
            }
            ConnectionState::TransientFailure | ConnectionState::Shutdown => {
                reconcile::trigger(self, ctx, Cause::Message("connection lost"));
            }
            ConnectionState::Idle | ConnectionState::Connecting => {}
        }
    }
}

impl Handler<Requeue> for CatalogActor {
    type Result = ();

    fn handle(&mut self, msg: Requeue, ctx: &mut Self::Context) {
        self.asked = true;
        reconcile::requeue(self, ctx, msg);
    }
}

#[cfg(test)]
mod tests;
