//! The OperatorGroup actor: one per OperatorGroup. It keeps the latest observation of its group and syncs it
//! level-triggered (spec §3): status and targets, namespace labels, member annotations, `olm.providedAPIs`
//! (the only writer of it: CSV actors send [`ChangeProvidedApis`]), generated ClusterRoles, copied CSVs.
//!
//! ```text
//! Namespace store ──NamespaceChanged──▶ every OperatorGroupActor
//! CsvActor ──MemberChanged / ChangeProvidedApis──▶ OperatorGroupActor ──Requeue──▶ CsvActors providing its APIs
//! ```

pub mod copy_warning;
pub mod effects;
pub mod intersection;
pub mod machine;
pub mod membership;
pub mod metrics;
pub mod notify;
pub mod olm_config;
pub mod plan;
pub mod provided_apis;
pub mod service_account;
pub mod targets;

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{
    ChangeProvidedApis, ObjectEvent, OperatorGroupMsg, ProvidedApisError, Requeue, RequeueReason,
};
use olm_runtime::registry::ObjectActor;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// Bursts of messages (namespace events, member changes) within this window are one sync.
const COALESCE: Duration = Duration::from_millis(20);
/// Retry delay after a failed write.
const RETRY: Duration = Duration::from_secs(2);

pub struct OperatorGroupActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<OperatorGroup>>,
    scheduled: bool,
    fingerprint: Option<String>,
    group_roles_hash: Option<String>,
    api_roles_done: BTreeSet<String>,
    siblings: Option<usize>,
    /// Copies created by this actor and not yet seen in the CSV store.
    created: BTreeSet<ObjectKey>,
    /// The APIs of the last successful sync (CSVs providing one it dropped are requeued).
    apis: provided_apis::ApiSet,
}

impl Actor for OperatorGroupActor {
    type Context = Context<Self>;
}

impl ObjectActor for OperatorGroupActor {
    type Object = OperatorGroup;
    type Shared = Shared;
    const KIND: &'static str = "OperatorGroup";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            key,
            shared,
            latest: None,
            scheduled: false,
            fingerprint: None,
            group_roles_hash: None,
            api_roles_done: BTreeSet::new(),
            siblings: None,
            created: BTreeSet::new(),
            apis: Default::default(),
        }
    }
}

/// Run one sync now (sent to itself, coalesced).
struct Sync;

impl Message for Sync {
    type Result = ();
}

impl OperatorGroupActor {
    fn schedule(&mut self, ctx: &mut Context<Self>, after: Duration) {
        if !self.scheduled {
            self.scheduled = true;
            ctx.notify_later(Sync, after);
        }
    }
}

impl Handler<ObjectEvent<OperatorGroup>> for OperatorGroupActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<OperatorGroup>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(og) => {
                self.latest = Some(og);
                self.schedule(ctx, COALESCE);
            }
            ObjectEvent::Deleted => {
                let shared = self.shared.clone();
                let key = self.key.clone();
                let uid = self.latest.as_ref().and_then(|g| g.metadata.uid.clone());
                ctx.wait(
                    async move { notify::group_deleted(&shared, &key, uid.as_deref()).await }
                        .into_actor(self)
                        .map(|_, _, ctx: &mut Context<Self>| ctx.stop()),
                );
            }
        }
    }
}

impl Handler<Requeue> for OperatorGroupActor {
    type Result = ();

    fn handle(&mut self, msg: Requeue, ctx: &mut Self::Context) {
        self.schedule(ctx, msg.after.unwrap_or(COALESCE));
    }
}

impl Handler<OperatorGroupMsg> for OperatorGroupActor {
    type Result = ();

    fn handle(&mut self, msg: OperatorGroupMsg, ctx: &mut Self::Context) {
        tracing::trace!(og = %self.key, ?msg, "operator group nudged");
        self.schedule(ctx, COALESCE);
    }
}

impl Handler<ChangeProvidedApis> for OperatorGroupActor {
    type Result = AtomicResponse<Self, Result<BTreeSet<String>, ProvidedApisError>>;

    fn handle(&mut self, msg: ChangeProvidedApis, _ctx: &mut Self::Context) -> Self::Result {
        let key = self.key.clone();
        let client = self.shared.client.clone();
        let is_static = self.latest.as_ref().map(|g| g.is_static());
        AtomicResponse::new(Box::pin(
            async move {
                match is_static {
                    None => return Err(ProvidedApisError::NotObserved(key)),
                    Some(true) => return Err(ProvidedApisError::Static(key)),
                    Some(false) => {}
                }
                tracing::debug!(og = %key, csv = %msg.csv, change = ?msg.change, apis = ?msg.apis, "changing provided apis");
                effects::change_provided_apis(&client, &key, effects::edit_for(msg.change, msg.apis))
                    .await
                    .map_err(|e| ProvidedApisError::Write { group: key.clone(), message: error_chain(&e) })
            }
            .into_actor(self),
        ))
    }
}

impl Handler<Sync> for OperatorGroupActor {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _msg: Sync, _ctx: &mut Self::Context) -> Self::Result {
        self.scheduled = false;
        let Some(group) = self.latest.clone() else {
            return AtomicResponse::new(Box::pin(async {}.into_actor(self)));
        };
        if let Some(store) = self.shared.stores.csvs.get() {
            self.created.retain(|k| {
                store
                    .get(
                        &kube::runtime::reflector::ObjectRef::new(&k.name)
                            .within(k.namespace_or_empty()),
                    )
                    .is_none()
            });
        }
        let plan = match plan::plan(
            &self.shared,
            &group,
            &self.api_roles_done,
            &self.created,
            &self.apis,
        ) {
            Ok(plan) => plan,
            Err(error) => {
                tracing::warn!(og = %self.key, error = &error as &dyn std::error::Error, "cannot sync operator group");
                return AtomicResponse::new(Box::pin(
                    async {}
                        .into_actor(self)
                        .map(|_, act: &mut Self, ctx: &mut Context<Self>| act.schedule(ctx, RETRY)),
                ));
            }
        };
        let shared = self.shared.clone();
        let key = self.key.clone();
        let roles_changed =
            self.group_roles_hash.as_deref() != Some(plan.group_roles_hash.as_str());
        let fingerprint_changed = self.fingerprint.as_deref() != Some(plan.fingerprint.as_str());
        let apis = plan.apis.clone();
        let siblings_changed = self.siblings != Some(plan.groups_in_namespace);
        let fut = async move {
            notify::apply(
                &shared,
                &key,
                &group,
                plan,
                roles_changed,
                fingerprint_changed,
                siblings_changed,
            )
            .await
        };
        AtomicResponse::new(Box::pin(fut.into_actor(self).map(
            |outcome, act: &mut Self, ctx: &mut Context<Self>| {
                act.siblings = Some(outcome.groups_in_namespace);
                for done in outcome.api_roles_done {
                    plan::forget_opposite(&mut act.api_roles_done, &done);
                    act.api_roles_done.insert(done);
                }
                act.created.extend(outcome.created);
                if outcome.ok {
                    act.apis = apis;
                    act.fingerprint = Some(outcome.fingerprint);
                    act.group_roles_hash = Some(outcome.group_roles_hash);
                } else {
                    act.schedule(ctx, RETRY);
                }
            },
        )))
    }
}

/// The text of an error and its sources, for replies that cross actors as plain data.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The groups of a namespace, from the store.
pub fn groups_in(shared: &Shared, namespace: &str) -> Vec<Arc<OperatorGroup>> {
    shared
        .stores
        .operator_groups
        .get()
        .map(|s| {
            s.state()
                .into_iter()
                .filter(|g| g.metadata.namespace.as_deref() == Some(namespace))
                .collect()
        })
        .unwrap_or_default()
}

/// Requeue reason used when a group asks CSVs to look again.
pub const REQUEUE_CSVS: Requeue = Requeue {
    reason: RequeueReason::DependencyChanged,
    after: None,
};
