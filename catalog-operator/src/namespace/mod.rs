//! Namespace resolution (OLM `syncResolvingNamespace`, spec §4.1): one [`NamespaceActor`] per namespace, on the
//! reconcile contract, started by the [`NamespaceResolver`] router on first need. Any change that matters
//! (a catalog's content or health, an InstallPlan, a CSV, an OperatorGroup) sends a typed [`Resolve`];
//! Subscription actors send their [`Want`](crate::wants::Want)s (the object as they know it) and get each a
//! [`Decision`](crate::wants::Decision) back. Causes arriving during a run are coalesced into one more run.
//!
//! A run is observe ([`observe`], with the resolver's answer) → a pure plan ([`plan::plan_namespace`] →
//! [`plan::NamespacePlan`]) → effects ([`effects`]); bundles are fetched by the prefetch stage ([`prefetch`]),
//! off the actor's mailbox, and each new InstallPlan's status is written by its own actor (`crate::handover`).

pub mod actor;
pub mod adopt;
pub mod catalog_burst;
pub mod confirm;
pub mod effects;
pub mod ensure;
pub mod facts;
pub mod fail_forward;
pub mod input;
pub mod known;
pub mod observe;
pub mod plan;
pub mod plan_name;
pub mod prefetch;
pub mod relevance;
pub mod reuse;
pub mod settle;

use crate::shared::Shared;
use crate::wants::Want;
use actix::prelude::*;
pub use actor::NamespaceActor;
use messages::key::ObjectKey;
use olm_runtime::children::{Children, Revive};
use olm_runtime::journal::SharedJournal;
use std::collections::BTreeSet;

use crate::routes::{Cause, Resolve};

/// Routes [`Resolve`] and [`Want`] to the namespace's actor, starting it on first need (and again if it died).
/// Changes of global catalogs are gathered before they fan out to every subscribed namespace
/// ([`catalog_burst`]).
pub struct NamespaceResolver {
    shared: Shared,
    /// One actor per namespace, started on first need and again when it died (`olm_runtime::children`:
    /// journaled, counted as kind `Namespace`).
    actors: Children<NamespaceActor, ResolveAgain>,
    burst: catalog_burst::Burst,
    fan_outs: u64,
}

impl NamespaceResolver {
    /// The router; its namespace actors journal into `journal` (`Wiring::journal`).
    pub fn new(shared: Shared, journal: SharedJournal) -> Self {
        Self {
            actors: Children::new(shared.clone(), shared.metrics.clone(), journal),
            shared,
            burst: catalog_burst::Burst::default(),
            fan_outs: 0,
        }
    }

    /// Send `cause` to namespace `ns` if it is worth resolving there.
    fn send(&mut self, ns: String, has_subscription: bool, cause: Cause) {
        let running = self.actors.running(&ObjectKey::cluster(ns.clone()));
        if relevance::worth_resolving(cause, running, has_subscription) {
            self.actor(&ns).do_send(Resolve {
                namespace: ns,
                cause,
            });
        }
    }

    /// The gathered changes of global catalogs reach the global namespace and every subscribed one.
    fn fan_out(&mut self) {
        let subscribed: BTreeSet<String> = self
            .shared
            .subscriptions()
            .iter()
            .filter_map(|s| s.metadata.namespace.clone())
            .collect();
        self.burst
            .fanned_out(std::time::Instant::now(), subscribed.len());
        self.fan_outs += 1;
        tracing::debug!(
            namespaces = subscribed.len(),
            "global catalog change fans out"
        );
        let global = self.shared.config.global_namespace.clone();
        if !subscribed.contains(&global) {
            self.send(global, false, Cause::CatalogChanged);
        }
        for ns in subscribed {
            self.send(ns, true, Cause::CatalogChanged);
        }
    }

    fn actor(&mut self, ns: &str) -> Addr<NamespaceActor> {
        self.actors.get(&ObjectKey::cluster(ns))
    }
}

/// A namespace actor started again after it died (a panic, a stop) resolves once: what the dead one held
/// (decisions not acknowledged, fetches under way) is gone with it.
#[derive(Default)]
struct ResolveAgain;

impl Revive<NamespaceActor> for ResolveAgain {
    fn revive(&self, key: &ObjectKey, addr: &Addr<NamespaceActor>) {
        addr.do_send(Resolve {
            namespace: key.name.clone(),
            cause: Cause::Retry,
        });
    }
}

impl Actor for NamespaceResolver {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(olm_runtime::children::SUPERVISE_EVERY, |act, _ctx| {
            act.actors.supervise();
        });
    }
}

impl Handler<Resolve> for NamespaceResolver {
    type Result = ();

    fn handle(&mut self, msg: Resolve, ctx: &mut Self::Context) {
        tracing::debug!(namespace = %msg.namespace, cause = ?msg.cause, "resolve requested");
        if msg.cause == Cause::CatalogChanged
            && msg.namespace == self.shared.config.global_namespace
        {
            if let catalog_burst::Step::FanOutIn(wait) =
                self.burst.change(std::time::Instant::now())
            {
                ctx.run_later(wait, |act, _ctx| act.fan_out());
            }
            return;
        }
        let has_subscription = self.shared.has_subscription(&msg.namespace);
        self.send(msg.namespace, has_subscription, msg.cause);
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
            namespaces: self.actors.keys().map(|k| k.name.clone()).collect(),
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
