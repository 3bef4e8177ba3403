//! The Subscription actor: one per Subscription. It keeps the latest observation of its object and reconciles it
//! level-triggered on every message (observation, requeue, dependency change).

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::subscription::Subscription;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct SubscriptionActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<Subscription>>,
}

impl Actor for SubscriptionActor {
    type Context = Context<Self>;
}

impl ObjectActor for SubscriptionActor {
    type Object = Subscription;
    type Shared = Shared;
    const KIND: &'static str = "Subscription";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self { key, shared, latest: None }
    }
}

impl SubscriptionActor {
    fn reconcile(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(object = %self.key, kind = Self::KIND, "observed");
    }
}

impl Handler<ObjectEvent<Subscription>> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<Subscription>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                self.latest = Some(obj);
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

impl Handler<Requeue> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: Requeue, ctx: &mut Self::Context) {
        match msg.after {
            Some(delay) => {
                ctx.notify_later(Requeue { reason: msg.reason, after: None }, delay);
            }
            None => self.reconcile(ctx),
        }
    }
}
