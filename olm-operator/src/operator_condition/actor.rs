//! The OperatorCondition actor: one per OperatorCondition, on the reconcile contract. It owns the status (copies
//! `spec.conditions` into `status.conditions`, [`super::status_update`]) and tells the CSVs that read it: its
//! own CSV (a deleted condition is recreated) and the CSVs replacing it (the `Upgradeable` gate).
//!
//! ```text
//! OperatorCondition watch ─▶ Registry ─▶ OperatorConditionActor ──status──▶ API server
//!                                              └──Forward(Requeue)──▶ CsvActor (its CSV, the CSVs replacing it)
//! ```

use crate::error;
use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::operator_condition::OperatorCondition;
use messages::key::ObjectKey;
use messages::msg::ObjectEvent;
use olm_runtime::children::KeyedActor;
use olm_runtime::error::{self as api_error, Class};
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::ObjectActor;
use std::sync::Arc;

pub struct OperatorConditionActor {
    key: ObjectKey,
    shared: Shared,
    latest: Option<Arc<OperatorCondition>>,
    control: Loop,
}

impl Actor for OperatorConditionActor {
    type Context = Context<Self>;
}

impl ObjectActor for OperatorConditionActor {
    type Object = OperatorCondition;
}

impl KeyedActor for OperatorConditionActor {
    type Shared = Shared;
    const KIND: &'static str = "OperatorCondition";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            control: Loop::new(Self::KIND, key.clone(), error::policy())
                .with_chaos(shared.process.chaos.clone()),
            key,
            shared,
            latest: None,
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

impl OperatorConditionActor {
    /// The CSVs reading this condition decide again (the registry's store already shows this version).
    fn requeue_readers(&self) {
        let namespace = self.key.namespace_or_empty().to_string();
        let name = self.key.name.clone();
        self.shared.requeue_csv(self.key.clone());
        self.shared.requeue_csvs_where(|c| {
            c.metadata.namespace.as_deref() == Some(namespace.as_str())
                && c.spec.replaces.as_deref() == Some(name.as_str())
        });
    }
}

impl Reconciler for OperatorConditionActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let Some(oc) = self.latest.clone().filter(|oc| {
            oc.metadata.deletion_timestamp.is_none() && super::status_update(oc).is_some()
        }) else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        let client = self.shared.client.clone();
        let fut = async move { super::sync::sync_status(&client, &oc).await };
        Box::pin(
            actix::fut::wrap_future::<_, Self>(fut).map(|result, _act, _ctx| match result {
                Ok(()) => Outcome::Done(Next::Idle),
                Err(e) if api_error::is(&e, Class::NotFound) => Outcome::Done(Next::Idle),
                Err(e) => Outcome::failed(error::class(api_error::classify(&e)), &e),
            }),
        )
    }
}

impl Handler<ObjectEvent<OperatorCondition>> for OperatorConditionActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<OperatorCondition>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(oc) => {
                self.latest = Some(oc);
                self.requeue_readers();
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => {
                self.requeue_readers();
                ctx.stop();
            }
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

olm_runtime::requeue_handler!(OperatorConditionActor);
