//! Namespace resolution (OLM `syncResolvingNamespace`, spec §4.1): one actor owns the resolution of every
//! namespace and runs at most one sync per namespace at a time. Any change that matters (a Subscription,
//! a catalog's content or health, an InstallPlan, a CSV, an OperatorGroup) sends a typed [`Resolve`];
//! requests that arrive during a sync are coalesced into one more sync.

pub mod input;
pub mod status;
pub mod sync;

use crate::shared::Shared;
use actix::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
use sync::Overlay;

/// Why a namespace is resolved again (for logs and spans only; every cause runs the same sync).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    SubscriptionChanged,
    CatalogChanged,
    InstallPlanChanged,
    CsvChanged,
    OperatorGroupChanged,
    Retry,
}

#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Resolve {
    pub namespace: String,
    pub cause: Cause,
}

#[derive(Default)]
struct NsState {
    running: bool,
    dirty: bool,
    failures: u32,
    overlay: Overlay,
}

pub struct NamespaceResolver {
    shared: Shared,
    states: HashMap<String, NsState>,
}

impl NamespaceResolver {
    pub fn new(shared: Shared) -> Self {
        Self {
            shared,
            states: HashMap::new(),
        }
    }

    fn kick(&mut self, ns: &str, ctx: &mut Context<Self>) {
        let state = self.states.entry(ns.to_string()).or_default();
        if state.running || !state.dirty {
            return;
        }
        state.running = true;
        state.dirty = false;
        let overlay = std::mem::take(&mut state.overlay);
        let shared = self.shared.clone();
        let namespace = ns.to_string();
        ctx.spawn(sync::run(shared, namespace.clone(), overlay).into_actor(self).map(move |(overlay, result), act, ctx| {
            let state = act.states.entry(namespace.clone()).or_default();
            state.running = false;
            state.overlay = overlay;
            match result {
                Ok(Some(after)) => {
                    state.failures = 0;
                    ctx.notify_later(Resolve { namespace: namespace.clone(), cause: Cause::Retry }, after);
                }
                Ok(None) => state.failures = 0,
                Err(e) => {
                    state.failures = state.failures.saturating_add(1);
                    let backoff = Duration::from_millis(250u64.saturating_mul(1 << state.failures.min(7))).min(Duration::from_secs(30));
                    tracing::warn!(namespace = %namespace, error = &e as &dyn std::error::Error, retry_in = ?backoff, "namespace sync failed");
                    ctx.notify_later(Resolve { namespace: namespace.clone(), cause: Cause::Retry }, backoff);
                }
            }
            act.kick(&namespace, ctx);
        }));
    }
}

impl Actor for NamespaceResolver {
    type Context = Context<Self>;
}

impl Handler<Resolve> for NamespaceResolver {
    type Result = ();

    fn handle(&mut self, msg: Resolve, ctx: &mut Self::Context) {
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
            self.states.entry(ns.clone()).or_default().dirty = true;
            self.kick(&ns, ctx);
        }
    }
}
