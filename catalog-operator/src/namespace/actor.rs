//! The resolution of one namespace, on the reconcile contract. A run observes ([`observe`]: the stores merged
//! with what the messages told, [`Known`], and the resolver's answer), plans ([`plan::plan_namespace`], pure)
//! and applies the plan ([`effects`]); it then sends each Subscription whose status changed its [`Decision`]
//! through the Subscription registry (`Forward`), and starts the bundle fetches the plan asked for
//! ([`prefetch`]: in tasks of their own, off this mailbox; each result triggers a run). Decisions not yet
//! acknowledged are sent again on every run (a Subscription whose actor was not started yet gets it then).
//!
//! What triggers a run: a [`Resolve`], a fetched bundle, and a [`Want`] that changes what resolution reads. A
//! want that only acknowledges a decision (or tells the Subscription as resolution already reads it) updates
//! [`Known`] and starts nothing.

use super::known::Known;
use super::observe::{self, in_ns};
use super::prefetch::{self, Fetched, Prefetch};
use super::{effects, plan};
use crate::error::{self, Error, SyncError};
use crate::routes::{Cause as ResolveCause, Resolve};
use crate::shared::Shared;
use crate::wants::{Decision, Want};
use actix::prelude::*;
use messages::crd::install_plan::InstallPlan;
use messages::crd::subscription::Subscription;
use messages::key::ObjectKey;
use olm_runtime::children::KeyedActor;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::Forward;
use std::sync::Arc;
use tracing::Instrument;

pub struct NamespaceActor {
    shared: Shared,
    namespace: String,
    known: Known,
    prefetch: Prefetch,
    control: Loop,
}

impl NamespaceActor {
    pub fn new(shared: Shared, namespace: String) -> Self {
        Self {
            control: Loop::new(
                "Namespace",
                ObjectKey::cluster(namespace.clone()),
                error::policy(),
            )
            .with_chaos(shared.process.chaos.clone()),
            known: Known::numbered(shared.process.decision_numbers.clone()),
            shared,
            namespace,
            prefetch: Prefetch::default(),
        }
    }
}

impl Actor for NamespaceActor {
    type Context = Context<Self>;
}

impl KeyedActor for NamespaceActor {
    type Shared = Shared;
    const KIND: &'static str = "Namespace";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self::new(shared, key.name)
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

/// What one run planned and what its effects left.
struct Ran {
    plan: plan::NamespacePlan,
    applied: effects::Applied,
}

/// Observe → plan → effects, for the Subscriptions and plans as resolution knows them.
async fn one_run(
    shared: Shared,
    ns: String,
    subs: Vec<Arc<Subscription>>,
    plans: Vec<Arc<InstallPlan>>,
    fetched: std::collections::BTreeMap<prefetch::BundleId, prefetch::Fetch>,
) -> Result<Ran, SyncError> {
    let mut o = observe::observe(&shared, &ns, subs, plans).await?;
    let before = plan::before(&o);
    if plan::wants_resolution(&o, &before) {
        let resolution = observe::resolve(&shared, &o, plan::resolver_input(&o, &before)).await?;
        o.confirmed_csvs = observe::confirm_csvs(&shared, &o, &resolution).await?;
        o.resolution = Some(resolution);
    } else if !o.loading.is_empty() {
        tracing::debug!(namespace = %ns, loading = ?o.loading, "resolution waits for catalogs to load");
    }
    let plan = plan::plan_namespace(&o, &fetched);
    let applied = effects::apply(&shared, &o, &plan).await?;
    tracing::debug!(namespace = %ns, decided = applied.statuses.len(), plans = applied.made.len(), fetch = plan.fetch.len(), "namespace synced");
    Ok(Ran { plan, applied })
}

impl Reconciler for NamespaceActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let shared = self.shared.clone();
        // A reflector store fills only when its first list is complete; no decision before every store listed.
        let ready = async move { shared.stores_ready().await };
        Box::pin(
            actix::fut::wrap_future::<_, Self>(ready)
                .then(|(), act, _ctx| {
                    let ns = act.namespace.clone();
                    let subs = act
                        .known
                        .subscriptions(in_ns(act.shared.subscriptions(), &ns));
                    let plans = act.known.plans(in_ns(act.shared.install_plans(), &ns));
                    let fetched = act.prefetch.fetched().clone();
                    let span = tracing::info_span!("catalog.resolve", namespace = %ns);
                    actix::fut::wrap_future(
                        one_run(act.shared.clone(), ns, subs, plans, fetched).instrument(span),
                    )
                })
                .map(|result, act, ctx| match result {
                    Ok(ran) => act.finish(ran, ctx),
                    Err(source) => {
                        let e = Error::Resolve {
                            namespace: act.namespace.clone(),
                            source,
                        };
                        Outcome::from_error(error::class(e.kind()), &e)
                    }
                }),
        )
    }
}

impl NamespaceActor {
    /// Remember the plans made, send the decisions, start the fetches the plan asked for.
    fn finish(&mut self, ran: Ran, ctx: &mut Context<Self>) -> Outcome {
        let Ran { plan, applied } = ran;
        self.prefetch.after_run(&plan.wanted, &plan.consumed);
        for b in self.prefetch.start(&plan.fetch) {
            let me = ctx.address();
            let fetch = prefetch::fetch(self.shared.clone(), self.namespace.clone(), b);
            tokio::spawn(async move { me.do_send(fetch.await) });
        }
        for made in applied.made {
            self.known.created(made);
        }
        let mut decided = Vec::new();
        for (name, status) in applied.statuses {
            decided.push(name.clone());
            let decision = self.known.decide(&name, status);
            self.send(&name, decision);
        }
        for (name, decision) in self.known.unacknowledged() {
            if !decided.contains(&name) {
                self.send(&name, decision);
            }
        }
        Outcome::Done(plan.requeue.map_or(Next::Idle, Next::After))
    }

    fn send(&self, name: &str, decision: Decision) {
        self.shared.registries.subscriptions.do_send(Forward(
            ObjectKey::new(self.namespace.clone(), name.to_string()),
            decision,
        ));
    }
}

impl Handler<Resolve> for NamespaceActor {
    type Result = ();

    fn handle(&mut self, msg: Resolve, ctx: &mut Self::Context) {
        let cause = match msg.cause {
            ResolveCause::Retry => Cause::Timer,
            other => Cause::Message(other.as_str()),
        };
        reconcile::trigger(self, ctx, cause);
    }
}

impl Handler<Want> for NamespaceActor {
    type Result = ();

    fn handle(&mut self, msg: Want, ctx: &mut Self::Context) {
        if self.known.hear(msg.news) {
            reconcile::trigger(self, ctx, Cause::Message("subscription want"));
        }
    }
}

impl Handler<Fetched> for NamespaceActor {
    type Result = ();

    fn handle(&mut self, msg: Fetched, ctx: &mut Self::Context) {
        self.prefetch.finished(msg);
        reconcile::trigger(self, ctx, Cause::Message("bundle fetched"));
    }
}
