//! Namespace resolution (OLM `syncResolvingNamespace`, spec §4.1): one [`NamespaceActor`] per namespace, on the
//! reconcile contract, started by the [`NamespaceResolver`] router on first need. Any change that matters
//! (a catalog's content or health, an InstallPlan, a CSV, an OperatorGroup) sends a typed [`Resolve`];
//! Subscription actors send their [`Want`](crate::wants::Want)s (the object as they know it) and get each a
//! [`Decision`](crate::wants::Decision) back. Causes arriving during a run are coalesced into one more run.

pub mod actor;
pub mod adopt;
pub mod catalog_burst;
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
/// Changes of global catalogs are gathered before they fan out to every subscribed namespace
/// ([`catalog_burst`]).
pub struct NamespaceResolver {
    shared: Shared,
    actors: HashMap<String, Addr<NamespaceActor>>,
    burst: catalog_burst::Burst,
    fan_outs: u64,
}

impl NamespaceResolver {
    pub fn new(shared: Shared) -> Self {
        Self {
            shared,
            actors: HashMap::new(),
            burst: catalog_burst::Burst::default(),
            fan_outs: 0,
        }
    }

    /// The namespaces that hold a Subscription.
    fn subscribed(&self) -> BTreeSet<String> {
        self.shared
            .subscriptions()
            .iter()
            .filter_map(|s| s.metadata.namespace.clone())
            .collect()
    }

    /// Send `cause` to each of `targets` worth resolving (`subscribed`: the namespaces holding a Subscription).
    fn dispatch(&mut self, targets: BTreeSet<String>, subscribed: &BTreeSet<String>, cause: Cause) {
        for ns in targets {
            let running = self.actors.get(&ns).is_some_and(Addr::connected);
            if !relevance::worth_resolving(cause, running, subscribed.contains(&ns)) {
                continue;
            }
            self.actor(&ns).do_send(Resolve {
                namespace: ns.clone(),
                cause,
            });
        }
    }

    /// The gathered changes of global catalogs reach the global namespace and every subscribed one.
    fn fan_out(&mut self) {
        self.burst.fanned_out(std::time::Instant::now());
        self.fan_outs += 1;
        let subscribed = self.subscribed();
        let mut targets = subscribed.clone();
        targets.insert(self.shared.config.global_namespace.clone());
        tracing::debug!(namespaces = targets.len(), "global catalog change fans out");
        self.dispatch(targets, &subscribed, Cause::CatalogChanged);
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

    fn handle(&mut self, msg: Resolve, ctx: &mut Self::Context) {
        tracing::debug!(namespace = %msg.namespace, cause = ?msg.cause, "resolve requested");
        if msg.cause == Cause::CatalogChanged
            && msg.namespace == self.shared.config.global_namespace
        {
            let namespaces = self.subscribed().len();
            if let catalog_burst::Step::FanOutIn(wait) =
                self.burst.change(std::time::Instant::now(), namespaces)
            {
                ctx.run_later(wait, |act, _ctx| act.fan_out());
            }
            return;
        }
        let subscribed = if self.shared.has_subscription(&msg.namespace) {
            BTreeSet::from([msg.namespace.clone()])
        } else {
            BTreeSet::new()
        };
        self.dispatch(BTreeSet::from([msg.namespace]), &subscribed, msg.cause);
    }
}

/// What the router has done so far (tests read it): fan-outs of global catalog changes, and the namespaces it
/// started a resolution actor for.
#[derive(Message)]
#[rtype(result = "RouterState")]
pub struct Inspect;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterState {
    pub fan_outs: u64,
    pub namespaces: BTreeSet<String>,
}

impl Handler<Inspect> for NamespaceResolver {
    type Result = actix::MessageResult<Inspect>;

    fn handle(&mut self, _msg: Inspect, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(RouterState {
            fan_outs: self.fan_outs,
            namespaces: self.actors.keys().cloned().collect(),
        })
    }
}

impl Handler<Want> for NamespaceResolver {
    type Result = ();

    fn handle(&mut self, msg: Want, _ctx: &mut Self::Context) {
        let ns = msg.namespace.clone();
        self.actor(&ns).do_send(msg);
    }
}

#[cfg(test)]
mod tests;
