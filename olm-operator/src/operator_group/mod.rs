//! The OperatorGroup actor: one per OperatorGroup. It keeps the latest observation of its group and reconciles
//! it level-triggered on every message.

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct OperatorGroupActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<OperatorGroup>>,
}

impl Actor for OperatorGroupActor {
    type Context = Context<Self>;
}

impl ObjectActor for OperatorGroupActor {
    type Object = OperatorGroup;
    type Shared = Shared;
    const KIND: &'static str = "OperatorGroup";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self { key, shared, latest: None }
    }
}

impl OperatorGroupActor {
    fn reconcile(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(og = %self.key, "operator group observed");
    }
}

impl Handler<ObjectEvent<OperatorGroup>> for OperatorGroupActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<OperatorGroup>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(og) => {
                self.latest = Some(og);
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

impl Handler<Requeue> for OperatorGroupActor {
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
