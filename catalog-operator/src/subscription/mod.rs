//! The Subscription actor: one per Subscription, on the reconcile contract, owning its status and conditions.
//! Each run sends the Subscription as the actor knows it to its namespace's resolution (a
//! [`Want`](crate::wants::Want): resolution stays namespace-wide, as OLM's guarantees are) and writes the
//! status of the last [`Decision`] resolution answered with; it keeps the `subscription_count` and
//! `subscription_sync_total` metrics. A failing write of one Subscription holds no other back.
//!
//! ```text
//! Subscription watch ─▶ Registry ─▶ SubscriptionActor ──Want(latest, applied)──▶ NamespaceActor
//! NamespaceActor ──Forward(Decision)──▶ Registry ─▶ SubscriptionActor ──status──▶ API server
//! ```

pub mod write;

use crate::error::{self, Error};
use crate::shared::Shared;
use crate::status;
use crate::wants::{Decision, News, Want};
use actix::prelude::*;
use kube::Api;
use kube::api::PostParams;
use messages::crd::subscription::Subscription;
use messages::key::ObjectKey;
use messages::msg::ObjectEvent;
use olm_runtime::children::KeyedActor;
use olm_runtime::error as api_error;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::own_writes::OwnWrites;
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct SubscriptionActor {
    pub key: ObjectKey,
    pub shared: Shared,
    /// The Subscription as last observed or written (`olm_runtime::own_writes`).
    own: OwnWrites<Subscription>,
    /// The label set of `subscription_sync_total` last used (stale sets are deleted, as OLM does).
    labels: Option<[String; 5]>,
    control: Loop,
    /// The newest decision not applied yet, and the sequence number of the last one applied.
    pending: Option<Decision>,
    applied: Option<u64>,
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
        self.tell(News::SubscriptionGone {
            name: self.key.name.clone(),
        });
    }
}

impl ObjectActor for SubscriptionActor {
    type Object = Subscription;
}

impl KeyedActor for SubscriptionActor {
    type Shared = Shared;
    const KIND: &'static str = "Subscription";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            control: Loop::new(Self::KIND, key.clone(), error::policy())
                .with_chaos(shared.process.chaos.clone()),
            key,
            shared,
            own: OwnWrites::default(),
            labels: None,
            pending: None,
            applied: None,
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
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
    fn tell(&self, news: News) {
        self.shared.registries.wants.do_send(Want {
            namespace: self.key.namespace_or_empty().to_string(),
            news,
        });
    }

    fn want(&self) {
        if let Some(sub) = self.own.latest().cloned() {
            self.tell(News::Subscription {
                sub,
                applied: self.applied,
            });
        }
    }

    fn count_sync(&mut self, sub: &Subscription) {
        let labels = sync_labels(sub);
        let m = &self.shared.catalog_metrics.subscription_sync_total;
        if let Some(old) = self.labels.as_ref().filter(|old| **old != labels) {
            let _ = m.remove_label_values(&[&old[0], &old[1], &old[2], &old[3], &old[4]]);
        }
        m.with_label_values(&[&labels[0], &labels[1], &labels[2], &labels[3], &labels[4]])
            .inc();
        self.labels = Some(labels);
    }
}

impl Reconciler for SubscriptionActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let Some(sub) = self.own.latest().cloned() else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        self.count_sync(&sub);
        let Some(decision) = self.pending.clone() else {
            self.want();
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        let Some(updated) = write::updated(&sub, &decision.status, write::now()) else {
            // Already true: acknowledged without a write.
            self.applied = Some(decision.seq);
            self.pending = None;
            self.want();
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        let api: Api<Subscription> =
            Api::namespaced(self.shared.client.clone(), self.key.namespace_or_empty());
        let name = self.key.name.clone();
        let old = sub.status.clone().unwrap_or_default();
        let limit =
            status::health_only(&old, &decision.status).then(|| self.shared.health_writes.clone());
        let fut = async move {
            // A closed semaphore (never closed here) writes without a permit.
            let _permit = match limit {
                Some(limit) => limit.acquire_owned().await.ok(),
                None => None,
            };
            api.replace_status(&name, &PostParams::default(), &updated)
                .await
        };
        Box::pin(actix::fut::wrap_future::<_, Self>(fut).map(
            move |result, act, _ctx| match result {
                Ok(written) => {
                    act.own.wrote(Arc::new(written));
                    act.applied = Some(decision.seq);
                    if act.pending.as_ref().map(|d| d.seq) == Some(decision.seq) {
                        act.pending = None;
                    }
                    act.want();
                    Outcome::Done(Next::Idle)
                }
                Err(source) => {
                    if api_error::classify(&source).is_conflict() {
                        // Our copy is stale (a write we never saw the event of, e.g. the Operator view's
                        // labels after a relist): retry from the store's, not with the same copy forever.
                        act.own
                            .conflicted(&act.shared.stores.subscriptions, &act.key);
                    }
                    let e = Error::SubscriptionStatus {
                        key: act.key.clone(),
                        source,
                    };
                    Outcome::from_error(error::class(e.kind()), &e)
                }
            },
        ))
    }

    fn resynced(&mut self) {
        self.own
            .resync(&self.shared.stores.subscriptions, &self.key);
    }
}

impl Handler<ObjectEvent<Subscription>> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<Subscription>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(obj) => {
                self.own.observe(obj);
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => ctx.stop(),
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

impl Handler<Decision> for SubscriptionActor {
    type Result = ();

    fn handle(&mut self, msg: Decision, ctx: &mut Self::Context) {
        // A decision already applied (resolution resends what it has not seen acknowledged; the acknowledging
        // want is on its way) or older than the pending one is dropped without a run.
        let newer = self.applied.is_none_or(|a| msg.seq > a)
            && self.pending.as_ref().is_none_or(|p| msg.seq > p.seq);
        if newer {
            self.pending = Some(msg);
            reconcile::trigger(self, ctx, Cause::Message("decision"));
        }
    }
}

olm_runtime::requeue_handler!(SubscriptionActor);

#[cfg(test)]
mod tests;
