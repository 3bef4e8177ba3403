//! The ClusterServiceVersion actor: one per CSV. It keeps the latest observation of its CSV and reconciles it
//! level-triggered on every message (observation, requeue, dependency change).

pub mod chain;
pub mod facts;
pub mod group_fit;
pub mod hash;
pub mod health;
pub mod machine;
pub mod requirements;
pub mod status;
pub mod strategy;

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::csv::ClusterServiceVersion;
use messages::key::ObjectKey;
use messages::msg::{ObjectEvent, Requeue};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct CsvActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<ClusterServiceVersion>>,
    pub reconciles: u64,
}

impl Actor for CsvActor {
    type Context = Context<Self>;
}

impl ObjectActor for CsvActor {
    type Object = ClusterServiceVersion;
    type Shared = Shared;
    const KIND: &'static str = "ClusterServiceVersion";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self { key, shared, latest: None, reconciles: 0 }
    }
}

impl CsvActor {
    fn reconcile(&mut self, _ctx: &mut Context<Self>) {
        self.reconciles += 1;
        let Some(csv) = &self.latest else { return };
        let phase = csv.status.as_ref().map(|s| s.phase.clone());
        tracing::debug!(csv = %self.key, ?phase, reconciles = self.reconciles, "csv observed");
    }
}

impl Handler<ObjectEvent<ClusterServiceVersion>> for CsvActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<ClusterServiceVersion>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(csv) => {
                self.latest = Some(csv);
                self.reconcile(ctx);
            }
            ObjectEvent::Deleted => ctx.stop(),
        }
    }
}

impl Handler<Requeue> for CsvActor {
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
