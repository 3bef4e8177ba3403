//! Boot-time wiring shared by both binaries: the actix System on a multi-thread tokio runtime (kube's client
//! must live on a long-lived runtime, crate-stack §4), one registry + watch per kind, the HTTP endpoints, and
//! waiting for SIGTERM/SIGINT.

use crate::endpoints::{self, EndpointState};
use crate::metrics::Metrics;
use crate::registry::{ObjectActor, Registry, SharedJournal};
use crate::watch::spawn_watch;
use actix::{Actor, Addr};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, Client};
use messages::msg::Journal;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
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
    let system = actix::System::with_tokio_rt(move || {
        runtime.take().unwrap_or_else(|| unreachable_runtime())
    });
    Ok(system.block_on(fut))
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

/// Which namespaces the operator watches.
#[derive(Clone, Debug)]
pub enum Scope {
    Cluster,
    Namespaces(Vec<String>),
}

impl Scope {
    pub fn from_list(list: Option<Vec<String>>) -> Self {
        match list {
            Some(ns) => Scope::Namespaces(ns),
            None => Scope::Cluster,
        }
    }

    pub fn contains(&self, namespace: Option<&str>) -> bool {
        match (self, namespace) {
            (Scope::Cluster, _) | (_, None) => true,
            (Scope::Namespaces(list), Some(ns)) => list.iter().any(|n| n == ns),
        }
    }
}

/// Collects what the endpoints need while registries are started.
pub struct Wiring {
    pub client: Client,
    pub metrics: Metrics,
    pub scope: Scope,
    journals: Vec<SharedJournal>,
    synced: Vec<Arc<AtomicBool>>,
    /// Period of the registries' resync (zero: none).
    resync: Duration,
}

impl Wiring {
    pub fn new(client: Client, metrics: Metrics, scope: Scope) -> Self {
        Self {
            client,
            metrics,
            scope,
            journals: Vec::new(),
            synced: Vec::new(),
            resync: Duration::ZERO,
        }
    }

    /// Requeue every actor of every registry started from now on this often (`--resync-seconds`).
    pub fn with_resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Start the registry of actor kind `A` and the watch feeding it. Namespaced kinds are watched in the scope
    /// (one namespace: a watch with a `metadata.namespace` field selector; several: a cluster watch whose events outside the scope are dropped).
    pub fn start<A>(&mut self, shared: A::Shared) -> (Addr<Registry<A>>, Store<A::Object>)
    where
        A: ObjectActor,
        A::Object: DeserializeOwned + kube::Resource<DynamicType = ()>,
    {
        let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(JOURNAL_CAPACITY)));
        let registry = Registry::<A>::new(shared, self.metrics.clone(), journal.clone())
            .with_resync(self.resync);
        self.synced.push(registry.synced_flag());
        self.journals.push(journal);
        let addr = registry.start();
        let api: Api<A::Object> = Api::all(self.client.clone());
        let config = match &self.scope {
            Scope::Namespaces(list) if list.len() == 1 => {
                watcher::Config::default().fields(&format!("metadata.namespace={}", list[0]))
            }
            _ => watcher::Config::default(),
        };
        let (store, _task) = spawn_watch(api, config, addr.clone(), self.scope.clone());
        (addr, store)
    }

    /// Serve `/healthz`, `/readyz`, `/metrics`, `/debug/*` on `addr`.
    pub async fn serve(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let state = EndpointState {
            metrics: self.metrics.clone(),
            journals: self.journals.clone(),
            synced: self.synced.clone(),
        };
        endpoints::serve(addr, state).await
    }
}

/// Wait for SIGTERM (Kubernetes stopping the pod) or SIGINT.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(error) => {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "cannot listen for SIGTERM; waiting for Ctrl-C only"
                    );
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => {},
            _ = tokio::signal::ctrl_c() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
