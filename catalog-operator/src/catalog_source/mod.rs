//! The CatalogSource actor: one per CatalogSource. It keeps the latest observation of its object and reconciles it
//! level-triggered on every message (observation, requeue, dependency change).

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::catalog_source::CatalogSource;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct CatalogSourceActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<CatalogSource>>,
}

impl Actor for CatalogSourceActor {
    type Context = Context<Self>;
}

impl ObjectActor for CatalogSourceActor {
    type Object = CatalogSource;
    type Shared = Shared;
    const KIND: &'static str = "CatalogSource";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self { key, shared, latest: None }
    }
}

impl CatalogSourceActor {
    fn reconcile(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(object = %self.key, kind = Self::KIND, "observed");
    }
}

impl Handler<ObjectEvent<CatalogSource>> for CatalogSourceActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<CatalogSource>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                self.latest = Some(obj);
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

impl Handler<Requeue> for CatalogSourceActor {
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
