//! The CatalogSource actor: one per CatalogSource. It runs the source its spec asks for (a gRPC registry at
//! an address, a catalog image or a ConfigMap served in-process), follows the connection
//! state, loads the content into [`crate::catalogs::Catalogs`], writes `status` as OLM does, and tells namespace
//! resolution (a typed message) when what it serves changes.
//!
//! ```text
//! Observed ─▶ spec::plan ─▶ start source ──▶ ConnectionChanged (client monitor) ─▶ Refresh ─▶ Fetched ─▶ publish + Resolve
//!                                          └─ ConfigMap watch / registryPoll ───────▶ Refresh
//! ```

pub mod pod;
pub mod spec;

use crate::catalogs::{BundleSource, CatalogView, FetchError};
use crate::deprecation::DeprecationIndex;
use crate::namespace::Cause;
use crate::shared::Shared;
use crate::snapshot;
use actix::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::catalog_source::{
    CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionStatus,
    RegistryServiceStatus,
};
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use registry::client::{ClientOptions, ConnectionState, RegistryClient};
use resolver::{CatalogKey, CatalogSnapshot};
use spec::{Facts, Invalid, Plan};
use std::sync::Arc;
use std::time::Duration;

/// The registry connection changed state (sent by the client's monitor task).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ConnectionChanged(pub ConnectionState);

/// Re-read the catalog content (poll tick, ConfigMap change, connection READY).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Refresh;

struct Fetched {
    snapshot: CatalogSnapshot,
    deprecations: DeprecationIndex,
    source: BundleSource,
    config_map: Option<ConfigMapResourceReference>,
    notes: Vec<String>,
}

pub struct CatalogSourceActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<CatalogSource>>,
    plan: Option<Result<Plan, Invalid>>,
    /// Bumped when the source is replaced, so late answers of the old one are dropped.
    generation: u64,
    client: Option<Arc<RegistryClient>>,
    monitor: Option<tokio::task::JoinHandle<()>>,
    connection: Option<ConnectionState>,
    last_connect: Option<Time>,
    snapshot: Option<Arc<CatalogSnapshot>>,
    /// The deprecation notices of the content in `snapshot` (reported on Subscriptions, `crate::deprecation`).
    deprecations: Arc<DeprecationIndex>,
    source: Option<BundleSource>,
    fetch_error: Option<String>,
    fetching: bool,
    refresh_again: bool,
    interval_error: Option<String>,
    poll: Option<(Duration, SpawnHandle)>,
    config_map: Option<ConfigMapResourceReference>,
    registry_service: Option<RegistryServiceStatus>,
    latest_poll: Option<Time>,
    written: Option<CatalogSourceStatus>,
    priority: i32,
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
            .resolve(self.key.namespace_or_empty(), Cause::CatalogChanged);
    }
}

impl ObjectActor for CatalogSourceActor {
    type Object = CatalogSource;
    type Shared = Shared;
    const KIND: &'static str = "CatalogSource";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            key,
            shared,
            latest: None,
            plan: None,
            generation: 0,
            client: None,
            monitor: None,
            connection: None,
            last_connect: None,
            snapshot: None,
            deprecations: Arc::default(),
            source: None,
            fetch_error: None,
            fetching: false,
            refresh_again: false,
            interval_error: None,
            poll: None,
            config_map: None,
            registry_service: None,
            latest_poll: None,
            written: None,
            priority: 0,
        }
    }
}

fn now() -> Time {
    Time(Timestamp::now())
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
            connection: self.connection,
            fetch_error: self.fetch_error.clone(),
            serving: self.snapshot.is_some(),
        }
    }

    fn teardown(&mut self) {
        self.generation += 1;
        if let Some(m) = self.monitor.take() {
            m.abort();
        }
        if let Some(c) = self.client.take() {
            c.close();
        }
        self.connection = None;
        self.snapshot = None;
        self.source = None;
        self.fetch_error = None;
        self.fetching = false;
        self.config_map = None;
        self.registry_service = None;
    }

    fn reconcile(&mut self, ctx: &mut Context<Self>) {
        let Some(cs) = self.latest.clone() else {
            return;
        };
        let plan = spec::plan(&self.key.name, &cs.spec);
        let interval = cs.registry_poll().map(|p| p.poll_interval());
        self.interval_error = interval.as_ref().and_then(|i| i.parse_error.clone());
        let priority = cs.spec.priority.unwrap_or(0);
        let plan_changed = self.plan.as_ref() != Some(&plan);
        let priority_changed = priority != self.priority;
        self.priority = priority;
        if plan_changed {
            self.teardown();
            self.plan = Some(plan.clone());
            self.start(ctx, plan);
        } else if priority_changed {
            ctx.notify(Refresh);
        }
        self.schedule_poll(ctx, spec::poll_every(interval.map(|i| i.interval)));
        self.publish(plan_changed);
        self.write_status(ctx);
    }

    fn schedule_poll(&mut self, ctx: &mut Context<Self>, every: Option<Duration>) {
        if self.poll.as_ref().map(|(d, _)| *d) == every {
            return;
        }
        if let Some((_, h)) = self.poll.take() {
            ctx.cancel_future(h);
        }
        if let Some(d) = every {
            let h = ctx.run_interval(d, |act, ctx| {
                act.latest_poll = Some(now());
                act.refresh(ctx);
            });
            self.poll = Some((d, h));
        }
    }

    fn start(&mut self, ctx: &mut Context<Self>, plan: Result<Plan, Invalid>) {
        match plan {
            Err(Invalid(msg)) => {
                tracing::info!(catalog = %self.key, message = %msg, "invalid CatalogSource spec")
            }
            Ok(Plan::Address(addr)) => self.connect(ctx, &addr),
            // Served in-process from the pulled image (crate::catalog_image); pod.rs keeps OLM's Pod way.
            Ok(Plan::Image { .. }) => self.refresh(ctx),
            Ok(Plan::ConfigMap(_)) => self.refresh(ctx),
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
                self.monitor = Some(tokio::spawn(async move {
                    loop {
                        let s = *rx.borrow_and_update();
                        me.do_send(ConnectionChanged(s));
                        if rx.changed().await.is_err() {
                            break;
                        }
                    }
                }));
                self.source = Some(BundleSource::Grpc(client.clone()));
                self.client = Some(client);
            }
            Err(e) => self.fetch_error = Some(error_text(&e)),
        }
    }

    fn refresh(&mut self, ctx: &mut Context<Self>) {
        if self.fetching {
            self.refresh_again = true;
            return;
        }
        let Some(Ok(plan)) = self.plan.clone() else {
            return;
        };
        let key = self.catalog_key();
        let priority = self.priority;
        let generation = self.generation;
        let client = self.shared.client.clone();
        let source = self.source.clone();
        let name = self.key.name.clone();
        let shared = self.shared.clone();
        self.fetching = true;
        self.shared
            .catalog_metrics
            .catalog_source_snapshots_total
            .with_label_values(&[&key.name, &key.namespace])
            .inc();
        let fut = async move {
            let (source, config_map) = match (&plan, source) {
                (Plan::ConfigMap(cm), _) => {
                    let (store, reference) =
                        load_config_map(&client, &key.namespace, cm, &name).await?;
                    (BundleSource::InProcess(store), Some(reference))
                }
                (Plan::Image { image, .. }, _) => {
                    let store = crate::catalog_image::load(&shared, &key, image).await?;
                    (BundleSource::InProcess(store), None)
                }
                (_, Some(source)) => (source, None),
                (_, None) => return Err(format!("{}", FetchError::NotServing(key))),
            };
            let (packages, bundles) = source.content().await.map_err(|e| error_text(&e))?;
            let (converted, deprecations) = tokio::task::spawn_blocking(move || {
                (
                    snapshot::convert(key, priority, &packages, &bundles),
                    DeprecationIndex::build(&packages, &bundles),
                )
            })
            .await
            .map_err(|e| format!("snapshot task failed: {e}"))?;
            Ok(Fetched {
                snapshot: converted.snapshot,
                deprecations,
                source,
                config_map,
                notes: converted.notes,
            })
        };
        ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| {
            if act.generation != generation {
                return;
            }
            act.fetching = false;
            act.fetched(r);
            if std::mem::take(&mut act.refresh_again) {
                act.refresh(ctx);
            }
            act.write_status(ctx);
        }));
    }

    fn fetched(&mut self, r: Result<Fetched, String>) {
        if matches!(self.plan, Some(Ok(Plan::Image { .. }))) {
            // An in-process image catalog is READY once its content loaded (OLM's connection state).
            let state = crate::catalog_image::connection_after(r.is_ok(), self.snapshot.is_some());
            if self.connection != Some(state) {
                self.connection = Some(state);
                self.last_connect = Some(now());
            }
        }
        match r {
            Ok(f) => {
                for note in &f.notes {
                    tracing::warn!(catalog = %self.key, note = %note, "catalog entry skipped");
                }
                let changed = self.snapshot.as_deref() != Some(&f.snapshot)
                    || *self.deprecations != f.deprecations;
                self.snapshot = Some(Arc::new(f.snapshot));
                self.deprecations = Arc::new(f.deprecations);
                self.source = Some(f.source);
                if f.config_map.is_some() {
                    self.config_map = f.config_map;
                }
                let was_failing = self.fetch_error.take().is_some();
                self.publish(changed || was_failing);
            }
            Err(e) => {
                tracing::info!(catalog = %self.key, error = %e, "catalog content not available");
                let keep = matches!(&self.plan, Some(Ok(p)) if spec::keeps_last_good(p));
                let dropped = !keep && self.snapshot.take().is_some();
                let changed = dropped || self.fetch_error.as_deref() != Some(e.as_str());
                self.fetch_error = Some(e);
                self.publish(changed);
            }
        }
    }

    /// Put what this catalog serves where resolution reads it; ask for resolution when it changed.
    fn publish(&mut self, changed: bool) {
        let facts = self.facts();
        let healthy = spec::healthy(&facts);
        let (_, problem) = spec::reason_and_message(&facts);
        let view = CatalogView {
            snapshot: if healthy { self.snapshot.clone() } else { None },
            deprecations: self.deprecations.clone(),
            source: self.source.clone(),
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
            self.connection == Some(ConnectionState::Ready)
                || (matches!(facts.plan, Ok(Plan::ConfigMap(_))) && healthy),
        );
        self.shared
            .catalog_metrics
            .catalogsource_ready
            .with_label_values(&[&self.key.name, self.key.namespace_or_empty()])
            .set(ready);
        if changed || before != Some(healthy) {
            self.shared
                .resolve(self.key.namespace_or_empty(), Cause::CatalogChanged);
        }
    }

    fn desired_status(&self) -> CatalogSourceStatus {
        let facts = self.facts();
        let (reason, message) = spec::reason_and_message(&facts);
        let connection_state = self.connection.map(|s| GrpcConnectionStatus {
            address: self
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
            last_connect: self.last_connect.clone(),
        });
        let previous = self
            .latest
            .as_ref()
            .and_then(|c| c.status.clone())
            .unwrap_or_default();
        CatalogSourceStatus {
            message,
            reason,
            config_map_reference: self.config_map.clone(),
            registry_service: self.registry_service.clone().map(|mut s| {
                s.created_at = previous
                    .registry_service
                    .as_ref()
                    .and_then(|p| p.created_at.clone())
                    .or(s.created_at);
                s
            }),
            connection_state,
            latest_image_registry_poll: self.latest_poll.clone(),
            conditions: previous.conditions,
        }
    }

    fn write_status(&mut self, ctx: &mut Context<Self>) {
        let status = self.desired_status();
        let current = self.latest.as_ref().and_then(|c| c.status.clone());
        if current.as_ref() == Some(&status) || self.written.as_ref() == Some(&status) {
            return;
        }
        self.written = Some(status.clone());
        let api: Api<CatalogSource> =
            Api::namespaced(self.shared.client.clone(), self.key.namespace_or_empty());
        let name = self.key.name.clone();
        let key = self.key.clone();
        let body = status_patch(&status);
        // `wait`, not `spawn`: two status writes in flight could land out of order (READY, then an older
        // CONNECTING), and `written` would then keep the stale one from ever being corrected.
        ctx.wait(
            async move { api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&body)).await }.into_actor(self).map(move |r, act, _| {
                if let Err(e) = r {
                    act.written = None;
                    tracing::warn!(catalog = %key, error = &e as &dyn std::error::Error, "cannot write CatalogSource status");
                }
            }),
        );
    }
}

/// A merge patch that sets every status field we own, clearing the empty ones.
fn status_patch(s: &CatalogSourceStatus) -> serde_json::Value {
    let v = serde_json::to_value(s).unwrap_or_default();
    let mut status = serde_json::Map::new();
    for field in [
        "message",
        "reason",
        "configMapReference",
        "registryService",
        "connectionState",
        "latestImageRegistryPoll",
    ] {
        status.insert(
            field.to_string(),
            v.get(field).cloned().unwrap_or(serde_json::Value::Null),
        );
    }
    serde_json::json!({ "status": status })
}

/// The error and its causes on one line.
pub fn error_text(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        text.push_str(": ");
        text.push_str(&s.to_string());
        src = s.source();
    }
    text
}

/// Read the ConfigMap, label it so its changes reach us, and index its catalog.
async fn load_config_map(
    client: &kube::Client,
    ns: &str,
    name: &str,
    catalog: &str,
) -> Result<(Arc<registry::store::Store>, ConfigMapResourceReference), String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let cm = match api.get_opt(name).await {
        Ok(Some(cm)) => cm,
        Ok(None) => return Err(format!("configmap {ns}/{name} not found")),
        Err(e) => {
            return Err(format!(
                "cannot read configmap {ns}/{name}: {}",
                error_text(&e)
            ));
        }
    };
    if cm
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(pod::CATALOG_SOURCE_LABEL))
        .map(String::as_str)
        != Some(catalog)
    {
        let patch = serde_json::json!({"metadata": {"labels": {pod::CATALOG_SOURCE_LABEL: catalog, "olm.managed": "false"}}});
        if let Err(e) = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(configmap = %name, error = &e as &dyn std::error::Error, "cannot label the catalog ConfigMap; its changes will only be seen on polls");
        }
    }
    let reference = ConfigMapResourceReference {
        name: name.to_string(),
        namespace: ns.to_string(),
        uid: cm.metadata.uid.clone().unwrap_or_default(),
        resource_version: cm.metadata.resource_version.clone().unwrap_or_default(),
        last_update_time: Some(now()),
    };
    let data = cm.data.unwrap_or_default();
    let store = tokio::task::spawn_blocking(move || {
        let catalog = catalog::Catalog::from_configmap_data(&data)
            .map_err(|e| format!("invalid catalog in configmap: {}", error_text(&e)))?;
        registry::store::Store::build(catalog)
            .map_err(|e| format!("cannot index the configmap catalog: {}", error_text(&e)))
    })
    .await
    .map_err(|e| format!("catalog indexing task failed: {e}"))??;
    Ok((Arc::new(store), reference))
}

impl Handler<ObjectEvent<CatalogSource>> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<CatalogSource>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                self.latest = Some(obj);
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

impl Handler<ConnectionChanged> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, ConnectionChanged(state): ConnectionChanged, ctx: &mut Self::Context) {
        if self.connection == Some(state) {
            return;
        }
        tracing::info!(catalog = %self.key, state = %state, "registry connection");
        self.connection = Some(state);
        self.last_connect = Some(now());
        if state == ConnectionState::Ready {
            self.refresh(ctx);
        }
        self.publish(false);
        self.write_status(ctx);
    }
}

impl Handler<Refresh> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, _msg: Refresh, ctx: &mut Self::Context) {
        self.refresh(ctx);
    }
}

impl Handler<Requeue> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, msg: Requeue, ctx: &mut Self::Context) {
        crate::requeue::handle(self, msg, ctx, Self::reconcile);
    }
}
