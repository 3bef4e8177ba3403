//! The CSV actor's side of [`crate::copied_csv::orphan`]: a copy whose parent is known missing deletes itself
//! (the write happens in the actor that owns the copy, not in a task spawned by a watch callback).

use super::CsvActor;
use crate::copied_csv::orphan;
use crate::operator_group::effects;
use crate::operator_group::writes::CopyWrite;
use actix::prelude::*;
use messages::crd::csv::ClusterServiceVersion;
use olm_runtime::outcome::{ErrorClass, Next, Outcome};

impl CsvActor {
    /// The run that deletes this copy, if it is orphaned.
    pub(super) fn collect_if_orphaned(
        &mut self,
        copy: &ClusterServiceVersion,
    ) -> Option<ResponseActFuture<Self, Outcome>> {
        let parent = orphan::parent_namespace(copy).and_then(|ns| {
            self.shared
                .stores
                .csvs
                .get(&kube::runtime::reflector::ObjectRef::new(&self.key.name).within(ns))
        });
        if !orphan::orphaned(copy, parent.as_deref(), &self.shared.stores.scope) {
            return None;
        }
        tracing::info!(csv = %self.key, "deleting a copy whose parent is gone");
        let client = self.shared.client.clone();
        let key = self.key.clone();
        let fut = async move { effects::write_copies(&client, vec![CopyWrite::Delete(key)]).await };
        Some(Box::pin(fut.into_actor(self).map(
            |(requests, result), act, _ctx| {
                crate::operator_group::metrics::count(&act.shared.metrics, "copied_csv", requests);
                match result {
                    // Its deletion event stops the actor.
                    Ok(()) => Outcome::Done(Next::Idle),
                    Err(e) => Outcome::failed(ErrorClass::Transient, &e),
                }
            },
        )))
    }
}
