//! Boot-time wiring shared by both binaries: the actix System on a multi-thread tokio runtime (kube's client
//! must live on a long-lived runtime, crate-stack §4), the HTTP endpoints (served first, so a standby replica
//! answers its probes), leader election when asked for, one registry + watch per kind (started only while
//! leading), and waiting for SIGTERM/SIGINT or lost leadership.
//!
//! ```text
//! connect → Wiring::new → serve endpoints → Activation::acquire (waits for the Lease, then renews it from a
//!         task of its own) → start registries → Activation::run_until_stopped (SIGTERM releases the Lease)
//! ```

use crate::activation::Activation;
use crate::args::EndpointArgs;
use crate::endpoint_auth::{AuthMode, EndpointAuth};
use crate::endpoints::{self, EndpointState, Surface};
use crate::journal::SharedJournal;
use crate::metrics::Metrics;
use crate::registry::{ObjectActor, Registry};
use crate::scope::Scope;
use crate::undecodable::Announcer;
use crate::watch::spawn_watch_projected;
use actix::{Addr, AsyncContext, Context};
use kube::Client;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use messages::msg::Journal;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Entries kept per registry journal.
const JOURNAL_CAPACITY: usize = 4096;

/// Run `fut` inside an actix System whose arbiter runs on a multi-thread tokio runtime.
pub fn block_on_system<F: Future>(fut: F) -> std::io::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut runtime = Some(runtime);
    let system =
        actix::System::with_tokio_rt(move || runtime.take().unwrap_or_else(unreachable_runtime));
    Ok(system.block_on(async {
        crate::heap_trim::spawn();
        crate::code_pages::spawn();
        fut.await
    }))
}

fn unreachable_runtime() -> tokio::runtime::Runtime {
    // actix calls the factory once; a second call would be a bug in actix-rt. Fall back to a fresh runtime.
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("cannot build a tokio runtime: {e}"),
    }
}

/// Collects what the endpoints need while registries are started.
pub struct Wiring {
    pub client: Client,
    pub metrics: Metrics,
    pub scope: Scope,
    journals: Arc<Mutex<Vec<SharedJournal>>>,
    synced: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
    /// Period of the registries' resync (zero: none).
    resync: Duration,
    /// The controller name of the Events on objects that do not decode (none: no Events).
    reporter: Option<String>,
    /// The fault injector of the registries started from now on (`OLM_RS_CHAOS`; none: no faults).
    chaos: Option<Arc<crate::chaos::Injector>>,
}

impl Wiring {
    pub fn new(client: Client, metrics: Metrics, scope: Scope) -> Self {
        Self {
            client,
            metrics,
            scope,
            journals: Arc::default(),
            synced: Arc::default(),
            resync: Duration::ZERO,
            reporter: None,
            chaos: None,
        }
    }

    /// A journal for the actors of one kind that no registry holds (`crate::children`), served at
    /// `/debug/journal` with the registries'.
    pub fn journal(&self) -> SharedJournal {
        let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(JOURNAL_CAPACITY)));
        self.journals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(journal.clone());
        journal
    }

    /// Make faults in the registries started from now on with `injector` (`crate::chaos::from_env`).
    pub fn with_chaos(mut self, injector: Option<Arc<crate::chaos::Injector>>) -> Self {
        self.chaos = injector;
        self
    }

    /// Publish a Warning Event, as `controller`, on each watched object of the registries started from now on
    /// whose current version does not decode ([`crate::undecodable`]).
    pub fn with_events(mut self, controller: &str) -> Self {
        self.reporter = Some(controller.to_string());
        self
    }

    /// Requeue every actor of every registry started from now on this often (`--resync-seconds`).
    pub fn with_resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// The registry of actor kind `A` and its store, not started yet: their address and store exist from now on
    /// (to build what the actors share), the registry runs from [`Self::start`].
    pub fn prepare<A>() -> Prepared<A>
    where
        A: ObjectActor,
        A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
    {
        let context = Context::new();
        let addr = context.address();
        Prepared {
            context,
            addr,
            writer: Writer::default(),
        }
    }

    /// Start the prepared registry of actor kind `A` and the watch feeding it. Namespaced kinds are watched in the
    /// scope (one namespace: a watch with a `metadata.namespace` field selector; several: a cluster watch whose
    /// events outside the scope are dropped).
    pub fn start<A>(&mut self, prepared: Prepared<A>, shared: A::Shared)
    where
        A: ObjectActor,
        A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
    {
        self.start_projected::<A, _>(prepared, shared, |_: &mut A::Object| {})
    }

    /// [`Self::start`] with each watched object cut down by `project` before the store, the registry and the
    /// actors see it (`crate::watch::spawn_watch_projected`).
    pub fn start_projected<A, P>(&mut self, prepared: Prepared<A>, shared: A::Shared, project: P)
    where
        A: ObjectActor,
        A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
        P: Fn(&mut A::Object) + Send + 'static,
    {
        let Prepared {
            context,
            addr,
            writer,
        } = prepared;
        let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(JOURNAL_CAPACITY)));
        let registry = Registry::<A>::new(shared, self.metrics.clone(), journal.clone())
            .with_resync(self.resync)
            .with_chaos(self.chaos.clone());
        self.synced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(registry.synced_flag());
        self.journals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(journal);
        context.run(registry);
        let config = match &self.scope {
            Scope::Namespaces(list) if list.len() == 1 => {
                watcher::Config::default().fields(&format!("metadata.namespace={}", list[0]))
            }
            _ => watcher::Config::default(),
        };
        let _task = spawn_watch_projected(
            writer,
            self.client.clone(),
            config,
            addr,
            self.scope.clone(),
            self.reporter
                .as_deref()
                .map(|controller| Announcer::new(self.client.clone(), controller)),
            project,
        );
    }

    /// Serve `/healthz`, `/readyz`, `/metrics`, `/debug/*` on `addr` (with `--metrics-bind-address`, the probes
    /// only, and the rest there); readiness follows `activation`'s role; `--metrics-auth` says who may read what
    /// is not a probe. Returns the bound address of `addr`.
    pub async fn serve(
        &self,
        addr: SocketAddr,
        args: &EndpointArgs,
        activation: &Activation,
    ) -> std::io::Result<SocketAddr> {
        let EndpointArgs {
            metrics_auth,
            metrics_bind_address,
        } = args;
        let auth = match metrics_auth {
            AuthMode::Rbac => EndpointAuth::new(AuthMode::Rbac, self.client.clone()),
            AuthMode::None => EndpointAuth::open(),
        };
        let state = EndpointState {
            metrics: self.metrics.clone(),
            journals: self.journals.clone(),
            synced: self.synced.clone(),
            role: activation.role(),
            auth: Arc::new(auth),
            heartbeat: activation.heartbeat(),
        };
        let Some(metrics_addr) = metrics_bind_address else {
            return endpoints::serve(addr, Surface::All, state).await;
        };
        let bound = endpoints::serve(addr, Surface::Probes, state.clone()).await?;
        let metrics = endpoints::serve(*metrics_addr, Surface::All, state).await?;
        tracing::info!(probes = %bound, metrics = %metrics, auth = ?metrics_auth, "metrics and debug endpoints on their own address");
        Ok(bound)
    }
}

/// A registry and its store made before the actors that use them ([`Wiring::prepare`]): what the actors share is
/// built with [`Prepared::addr`] and [`Prepared::store`], then the registry is started ([`Wiring::start`]).
/// Messages sent before it starts wait in its mailbox; the store is empty until its watch lists.
pub struct Prepared<A>
where
    A: ObjectActor,
    A::Object: kube::Resource<DynamicType = ()>,
{
    context: Context<Registry<A>>,
    addr: Addr<Registry<A>>,
    writer: Writer<A::Object>,
}

impl<A: ObjectActor> Prepared<A>
where
    A::Object: kube::Resource<DynamicType = ()>,
{
    pub fn addr(&self) -> Addr<Registry<A>> {
        self.addr.clone()
    }

    pub fn store(&self) -> Store<A::Object> {
        self.writer.as_reader()
    }
}
