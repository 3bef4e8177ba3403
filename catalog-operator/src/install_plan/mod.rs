//! The InstallPlan actor: one per InstallPlan. It moves the plan through its phases ([`machine`]), executes
//! the steps ([`execute`]) one pass at a time (never two passes of one plan at once), writes the status,
//! and tells namespace resolution when the phase changes so the Subscriptions follow.

pub mod crd_owners;
pub mod crd_safety;
pub mod execute;
pub mod machine;
pub mod step_kinds;
pub mod step_span;

use crate::namespace::Cause;
use crate::shared::Shared;
use actix::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use machine::{Action, Executed};
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase, InstallPlanStatus};
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

pub struct InstallPlanActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<InstallPlan>>,
    running: bool,
    again: bool,
    last_phase: Option<InstallPlanPhase>,
    requeue: Option<SpawnHandle>,
}

impl Actor for InstallPlanActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.install_plan_count.inc();
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.install_plan_count.dec();
        self.shared
            .resolve(self.key.namespace_or_empty(), Cause::InstallPlanChanged);
    }
}

impl ObjectActor for InstallPlanActor {
    type Object = InstallPlan;
    type Shared = Shared;
    const KIND: &'static str = "InstallPlan";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            key,
            shared,
            latest: None,
            running: false,
            again: false,
            last_phase: None,
            requeue: None,
        }
    }
}

/// The namespace's OperatorGroup check (OLM queries the group's service account before executing).
fn group_check(shared: &Shared, ns: &str) -> Option<String> {
    let n = shared
        .operator_groups()
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(ns))
        .count();
    match n {
        1 => None,
        0 => Some("no operator group found that is managing this namespace".to_string()),
        n => Some(format!(
            "more than one operator group(s) are managing this namespace count={n}"
        )),
    }
}

impl InstallPlanActor {
    fn reconcile(&mut self, ctx: &mut Context<Self>) {
        let Some(ip) = self.latest.clone() else {
            return;
        };
        if self.running {
            self.again = true;
            return;
        }
        let status = ip.status.clone().unwrap_or_default();
        match machine::action(ip.status.as_ref(), ip.spec.approved) {
            Action::Ignore | Action::AwaitApproval => {}
            Action::Approve => {
                let mut next = status.clone();
                next.phase = InstallPlanPhase::Installing;
                next.message.clear();
                self.write(ctx, &ip, next, Some(Duration::ZERO));
            }
            Action::Execute => self.execute(ctx, ip, status),
        }
    }

    fn execute(
        &mut self,
        ctx: &mut Context<Self>,
        ip: Arc<InstallPlan>,
        status: InstallPlanStatus,
    ) {
        self.running = true;
        let shared = self.shared.clone();
        let ns = self.key.namespace_or_empty().to_string();
        let name = self.key.name.clone();
        let span = tracing::info_span!("installplan.execute", namespace = %ns, name = %name);
        if let Some(a) = ip.metadata.annotations.as_ref() {
            olm_runtime::trace_context::adopt_parent(&span, a);
        }
        let plan_csvs = ip.spec.cluster_service_version_names.clone();
        let fut = async move {
            shared.stores_ready().await;
            if let Some(message) = group_check(&shared, &ns) {
                return (status.plan.clone(), Executed::CheckFailed { message });
            }
            let csvs: Vec<_> = shared
                .csvs()
                .into_iter()
                .filter(|c| c.metadata.namespace.as_deref() == Some(ns.as_str()))
                .collect();
            let owners = crd_owners::existing(&csvs);
            let cx = execute::Context {
                client: &shared.client,
                kinds: &shared.kinds,
                namespace: &ns,
                plan_name: &name,
                plan_csvs: &plan_csvs,
                crd_owners: &owners,
                warnings: &shared.catalog_metrics.installplan_warnings_total,
            };
            execute::execute(&cx, status.plan.clone()).await
        }
        .instrument(span);
        ctx.spawn(fut.into_actor(self).map(move |(steps, result), act, ctx| {
            act.running = false;
            let now = Time(Timestamp::now());
            let mut base = ip.status.clone().unwrap_or_default();
            base.plan = steps;
            let (next, requeue) = machine::after(&base, &result, &now, act.shared.config.install_plan_retry_timeout);
            tracing::debug!(plan = %act.key, result = ?result, phase = %next.phase, "InstallPlan pass");
            if let Executed::Error { message, .. } = &result {
                tracing::info!(plan = %act.key, error = %message, phase = %next.phase, "InstallPlan step failed");
            }
            act.write(ctx, &ip, next, requeue);
            if std::mem::take(&mut act.again) {
                act.reconcile(ctx);
            }
        }));
    }

    fn write(
        &mut self,
        ctx: &mut Context<Self>,
        ip: &InstallPlan,
        status: InstallPlanStatus,
        requeue: Option<Duration>,
    ) {
        let changed = ip.status.as_ref() != Some(&status);
        tracing::debug!(plan = %self.key, changed, requeue = ?requeue, "InstallPlan status");
        if let Some(h) = self.requeue.take() {
            ctx.cancel_future(h);
        }
        if !changed {
            if let Some(d) = requeue {
                self.requeue = Some(ctx.notify_later(
                    Requeue {
                        reason: messages::msg::RequeueReason::Scheduled,
                        after: None,
                    },
                    d,
                ));
            }
            return;
        }
        let mut updated = ip.clone();
        updated.status = Some(status);
        let api: Api<InstallPlan> =
            Api::namespaced(self.shared.client.clone(), self.key.namespace_or_empty());
        let name = self.key.name.clone();
        let key = self.key.clone();
        self.running = true;
        ctx.spawn(async move { api.replace_status(&name, &PostParams::default(), &updated).await }.into_actor(self).map(move |r, act, ctx| {
            act.running = false;
            match r {
                Ok(written) => {
                    act.latest = Some(Arc::new(written));
                    if let Some(d) = requeue {
                        act.requeue = Some(ctx.notify_later(Requeue { reason: messages::msg::RequeueReason::Scheduled, after: None }, d));
                    }
                    act.reconcile(ctx);
                }
                Err(e) => {
                    tracing::debug!(plan = %key, error = &e as &dyn std::error::Error, "cannot write InstallPlan status; will retry on the next event");
                    act.requeue = Some(ctx.notify_later(Requeue { reason: messages::msg::RequeueReason::Scheduled, after: None }, Duration::from_millis(500)));
                }
            }
        }));
    }
}

impl Handler<ObjectEvent<InstallPlan>> for InstallPlanActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<InstallPlan>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                // Resolution reads plans from the watch's store: tell it about phase changes the watch has delivered.
                let phase = obj.phase();
                if self.last_phase.as_ref() != Some(&phase) {
                    self.last_phase = Some(phase);
                    self.shared
                        .resolve(self.key.namespace_or_empty(), Cause::InstallPlanChanged);
                }
                let newer = self.latest.as_ref().is_none_or(|l| rv(l) <= rv(&obj));
                if newer {
                    self.latest = Some(obj);
                }
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

fn rv(ip: &InstallPlan) -> u64 {
    ip.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl Handler<Requeue> for InstallPlanActor {
    type Result = ();

    fn handle(&mut self, msg: Requeue, ctx: &mut Self::Context) {
        crate::requeue::handle(self, msg, ctx, Self::reconcile);
    }
}
