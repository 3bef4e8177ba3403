//! The CatalogSource actor: one per CatalogSource, on the reconcile contract (`olm_runtime::reconcile`). It
//! runs the source its spec asks for (a gRPC registry at an address, a catalog image or a ConfigMap served
//! in-process), follows the connection state, loads the content into [`crate::catalogs::Catalogs`], writes
//! `status` as OLM does, and tells namespace resolution (a typed message) when what it serves changes.
//!
//! Each run: observe the spec → pure [`decide::steps`] (restart the source? read the content? is the poll
//! due?) → apply (connect, [`fetch::content`], publish, write the status). The loop serialises runs (a read
//! and a status write of one catalog never overlap) and coalesces causes; its one timer is the registry poll
//! (`spec.updateStrategy.registryPoll.interval`), or the error policy's retry of a failed status write.
//!
//! ```text
//! Observed / Requeue ─────────────────────────────────▶ trigger ─▶ run: decide ─▶ start source / fetch ─▶ publish + Resolve ─▶ status
//! ConnectionChanged { generation, state } (client monitor) ─┤  (READY marks the content stale)
//! Refresh (catalog ConfigMap changed) ──────────────────────┤  (marks the content stale)
//! the loop's timer (registry poll due) ─────────────────────┘
//! ```

pub mod decide;
pub mod fetch;
pub mod pod;
pub mod spec;
pub mod status_patch;

use crate::catalogs::{BundleSource, CatalogView};
use crate::deprecation::DeprecationIndex;
use crate::error::error_text;
use crate::error::{self, Error};
use crate::routes::Cause as ResolveCause;
use crate::shared::Shared;
use actix::prelude::*;
use decide::{Held, Observed};
use fetch::Fetched;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::catalog_source::{
    CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionStatus,
};
use messages::key::ObjectKey;
use messages::msg::ObjectEvent;
use olm_runtime::children::KeyedActor;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::ObjectActor;
use registry::client::{ClientOptions, ConnectionState, RegistryClient};
use resolver::{CatalogKey, CatalogSnapshot};
use spec::{Facts, Invalid, Plan};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The registry connection changed state (sent by the client's monitor task of source `generation`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ConnectionChanged {
    pub generation: u64,
    pub state: ConnectionState,
}

/// Re-read the catalog content (its ConfigMap changed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Refresh;

/// The running gRPC source (address and image plans) and what its monitor reported.
#[derive(Default)]
struct Connection {
    /// Bumped when the source is replaced, so late reports of the old client are dropped.
    generation: u64,
    client: Option<Arc<RegistryClient>>,
    monitor: Option<tokio::task::JoinHandle<()>>,
    state: Option<ConnectionState>,
    last_connect: Option<Time>,
}

/// What the last reads of the content produced.
#[derive(Default)]
struct Content {
    snapshot: Option<Arc<CatalogSnapshot>>,
    /// The deprecation notices of the content in `snapshot` (reported on Subscriptions, `crate::deprecation`).
    deprecations: Arc<DeprecationIndex>,
    source: Option<BundleSource>,
    fetch_error: Option<String>,
    config_map: Option<ConfigMapResourceReference>,
}

pub struct CatalogSourceActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<CatalogSource>>,
    control: Loop,
    /// The plan the running source was started for, and the priority the content was read with.
    plan: Option<Result<Plan, Invalid>>,
    priority: i32,
    conn: Connection,
    content: Content,
    /// A message asked for the content to be read again (READY, a ConfigMap change).
    stale: bool,
    interval_error: Option<String>,
    /// The poll interval in force and when the next poll is due (the loop's timer).
    poll: Option<(Duration, Instant)>,
    latest_poll: Option<Time>,
    written: Option<CatalogSourceStatus>,
}

impl Actor for CatalogSourceActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.catalog_source_count.inc();
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.teardown();
        self.shared.catalog_metrics.catalog_source_count.dec();
        let _ = self
            .shared
            .catalog_metrics
            .catalogsource_ready
            .remove_label_values(&[&self.key.name, self.key.namespace_or_empty()]);
        self.shared.catalogs.remove(&self.catalog_key());
        self.shared.catalog_images.forget(&self.catalog_key());
        self.shared
            .resolve(self.key.namespace_or_empty(), ResolveCause::CatalogChanged);
    }
}

impl ObjectActor for CatalogSourceActor {
    type Object = CatalogSource;
}

impl KeyedActor for CatalogSourceActor {
    type Shared = Shared;
    const KIND: &'static str = "CatalogSource";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            control: Loop::new(Self::KIND, key.clone(), error::policy())
                .with_chaos(shared.process.chaos.clone()),
            key,
            shared,
            latest: None,
            plan: None,
            priority: 0,
            conn: Connection::default(),
            content: Content::default(),
            stale: false,
            interval_error: None,
            poll: None,
            latest_poll: None,
            written: None,
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

fn now() -> Time {
    Time(Timestamp::now())
}

type Run = ResponseActFuture<CatalogSourceActor, Outcome>;

impl Reconciler for CatalogSourceActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, ctx: &mut Context<Self>) -> Run {
        let Some(cs) = self.latest.clone() else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        let at = Instant::now();
        let interval = cs.registry_poll().map(|p| p.poll_interval());
        self.interval_error = interval.as_ref().and_then(|i| i.parse_error.clone());
        let seen = Observed {
            plan: spec::plan(&self.key.name, &cs.spec),
            priority: cs.spec.priority.unwrap_or(0),
            poll_every: spec::poll_every(interval.map(|i| i.interval)),
            now: at,
        };
        let steps = decide::steps(
            &Held {
                plan: self.plan.clone(),
                priority: self.priority,
                stale: self.stale,
                poll: self.poll,
            },
            &seen,
        );
        self.priority = seen.priority;
        self.poll = steps.poll;
        if steps.polled {
            self.latest_poll = Some(now());
        }
        if steps.restart {
            self.teardown();
            self.plan = Some(seen.plan.clone());
            self.start(ctx, &seen.plan);
        }
        let next = decide::until_poll(steps.poll, at).map_or(Next::Idle, Next::After);
        let read = match (&seen.plan, steps.fetch) {
            (Ok(plan), true) => {
                self.stale = false;
                let key = self.catalog_key();
                self.shared
                    .catalog_metrics
                    .catalog_source_snapshots_total
                    .with_label_values(&[&key.name, &key.namespace])
                    .inc();
                Some(fetch::content(
                    self.shared.clone(),
                    plan.clone(),
                    key,
                    self.priority,
                    self.content.source.clone(),
                ))
            }
            _ => None,
        };
        let restarted = steps.restart;
        let fut = async move {
            match read {
                Some(read) => Some(read.await),
                None => None,
            }
        };
        Box::pin(fut.into_actor(self).then(move |read, act, _ctx| {
            let read_failed = read.as_ref().map(Result::is_err);
            let changed = read.is_some_and(|r| act.fetched(r));
            act.publish(changed || restarted);
            let (stale, next) = decide::after_read(read_failed, next);
            act.stale |= stale;
            act.write_status(next)
        }))
    }
}

impl CatalogSourceActor {
    fn catalog_key(&self) -> CatalogKey {
        CatalogKey::new(&self.key.name, self.key.namespace_or_empty())
    }

    fn facts(&self) -> Facts {
        Facts {
            plan: self
                .plan
                .clone()
                .unwrap_or_else(|| Err(Invalid("not observed yet".into()))),
            interval_error: self.interval_error.clone(),
            connection: self.conn.state,
            fetch_error: self.content.fetch_error.clone(),
            serving: self.content.snapshot.is_some(),
        }
    }

    /// Stop the running source and forget what it served.
    fn teardown(&mut self) {
        let generation = self.conn.generation + 1;
        if let Some(m) = self.conn.monitor.take() {
            m.abort();
        }
        if let Some(c) = self.conn.client.take() {
            c.close();
        }
        self.conn = Connection {
            generation,
            ..Connection::default()
        };
        self.content = Content {
            deprecations: std::mem::take(&mut self.content.deprecations),
            ..Content::default()
        };
    }

    fn start(&mut self, ctx: &mut Context<Self>, plan: &Result<Plan, Invalid>) {
        match plan {
            Err(Invalid(msg)) => {
                tracing::info!(catalog = %self.key, message = %msg, "invalid CatalogSource spec")
            }
            Ok(Plan::Address(addr)) => self.connect(ctx, addr),
            // Served in-process from the pulled image (crate::catalog_images) or the ConfigMap: read by the run
            // (decide::steps); pod.rs keeps OLM's Pod way.
            Ok(Plan::Image { .. } | Plan::ConfigMap(_)) => {}
        }
    }

    fn connect(&mut self, ctx: &mut Context<Self>, addr: &str) {
        let options = ClientOptions {
            probe_interval: self.shared.config.probe_interval,
            connect_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(30),
            ..ClientOptions::default()
        };
        match RegistryClient::connect(addr, options) {
            Ok(client) => {
                let client = Arc::new(client);
                let mut rx = client.watch_state();
                let me = ctx.address();
                let generation = self.conn.generation;
                self.conn.monitor = Some(tokio::spawn(async move {
                    loop {
                        let state = *rx.borrow_and_update();
                        me.do_send(ConnectionChanged { generation, state });
                        if rx.changed().await.is_err() {
                            break;
                        }
                    }
                }));
                self.content.source = Some(BundleSource::Grpc(client.clone()));
                self.conn.client = Some(client);
            }
            Err(e) => self.content.fetch_error = Some(error_text(&e)),
        }
    }

    /// Take what a read produced; whether what resolution sees changed.
    fn fetched(&mut self, r: Result<Fetched, String>) -> bool {
        if matches!(self.plan, Some(Ok(Plan::Image { .. }))) {
            // An in-process image catalog is READY once its content loaded (OLM's connection state).
            let state =
                crate::catalog_images::connection_after(r.is_ok(), self.content.snapshot.is_some());
            if self.conn.state != Some(state) {
                self.conn.state = Some(state);
                self.conn.last_connect = Some(now());
            }
        }
        let content = &mut self.content;
        match r {
            Ok(f) => {
                for note in &f.notes {
                    tracing::warn!(catalog = %self.key, note = %note, "catalog entry skipped");
                }
                let changed = content.snapshot.as_deref() != Some(&f.snapshot)
                    || *content.deprecations != f.deprecations;
                content.snapshot = Some(Arc::new(f.snapshot));
                content.deprecations = Arc::new(f.deprecations);
                content.source = Some(f.source);
                if f.config_map.is_some() {
                    content.config_map = f.config_map;
                }
                let was_failing = content.fetch_error.take().is_some();
                changed || was_failing
            }
            Err(e) => {
                tracing::info!(catalog = %self.key, error = %e, "catalog content not available");
                let keep = matches!(&self.plan, Some(Ok(p)) if spec::keeps_last_good(p));
                let dropped = !keep && content.snapshot.take().is_some();
                let changed = dropped || content.fetch_error.as_deref() != Some(e.as_str());
                content.fetch_error = Some(e);
                changed
            }
        }
    }

    /// Put what this catalog serves where resolution reads it; ask for resolution when it changed.
    fn publish(&mut self, changed: bool) {
        let facts = self.facts();
        let healthy = spec::healthy(&facts);
        let (_, problem) = spec::reason_and_message(&facts);
        let view = CatalogView {
            snapshot: if healthy {
                self.content.snapshot.clone()
            } else {
                None
            },
            deprecations: self.content.deprecations.clone(),
            source: self.content.source.clone(),
            healthy,
            problem,
        };
        let before = self
            .shared
            .catalogs
            .get(&self.catalog_key())
            .map(|v| v.healthy);
        self.shared.catalogs.publish(self.catalog_key(), view);
        let ready = i64::from(
            self.conn.state == Some(ConnectionState::Ready)
                || (matches!(facts.plan, Ok(Plan::ConfigMap(_))) && healthy),
        );
        self.shared
            .catalog_metrics
            .catalogsource_ready
            .with_label_values(&[&self.key.name, self.key.namespace_or_empty()])
            .set(ready);
        if changed || before != Some(healthy) {
            self.shared
                .resolve(self.key.namespace_or_empty(), ResolveCause::CatalogChanged);
        }
    }

    fn desired_status(&self) -> CatalogSourceStatus {
        let facts = self.facts();
        let (reason, message) = spec::reason_and_message(&facts);
        let connection_state = self.conn.state.map(|s| GrpcConnectionStatus {
            address: self
                .conn
                .client
                .as_ref()
                .map(|_| {
                    self.latest
                        .as_ref()
                        .and_then(|c| c.address())
                        .unwrap_or_default()
                })
                .unwrap_or_default(),
            last_observed_state: spec::wire_state(s),
            last_connect: self.conn.last_connect.clone(),
        });
        let previous = self
            .latest
            .as_ref()
            .and_then(|c| c.status.clone())
            .unwrap_or_default();
        CatalogSourceStatus {
            message,
            reason,
            config_map_reference: self.content.config_map.clone(),
            // No registry Pod or Service is run (image catalogs are served in-process): none to report.
            registry_service: None,
            connection_state,
            latest_image_registry_poll: self.latest_poll.clone(),
            conditions: previous.conditions,
        }
    }

    /// Write the status if it differs from the stored one and from our last write; the run ends with `next`.
    fn write_status(&mut self, next: Next) -> Run {
        let status = self.desired_status();
        let current = self.latest.as_ref().and_then(|c| c.status.as_ref());
        if current == Some(&status) || self.written.as_ref() == Some(&status) {
            return reconcile::now(Outcome::Done(next));
        }
        self.written = Some(status.clone());
        let api: Api<CatalogSource> =
            Api::namespaced(self.shared.client.clone(), self.key.namespace_or_empty());
        let name = self.key.name.clone();
        let fut = async move {
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(status_patch::of(&status)),
            )
            .await
            .map(drop)
        };
        Box::pin(fut.into_actor(self).map(move |r, act, _ctx| match r {
            Ok(()) => Outcome::Done(next),
            Err(source) => {
                act.written = None;
                let e = Error::CatalogSourceStatus {
                    key: act.key.clone(),
                    source,
                };
                match error::class(e.kind()) {
                    Some(class) => Outcome::failed(class, &e),
                    None => Outcome::Done(next),
                }
            }
        }))
    }
}

impl Handler<ObjectEvent<CatalogSource>> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<CatalogSource>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                self.latest = Some(obj);
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => ctx.stop(),
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

impl Handler<ConnectionChanged> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, msg: ConnectionChanged, ctx: &mut Self::Context) {
        if msg.generation != self.conn.generation || self.conn.state == Some(msg.state) {
            return;
        }
        tracing::info!(catalog = %self.key, state = %msg.state, "registry connection");
        self.conn.state = Some(msg.state);
        self.conn.last_connect = Some(now());
        if msg.state == ConnectionState::Ready {
            self.stale = true;
        }
        reconcile::trigger(self, ctx, Cause::Message("connection changed"));
    }
}

impl Handler<Refresh> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, _msg: Refresh, ctx: &mut Self::Context) {
        self.stale = true;
        reconcile::trigger(self, ctx, Cause::Message("refresh"));
    }
}

olm_runtime::requeue_handler!(CatalogSourceActor);

#[cfg(test)]
mod retry_tests;
