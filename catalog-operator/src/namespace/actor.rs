//! The resolution of one namespace, on the reconcile contract: every [`Resolve`] and [`Want`] triggers a run
//! (coalesced while one runs); a run merges the stores with what the messages told ([`Known`]), syncs
//! ([`sync::run`]), remembers the plans it created and sends each Subscription whose status changed its
//! [`Decision`] through the Subscription registry (`Forward`). Decisions not yet acknowledged are sent again on
//! every run (a Subscription whose actor was not started yet gets it then).

use super::known::Known;
use super::sync::{self, in_ns};
use super::{Cause as ResolveCause, Resolve};
use crate::error::{self, Error};
use crate::shared::Shared;
use crate::wants::Want;
use actix::prelude::*;
use messages::key::ObjectKey;
use olm_runtime::reconcile::{self, Cause, Loop, Next, Outcome, Reconciler};
use olm_runtime::registry::Forward;

pub struct NamespaceActor {
    shared: Shared,
    namespace: String,
    known: Known,
    control: Loop,
}

impl NamespaceActor {
    pub fn new(shared: Shared, namespace: String) -> Self {
        Self {
            control: Loop::new(
                "Namespace",
                ObjectKey::cluster(namespace.clone()),
                error::policy(),
            ),
            shared,
            namespace,
            known: Known::default(),
        }
    }
}

impl Actor for NamespaceActor {
    type Context = Context<Self>;
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
                    actix::fut::wrap_future(sync::run(act.shared.clone(), ns, subs, plans))
                })
                .map(|result, act, _ctx| match result {
                    Ok(synced) => {
                        for plan in synced.created {
                            act.known.created(plan);
                        }
                        let mut decided = Vec::new();
                        for (name, status) in synced.statuses {
                            decided.push(name.clone());
                            let decision = act.known.decide(&name, status);
                            act.send(&name, decision);
                        }
                        for (name, decision) in act.known.unacknowledged() {
                            if !decided.contains(&name) {
                                act.send(&name, decision);
                            }
                        }
                        Outcome::Done(synced.requeue.map_or(Next::Idle, Next::After))
                    }
                    Err(source) => {
                        let e = Error::Resolve {
                            namespace: act.namespace.clone(),
                            source,
                        };
                        match error::class(e.kind()) {
                            Some(class) => Outcome::failed(class, &e),
                            None => Outcome::Done(Next::Idle),
                        }
                    }
                }),
        )
    }
}

impl NamespaceActor {
    fn send(&self, name: &str, decision: crate::wants::Decision) {
        if let Some(subs) = self.shared.registries.subscriptions.get() {
            subs.do_send(Forward(
                ObjectKey::new(self.namespace.clone(), name.to_string()),
                decision,
            ));
        }
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
        self.known.hear(msg.news);
        reconcile::trigger(self, ctx, Cause::Message("subscription want"));
    }
}
