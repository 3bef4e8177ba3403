//! Namespace resolution (OLM `syncResolvingNamespace`, spec §4.1): one [`NamespaceActor`] per namespace, on the
//! reconcile contract, started by the [`NamespaceResolver`] router on first need. Any change that matters
//! (a catalog's content or health, an InstallPlan, a CSV, an OperatorGroup) sends a typed [`Resolve`];
//! Subscription actors send their [`Want`](crate::wants::Want)s (the object as they know it) and get each a
//! [`Decision`](crate::wants::Decision) back. Causes arriving during a run are coalesced into one more run.

pub mod actor;
pub mod adopt;
pub mod confirm;
pub mod ensure;
pub mod fail_forward;
pub mod input;
pub mod known;
pub mod plan_name;
pub mod plan_status;
pub mod relevance;
pub mod reuse;
pub use crate::status;
pub mod sync;

use crate::shared::Shared;
use crate::wants::Want;
use actix::prelude::*;
pub use actor::NamespaceActor;
use std::collections::{BTreeSet, HashMap};

pub use crate::routes::{Cause, Resolve};

/// Routes [`Resolve`] and [`Want`] to the namespace's actor, starting it on first need (and again if it died).
pub struct NamespaceResolver {
    shared: Shared,
    actors: HashMap<String, Addr<NamespaceActor>>,
}

impl NamespaceResolver {
    pub fn new(shared: Shared) -> Self {
        Self {
            shared,
            actors: HashMap::new(),
        }
    }

    fn actor(&mut self, ns: &str) -> &Addr<NamespaceActor> {
        let shared = self.shared.clone();
        let addr = self
            .actors
            .entry(ns.to_string())
            .or_insert_with(|| NamespaceActor::new(shared.clone(), ns.to_string()).start());
        if !addr.connected() {
            *addr = NamespaceActor::new(shared, ns.to_string()).start();
        }
        addr
    }
}

impl Actor for NamespaceResolver {
    type Context = Context<Self>;
}

impl Handler<Resolve> for NamespaceResolver {
    type Result = ();

    fn handle(&mut self, msg: Resolve, _ctx: &mut Self::Context) {
        tracing::debug!(namespace = %msg.namespace, cause = ?msg.cause, "resolve requested");
        let mut targets = BTreeSet::from([msg.namespace.clone()]);
        if msg.cause == Cause::CatalogChanged
            && msg.namespace == self.shared.config.global_namespace
        {
            targets.extend(
                self.shared
                    .subscriptions()
                    .iter()
                    .filter_map(|s| s.metadata.namespace.clone()),
            );
        }
        for ns in targets {
            let running = self.actors.get(&ns).is_some_and(Addr::connected);
            if !relevance::worth_resolving(msg.cause, running, self.shared.has_subscription(&ns)) {
                continue;
            }
            self.actor(&ns).do_send(Resolve {
                namespace: ns.clone(),
                cause: msg.cause,
            });
        }
    }
}

impl Handler<Want> for NamespaceResolver {
    type Result = ();

    fn handle(&mut self, msg: Want, _ctx: &mut Self::Context) {
        let ns = msg.namespace.clone();
        self.actor(&ns).do_send(msg);
    }
}
