//! The Subscription actor: one per Subscription. Its status is written by namespace resolution (one writer,
//! spec §4.1); the actor turns every observed change into a [`Resolve`](crate::namespace::Resolve) of its
//! namespace and keeps the `subscription_count` and `subscription_sync_total` metrics.

use crate::namespace::Cause;
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
    /// The label set of `subscription_sync_total` last used (stale sets are deleted, as OLM does).
    labels: Option<[String; 5]>,
}

impl Actor for SubscriptionActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.subscription_count.inc();
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.shared.catalog_metrics.subscription_count.dec();
        if let Some(l) = self.labels.take() {
            let _ = self
                .shared
                .catalog_metrics
                .subscription_sync_total
                .remove_label_values(&[&l[0], &l[1], &l[2], &l[3], &l[4]]);
        }
        self.shared
            .resolve(self.key.namespace_or_empty(), Cause::SubscriptionChanged);
    }
}

impl ObjectActor for SubscriptionActor {
    type Object = Subscription;
    type Shared = Shared;
    const KIND: &'static str = "Subscription";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            key,
            shared,
            latest: None,
            labels: None,
        }
    }
}

/// `subscription_sync_total` labels: name, installed, channel, package, approval.
pub fn sync_labels(sub: &Subscription) -> [String; 5] {
    [
        sub.metadata.name.clone().unwrap_or_default(),
        sub.status
            .as_ref()
            .map(|s| s.installed_csv.clone())
            .unwrap_or_default(),
        sub.spec.channel.clone().unwrap_or_default(),
        sub.spec.package.clone(),
        sub.spec
            .install_plan_approval
            .as_ref()
            .map(|a| a.as_str().to_string())
            .unwrap_or_else(|| "Automatic".to_string()),
    ]
}

impl SubscriptionActor {
    fn reconcile(&mut self, _ctx: &mut Context<Self>) {
        let Some(sub) = self.latest.clone() else {
            return;
        };
        let labels = sync_labels(&sub);
        let m = &self.shared.catalog_metrics.subscription_sync_total;
        if let Some(old) = self.labels.as_ref().filter(|old| **old != labels) {
            let _ = m.remove_label_values(&[&old[0], &old[1], &old[2], &old[3], &old[4]]);
        }
        m.with_label_values(&[&labels[0], &labels[1], &labels[2], &labels[3], &labels[4]])
            .inc();
        self.labels = Some(labels);
        self.shared
            .resolve(self.key.namespace_or_empty(), Cause::SubscriptionChanged);
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
        crate::requeue::handle(self, msg, ctx, Self::reconcile);
    }
}
