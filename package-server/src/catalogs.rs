//! One actor per CatalogSource (through the runtime's registry): it keeps a registry gRPC connection to the
//! catalog's address (`spec.address`, else `status.registryService`, OLM's `Address()`), or, for a `configmap`
//! catalog (which olm-rs serves without OLM's registry pod), reads its ConfigMap; it reads the catalog
//! (`load.rs`) and replaces the catalog's packages in the store. It reads again when the catalog's served
//! content may have changed: the address, display name, publisher or labels change, the catalog-operator
//! records a poll (`latestImageRegistryPoll`) or a new connection state, our own connection becomes READY, or
//! the periodic resync. As OLM's packageserver, a catalog whose connection goes TRANSIENT_FAILURE (or that is
//! deleted, or has no address, or whose current version does not decode) has its packages removed; they come
//! back when it answers again. One read at a time per catalog; a change during a read schedules one more.

use crate::load;
use crate::manifest::CatalogInfo;
use crate::store::{CatalogKey, PackageStore};
use actix::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use messages::crd::catalog_source::{CatalogSource, SourceType};
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use registry::client::{ClientOptions, ConnectionState, RegistryClient};
use std::sync::Arc;

#[derive(Clone)]
pub struct Shared {
    pub client: kube::Client,
    pub store: Arc<PackageStore>,
    pub options: ClientOptions,
    /// Pulls image catalogs (crate::image_catalog).
    pub images: oci::Registry,
    /// The pull secret every image pull may use after the CatalogSource's own (`--global-pull-secret`).
    pub global_pull_secret: Option<catalog_image::secret_ref::SecretRef>,
}

/// Where a catalog's content is read from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A registry's gRPC address.
    Grpc(String),
    /// A ConfigMap in the catalog's namespace (`configmap`/`internal` catalogs: olm-rs runs no registry pod for
    /// them, catalog-operator loads them in-process, so we read the ConfigMap too).
    ConfigMap(String),
    /// A catalog image catalog-operator serves in-process (no address): pulled here too (crate::image_catalog).
    Image(String),
    None,
}

/// What the actor reads a catalog for (pure).
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub info: CatalogInfo,
    pub source: Source,
    /// The CatalogSource's `spec.secrets` (pull secrets of an image catalog).
    pub secrets: Vec<String>,
    /// Changes of served content the catalog-operator reports: latest poll, connection state, and the
    /// resourceVersion of a ConfigMap catalog it loaded.
    pub content_marks: (Option<String>, Option<String>, Option<String>),
}

pub fn observe(cs: &CatalogSource) -> Observed {
    let status = cs.status.as_ref();
    Observed {
        info: CatalogInfo {
            name: cs.metadata.name.clone().unwrap_or_default(),
            namespace: cs.metadata.namespace.clone().unwrap_or_default(),
            display_name: cs.spec.display_name.clone().unwrap_or_default(),
            publisher: cs.spec.publisher.clone().unwrap_or_default(),
            labels: cs.metadata.labels.clone().unwrap_or_default(),
            created: cs.metadata.creation_timestamp.clone(),
        },
        source: match cs.spec.source_type {
            SourceType::ConfigMap | SourceType::Internal => cs
                .spec
                .config_map
                .clone()
                .filter(|n| !n.is_empty())
                .map_or(Source::None, Source::ConfigMap),
            _ => match (
                cs.address(),
                cs.spec.image.clone().filter(|i| !i.is_empty()),
            ) {
                (Some(address), _) => Source::Grpc(address),
                (None, Some(image)) => Source::Image(image),
                (None, None) => Source::None,
            },
        },
        secrets: cs.spec.secrets.clone().unwrap_or_default(),
        content_marks: (
            status
                .and_then(|s| s.latest_image_registry_poll.as_ref())
                .map(|t| t.0.to_string()),
            status
                .and_then(|s| s.connection_state.as_ref())
                .map(|c| format!("{:?}", c.last_observed_state)),
            status
                .and_then(|s| s.config_map_reference.as_ref())
                .map(|r| r.resource_version.clone()),
        ),
    }
}

/// What to do on a new observation (pure).
#[derive(Debug, PartialEq)]
pub enum Step {
    Nothing,
    /// Drop the connection and the packages (no address).
    Clear,
    /// Connect to the new address, then read.
    Connect(String),
    /// Read again over the current connection.
    Read,
    /// (Re)read the catalog's ConfigMap (no connection).
    ReadConfigMap,
    /// (Re)read the catalog image (no connection; nothing pulled while its digest is unchanged).
    ReadImage,
}

pub fn step(previous: Option<&Observed>, now: &Observed) -> Step {
    let unchanged = previous.is_some_and(|p| p == now);
    let same_source = previous.is_some_and(|p| p.source == now.source);
    match &now.source {
        Source::None if same_source => Step::Nothing,
        Source::None => Step::Clear,
        _ if unchanged => Step::Nothing,
        Source::Grpc(_) if same_source => Step::Read,
        Source::Grpc(a) => Step::Connect(a.clone()),
        Source::ConfigMap(_) => Step::ReadConfigMap,
        Source::Image(_) => Step::ReadImage,
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Connection(ConnectionState);

pub struct CatalogActor {
    key: ObjectKey,
    shared: Shared,
    observed: Option<Observed>,
    client: Option<Arc<RegistryClient>>,
    monitor: Option<tokio::task::JoinHandle<()>>,
    /// Bumped on every new connection: a read or state change from an older one is ignored.
    epoch: u64,
    reading: bool,
    read_again: bool,
    /// The image and digest of an image catalog's last read.
    image_read: Option<(String, String)>,
}

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
        self.epoch += 1;
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
    /// packages go (a read under way is ignored), as for a catalog with no address, until a version that decodes
    /// is observed (it counts as new: the catalog is connected and read again).
    fn hold(&mut self, error: &str) {
        tracing::warn!(catalog = %self.key, %error, "the CatalogSource does not decode; its packages are removed until it does");
        self.observed = None;
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
                self.monitor = Some(tokio::spawn(async move {
                    // The state as it is now (the probe may have finished already), then every change.
                    loop {
                        let state = *states.borrow_and_update();
                        if me.send(Connection(state)).await.is_err()
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

    fn read(&mut self, ctx: &mut Context<Self>) {
        let Some(observed) = self.observed.clone() else {
            return;
        };
        let source = match (&observed.source, self.client.clone()) {
            (Source::Grpc(_), Some(client)) => Read::Grpc(client),
            (Source::ConfigMap(name), _) => {
                Read::ConfigMap(self.shared.client.clone(), name.clone())
            }
            (Source::Image(image), _) => Read::Image(
                self.shared.images.clone(),
                image.clone(),
                self.image_read
                    .as_ref()
                    .filter(|(i, _)| i == image)
                    .map(|(_, d)| d.clone()),
            ),
            _ => return,
        };
        if self.reading {
            self.read_again = true;
            return;
        }
        self.reading = true;
        let epoch = self.epoch;
        let started = std::time::Instant::now();
        let client = self.shared.client.clone();
        let global = self.shared.global_pull_secret.clone();
        ctx.spawn(
            async move {
                match source {
                    Read::Grpc(client) => load::load(&client, &observed.info).await.map_err(|e| olm_runtime::error::chain(&e)).map(|p| (Some(p), None)),
                    Read::ConfigMap(client, name) => read_config_map(client, name, observed.info).await.map(|p| (Some(p), None)),
                    Read::Image(registry, image, last) => {
                        let auth = crate::image_catalog::credentials(&client, &observed, global.as_ref()).await;
                        crate::image_catalog::read(&registry, &image, &auth, last.as_deref(), observed.info)
                            .await
                            .map(|r| (r.packages, Some((image, r.digest))))
                    }
                }
            }
            .into_actor(self)
            .map(move |result, act, ctx| {
                act.reading = false;
                if act.epoch == epoch {
                    match result {
                        Ok((None, _)) => {
                            tracing::debug!(catalog = %act.key, "catalog image unchanged");
                        }
                        Ok((Some(packages), image_read)) => {
                            if image_read.is_some() {
                                act.image_read = image_read;
                            }
                            let count = packages.len();
                            let changes = act.shared.store.replace_catalog(&act.catalog_key(), packages);
                            tracing::info!(catalog = %act.key, packages = count, changes, took_ms = started.elapsed().as_millis() as u64, "catalog read");
                        }
                        Err(error) => {
                            tracing::warn!(catalog = %act.key, %error, "catalog unreadable; its packages are removed until it can be read");
                            act.image_read = None;
                            act.clear();
                        }
                    }
                }
                if std::mem::take(&mut act.read_again) {
                    act.read(ctx);
                }
            }),
        );
    }
}

enum Read {
    Grpc(Arc<RegistryClient>),
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
    type Shared = Shared;
    const KIND: &'static str = "CatalogSource";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        CatalogActor {
            key,
            shared,
            observed: None,
            client: None,
            monitor: None,
            epoch: 0,
            reading: false,
            read_again: false,
            image_read: None,
        }
    }
}

impl Handler<ObjectEvent<CatalogSource>> for CatalogActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<CatalogSource>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(cs) => {
                let now = observe(&cs);
                let step = step(self.observed.as_ref(), &now);
                self.observed = Some(now);
                match step {
                    Step::Nothing => {}
                    Step::Clear => {
                        self.disconnect();
                        self.clear();
                    }
                    Step::Connect(address) => self.connect(&address, ctx),
                    Step::Read => self.read(ctx),
                    Step::ReadConfigMap | Step::ReadImage => {
                        if self.client.is_some() {
                            self.disconnect();
                        }
                        self.read(ctx);
                    }
                }
            }
            ObjectEvent::Deleted => ctx.stop(),
            ObjectEvent::Undecodable(error) => self.hold(&error),
        }
    }
}

impl Handler<Connection> for CatalogActor {
    type Result = ();

    fn handle(&mut self, Connection(state): Connection, ctx: &mut Self::Context) {
        tracing::debug!(catalog = %self.key, state = %state, "registry connection");
        match state {
            ConnectionState::Ready => self.read(ctx),
            ConnectionState::TransientFailure | ConnectionState::Shutdown => self.clear(),
            ConnectionState::Idle | ConnectionState::Connecting => {}
        }
    }
}

impl Handler<Requeue> for CatalogActor {
    type Result = ();

    fn handle(&mut self, _msg: Requeue, ctx: &mut Self::Context) {
        self.read(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn obs(address: Option<&str>, poll: Option<&str>) -> Observed {
        Observed {
            info: CatalogInfo::default(),
            source: address.map_or(Source::None, |a| Source::Grpc(a.to_string())),
            secrets: Vec::new(),
            content_marks: (poll.map(str::to_string), None, None),
        }
    }

    fn img(image: &str, poll: Option<&str>) -> Observed {
        Observed {
            info: CatalogInfo::default(),
            source: Source::Image(image.to_string()),
            secrets: Vec::new(),
            content_marks: (poll.map(str::to_string), None, None),
        }
    }

    fn cm(name: &str, rv: &str) -> Observed {
        Observed {
            info: CatalogInfo::default(),
            source: Source::ConfigMap(name.to_string()),
            secrets: Vec::new(),
            content_marks: (None, None, Some(rv.to_string())),
        }
    }

    #[rstest]
    #[case::first_with_address(None, obs(Some("a:1"), None), Step::Connect("a:1".into()))]
    #[case::first_without_address(None, obs(None, None), Step::Clear)]
    #[case::address_gone(Some(obs(Some("a:1"), None)), obs(None, None), Step::Clear)]
    #[case::still_no_address(Some(obs(None, None)), obs(None, Some("t")), Step::Nothing)]
    #[case::address_changed(Some(obs(Some("a:1"), None)), obs(Some("b:1"), None), Step::Connect("b:1".into()))]
    #[case::unchanged(
        Some(obs(Some("a:1"), Some("t1"))),
        obs(Some("a:1"), Some("t1")),
        Step::Nothing
    )]
    #[case::polled(
        Some(obs(Some("a:1"), Some("t1"))),
        obs(Some("a:1"), Some("t2")),
        Step::Read
    )]
    #[case::config_map_first(None, cm("c", "1"), Step::ReadConfigMap)]
    #[case::config_map_loaded_again(Some(cm("c", "1")), cm("c", "2"), Step::ReadConfigMap)]
    #[case::config_map_unchanged(Some(cm("c", "1")), cm("c", "1"), Step::Nothing)]
    #[case::grpc_to_config_map(Some(obs(Some("a:1"), None)), cm("c", "1"), Step::ReadConfigMap)]
    #[case::config_map_to_grpc(Some(cm("c", "1")), obs(Some("a:1"), None), Step::Connect("a:1".into()))]
    #[case::image_first(None, img("r/c:1", None), Step::ReadImage)]
    #[case::image_polled(
        Some(img("r/c:1", Some("t1"))),
        img("r/c:1", Some("t2")),
        Step::ReadImage
    )]
    #[case::image_unchanged(
        Some(img("r/c:1", Some("t1"))),
        img("r/c:1", Some("t1")),
        Step::Nothing
    )]
    #[case::image_to_grpc(Some(img("r/c:1", None)), obs(Some("a:1"), None), Step::Connect("a:1".into()))]
    fn steps(#[case] previous: Option<Observed>, #[case] now: Observed, #[case] want: Step) {
        assert_eq!(step(previous.as_ref(), &now), want);
    }
}
