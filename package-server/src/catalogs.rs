//! One actor per CatalogSource (through the runtime's registry): it keeps a registry gRPC connection to the
//! catalog's address (`spec.address`, else `status.registryService`, OLM's `Address()`), reads the catalog
//! (`load.rs`) and replaces the catalog's packages in the store. It reads again when the catalog's served
//! content may have changed: the address, display name, publisher or labels change, the catalog-operator
//! records a poll (`latestImageRegistryPoll`) or a new connection state, our own connection becomes READY, or
//! the periodic resync. As OLM's packageserver, a catalog whose connection goes TRANSIENT_FAILURE (or that is
//! deleted, or has no address) has its packages removed; they come back when it answers again. One read at a
//! time per catalog; a change during a read schedules one more.

use crate::load;
use crate::manifest::CatalogInfo;
use crate::store::{CatalogKey, PackageStore};
use actix::prelude::*;
use messages::crd::catalog_source::CatalogSource;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use registry::client::{ClientOptions, ConnectionState, RegistryClient};
use std::sync::Arc;

#[derive(Clone)]
pub struct Shared {
    pub store: Arc<PackageStore>,
    pub options: ClientOptions,
}

/// What the actor reads a catalog for (pure).
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub info: CatalogInfo,
    pub address: Option<String>,
    /// Changes of served content the catalog-operator reports: (latest poll, connection state).
    pub content_marks: (Option<String>, Option<String>),
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
        address: cs.address(),
        content_marks: (
            status
                .and_then(|s| s.latest_image_registry_poll.as_ref())
                .map(|t| t.0.to_string()),
            status
                .and_then(|s| s.connection_state.as_ref())
                .map(|c| format!("{:?}", c.last_observed_state)),
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
}

pub fn step(previous: Option<&Observed>, now: &Observed) -> Step {
    match (&now.address, previous.and_then(|p| p.address.as_ref())) {
        (None, None) if previous.is_some() => Step::Nothing,
        (None, _) => Step::Clear,
        (Some(a), Some(b)) if a == b => {
            if previous.is_some_and(|p| p == now) {
                Step::Nothing
            } else {
                Step::Read
            }
        }
        (Some(a), _) => Step::Connect(a.clone()),
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
        let (Some(client), Some(observed)) = (self.client.clone(), self.observed.clone()) else {
            return;
        };
        if self.reading {
            self.read_again = true;
            return;
        }
        self.reading = true;
        let epoch = self.epoch;
        let started = std::time::Instant::now();
        ctx.spawn(
            async move { load::load(&client, &observed.info).await }
                .into_actor(self)
                .map(move |result, act, ctx| {
                    act.reading = false;
                    if act.epoch == epoch {
                        match result {
                            Ok(packages) => {
                                let count = packages.len();
                                let changes = act.shared.store.replace_catalog(&act.catalog_key(), packages);
                                tracing::info!(catalog = %act.key, packages = count, changes, took_ms = started.elapsed().as_millis() as u64, "catalog read");
                            }
                            Err(error) => {
                                tracing::warn!(catalog = %act.key, error = &error as &dyn std::error::Error, "catalog unreachable; its packages are removed until it answers");
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
                }
            }
            ObjectEvent::Deleted => ctx.stop(),
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
            address: address.map(str::to_string),
            content_marks: (poll.map(str::to_string), None),
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
    fn steps(#[case] previous: Option<Observed>, #[case] now: Observed, #[case] want: Step) {
        assert_eq!(step(previous.as_ref(), &now), want);
    }
}
