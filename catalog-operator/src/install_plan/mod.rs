//! The InstallPlan actor: one per InstallPlan, on the reconcile contract (`olm_runtime::reconcile`), the one
//! writer of its plan's status from creation: resolution creates the plan object and hands its first status over
//! (`crate::handover`), which the actor writes ([`first_status`]). Each run then moves the plan through its
//! phases ([`machine`]), executes the steps ([`execute`]) and writes the status;
//! the loop serialises runs (never two passes of one plan at once), coalesces causes and keeps the one timer
//! (the step retry the machine asks for). A phase change the watch delivers tells namespace resolution, so the
//! Subscriptions follow.

pub mod bundle_objects;
pub mod crd_owners;
pub mod crd_safety;
pub mod crd_schema;
pub mod crd_version;
pub mod execute;
pub mod first_status;
pub mod group_annotations;
pub mod machine;
pub mod not_served;
pub mod operator_label;
pub mod owner_refs;
pub mod scoped;
pub mod step_kinds;
pub mod step_span;
pub mod unpacked_configmap;

use crate::error::{self, Error};
use crate::group_view::GroupView;
use crate::routes::Cause as ResolveCause;
use crate::shared::Shared;
use actix::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use machine::{Action, Executed};
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase, InstallPlanStatus};
use messages::key::ObjectKey;
use messages::msg::ObjectEvent;
use olm_runtime::children::KeyedActor;
use olm_runtime::error as api_error;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::own_writes::OwnWrites;
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

pub struct InstallPlanActor {
    pub key: ObjectKey,
    pub shared: Shared,
    /// The InstallPlan as last observed or written (`olm_runtime::own_writes`).
    own: OwnWrites<InstallPlan>,
    last_phase: Option<InstallPlanPhase>,
    control: Loop,
}

impl Actor for InstallPlanActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.install_plan_count.inc();
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.install_plan_count.dec();
        self.shared.resolve(
            self.key.namespace_or_empty(),
            ResolveCause::InstallPlanChanged,
        );
    }
}

impl ObjectActor for InstallPlanActor {
    type Object = InstallPlan;
}

impl KeyedActor for InstallPlanActor {
    type Shared = Shared;
    const KIND: &'static str = "InstallPlan";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            control: Loop::new(Self::KIND, key.clone(), error::policy())
                .with_chaos(shared.process.chaos.clone()),
            key,
            shared,
            own: OwnWrites::default(),
            last_phase: None,
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

/// The namespace's OperatorGroup check (OLM queries the group's service account before executing): the one
/// group's name, or OLM's message.
fn group_check(shared: &Shared, ns: &str) -> Result<Arc<GroupView>, String> {
    let groups: Vec<Arc<GroupView>> = shared
        .operator_groups()
        .into_iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(ns))
        .collect();
    match groups.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err("no operator group found that is managing this namespace".to_string()),
        many => Err(format!(
            "more than one operator group(s) are managing this namespace count={}",
            many.len()
        )),
    }
}

type Run = ResponseActFuture<InstallPlanActor, Outcome>;

impl Reconciler for InstallPlanActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> Run {
        let Some(ip) = self.own.latest().cloned() else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        if ip.status.is_none() {
            // A new plan: its first status, if resolution handed it over (else it hands it over later).
            return match self.shared.registries.handovers.pending(&self.key) {
                Some(first) => self.write_first(first),
                None => reconcile::now(Outcome::Done(Next::Idle)),
            };
        }
        // Handed over again by a resolution run that did not see the status yet: written already.
        self.shared.registries.handovers.forget(&self.key);
        let status = ip.status.clone().unwrap_or_default();
        match machine::action(ip.status.as_ref(), ip.spec.approved) {
            Action::Ignore | Action::AwaitApproval => reconcile::now(Outcome::Done(Next::Idle)),
            Action::Approve => {
                let mut next = status;
                next.phase = InstallPlanPhase::Installing;
                next.message.clear();
                // Executed at once by the run the timer starts.
                self.write(&ip, next, Some(Duration::ZERO))
            }
            Action::Execute => self.execute(ip, status),
        }
    }

    fn resynced(&mut self) {
        self.own
            .resync(&self.shared.stores.install_plans, &self.key);
    }
}

impl InstallPlanActor {
    fn execute(&mut self, ip: Arc<InstallPlan>, status: InstallPlanStatus) -> Run {
        let shared = self.shared.clone();
        let ns = self.key.namespace_or_empty().to_string();
        let name = self.key.name.clone();
        let span = tracing::info_span!("installplan.execute", namespace = %ns, name = %name, mailbox.wait_ms = self.control.queue_wait().as_millis() as u64);
        if let Some(a) = ip.metadata.annotations.as_ref() {
            olm_runtime::trace_context::adopt_parent(&span, a);
        }
        let plan_csvs = ip.spec.cluster_service_version_names.clone();
        let fut = async move {
            shared.stores_ready().await;
            // Who applies the steps: the group's service account, if it names one (scoped.rs).
            let (who, applier) = match scoped::resolve(
                &shared.client,
                &shared.process.own_account,
                &ns,
                group_check(&shared, &ns),
            )
            .await
            {
                Ok(found) => found,
                Err(message) => {
                    return (status.plan.clone(), None, Executed::CheckFailed { message });
                }
            };
            let csvs: Vec<_> = shared
                .csvs()
                .into_iter()
                .filter(|c| c.metadata.namespace.as_deref() == Some(ns.as_str()))
                .collect();
            let owners = crd_owners::existing(&csvs);
            let cx = execute::Context {
                client: &shared.client,
                applier: &applier,
                kinds: &shared.kinds,
                namespace: &ns,
                plan_name: &name,
                plan_csvs: &plan_csvs,
                crd_owners: &owners,
                warnings: &shared.catalog_metrics.installplan_warnings_total,
                shared: &shared,
            };
            let (steps, result) = execute::execute(&cx, status.plan.clone()).await;
            (steps, who.account(), result)
        }
        .instrument(span);
        Box::pin(
            actix::fut::wrap_future::<_, Self>(fut).then(move |(steps, account, result), act, _ctx| {
                let now = Time(Timestamp::now());
                let mut base = ip.status.clone().unwrap_or_default();
                base.plan = steps;
                // As OLM: the account the steps were applied with, kept once set.
                if account.is_some() {
                    base.attenuated_service_account_ref = account;
                }
                let (next, requeue) = machine::after(
                    &base,
                    &result,
                    &now,
                    act.shared.config.install_plan_retry_timeout,
                );
                tracing::debug!(plan = %act.key, result = ?result, phase = %next.phase, "InstallPlan pass");
                if let Executed::Error { message, .. } = &result {
                    tracing::info!(plan = %act.key, error = %message, phase = %next.phase, "InstallPlan step failed");
                }
                act.write(&ip, next, requeue)
            }),
        )
    }

    /// Write the plan's first status; the next run (at once) carries it out or waits for its approval. A failed
    /// write keeps the status for the next run ([`first_status`]: the plan is never deleted for it).
    fn write_first(&mut self, status: InstallPlanStatus) -> Run {
        let api: Api<InstallPlan> =
            Api::namespaced(self.shared.client.clone(), self.key.namespace_or_empty());
        let name = self.key.name.clone();
        let fut = async move {
            let r = first_status::write(&api, &name, &status).await;
            (r, status)
        };
        Box::pin(
            actix::fut::wrap_future::<_, Self>(fut).map(move |(r, status), act, _ctx| match r {
                Ok(written) => {
                    act.shared.registries.handovers.written(&act.key, &status);
                    tracing::info!(plan = %act.key, phase = %status.phase, "InstallPlan status handed over and written");
                    // Resolution knows the plan with this status already: its event is no news to it.
                    act.last_phase = Some(status.phase.clone());
                    act.own.wrote(Arc::new(written));
                    Outcome::Done(Next::After(Duration::ZERO))
                }
                Err(source) => {
                    // The status still waits (`Handovers::pending`): the retry writes it.
                    let e = Error::InstallPlanStatus {
                        key: act.key.clone(),
                        source,
                    };
                    Outcome::from_error(error::class(e.kind()), &e)
                }
            }),
        )
    }

    /// Write the status if it changed; the run ends asking for `requeue` (the machine's step retry).
    fn write(
        &mut self,
        ip: &InstallPlan,
        status: InstallPlanStatus,
        requeue: Option<Duration>,
    ) -> Run {
        let next = requeue.map_or(Next::Idle, Next::After);
        let changed = ip.status.as_ref() != Some(&status);
        tracing::debug!(plan = %self.key, changed, requeue = ?requeue, "InstallPlan status");
        if !changed {
            return reconcile::now(Outcome::Done(next));
        }
        let mut updated = ip.clone();
        updated.status = Some(status);
        let api: Api<InstallPlan> =
            Api::namespaced(self.shared.client.clone(), self.key.namespace_or_empty());
        let name = self.key.name.clone();
        let fut = async move {
            api.replace_status(&name, &PostParams::default(), &updated)
                .await
        };
        Box::pin(
            actix::fut::wrap_future::<_, Self>(fut).map(move |r, act, _ctx| match r {
                Ok(written) => {
                    act.own.wrote(Arc::new(written));
                    Outcome::Done(next)
                }
                Err(source) => {
                    if api_error::classify(&source).is_conflict() {
                        // Someone else wrote the plan (olm-operator labels it): our copy is stale by definition, so
                        // take the store's; awaiting our last write's event instead left the plan conflicting until
                        // the resync when olm-operator labelled it during a pass.
                        act.own
                            .conflicted(&act.shared.stores.install_plans, &act.key);
                    }
                    let e = Error::InstallPlanStatus {
                        key: act.key.clone(),
                        source,
                    };
                    Outcome::from_error(error::class(e.kind()), &e)
                }
            }),
        )
    }
}

impl Handler<ObjectEvent<InstallPlan>> for InstallPlanActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<InstallPlan>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                // Resolution reads plans from the watch's store: tell it about phase changes the watch has delivered.
                // A plan without status is one resolution just created: it knows it with the status it handed over.
                let phase = obj.phase();
                if obj.status.is_some() && self.last_phase.as_ref() != Some(&phase) {
                    self.last_phase = Some(phase);
                    self.shared.resolve(
                        self.key.namespace_or_empty(),
                        ResolveCause::InstallPlanChanged,
                    );
                }
                self.own.observe(obj);
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => {
                self.shared.registries.handovers.forget(&self.key);
                ctx.stop();
            }
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

impl Handler<crate::handover::HandedOver> for InstallPlanActor {
    type Result = ();

    fn handle(&mut self, _msg: crate::handover::HandedOver, ctx: &mut Self::Context) {
        reconcile::trigger(self, ctx, Cause::Message("first status handed over"));
    }
}

olm_runtime::requeue_handler!(InstallPlanActor);
