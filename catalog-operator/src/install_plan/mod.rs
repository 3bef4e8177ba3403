//! The InstallPlan actor: one per InstallPlan. It keeps the latest observation of its object and reconciles it
//! level-triggered on every message (observation, requeue, dependency change).

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::install_plan::InstallPlan;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct InstallPlanActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<InstallPlan>>,
}

impl Actor for InstallPlanActor {
    type Context = Context<Self>;
}

impl ObjectActor for InstallPlanActor {
    type Object = InstallPlan;
    type Shared = Shared;
    const KIND: &'static str = "InstallPlan";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self { key, shared, latest: None }
    }
}

impl InstallPlanActor {
    fn reconcile(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(object = %self.key, kind = Self::KIND, "observed");
    }
}

impl Handler<ObjectEvent<InstallPlan>> for InstallPlanActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<InstallPlan>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                self.latest = Some(obj);
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

impl Handler<Requeue> for InstallPlanActor {
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
