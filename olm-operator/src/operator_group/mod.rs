//! The OperatorGroup actor: one per OperatorGroup. It keeps the latest observation of its group and syncs it
//! level-triggered (spec §3): status and targets, namespace labels, member annotations, `olm.providedAPIs`
//! (the only writer of it: CSV actors send [`ChangeProvidedApis`]), generated ClusterRoles, copied CSVs.
//!
//! ```text
//! Namespace store ──NamespaceChanged──▶ every OperatorGroupActor (synced if it cares: `namespace_interest`)
//! CsvActor ──MemberChanged / ChangeProvidedApis──▶ OperatorGroupActor ──Requeue──▶ CsvActors providing its APIs
//! ```

pub mod copy_warning;
pub mod effects;
pub mod home;
pub mod intersection;
pub mod lifted;
pub mod machine;
pub mod metrics;
pub mod namespace_interest;
pub mod new_members;
pub mod notify;
pub mod olm_config;
pub mod plan;
pub mod provided_apis;
pub mod service_account;
pub mod targets;
pub mod writes;

use crate::shared::Shared;
use actix::prelude::*;
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{
    ChangeProvidedApis, ObjectEvent, OperatorGroupMsg, ProvidedApisError, Requeue, RequeueReason,
};
use olm_runtime::children::KeyedActor;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{ErrorClass, Failure, Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::registry::{Broadcast, Filter, ObjectActor};
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct OperatorGroupActor {
    pub key: ObjectKey,
    pub shared: Shared,
    pub latest: Option<Arc<OperatorGroup>>,
    /// The reconcile loop: one sync at a time, bursts of messages (namespace events, member changes) coalesced.
    control: Loop,
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
}

impl KeyedActor for OperatorGroupActor {
    type Shared = Shared;
    const KIND: &'static str = "OperatorGroup";

    fn new(key: ObjectKey, shared: Shared) -> Self {
        Self {
            control: Loop::new(Self::KIND, key.clone(), crate::error::policy())
                .with_chaos(shared.process.chaos.clone()),
            key,
            shared,
            latest: None,
            fingerprint: None,
            group_roles_hash: None,
            api_roles_done: BTreeSet::new(),
            siblings: None,
            created: BTreeSet::new(),
            apis: Default::default(),
        }
    }

    fn attach(&mut self, journal: SharedJournal) {
        self.control.attach(journal);
    }
}

impl OperatorGroupActor {
    /// The group changed (or went): the CSVs of its namespace decide again. The registry's store already shows
    /// the version this actor was sent (a reflector stores before it emits), so they read it.
    fn requeue_members(&self) {
        self.shared.registries.csvs.do_send(Broadcast {
            filter: Filter::Namespace(self.key.namespace_or_empty().to_string()),
            msg: REQUEUE_CSVS,
        });
    }
}

impl Handler<ObjectEvent<OperatorGroup>> for OperatorGroupActor {
    type Result = ();

    fn handle(&mut self, msg: ObjectEvent<OperatorGroup>, ctx: &mut Self::Context) {
        match msg {
            ObjectEvent::Observed(og) => {
                let news = self
                    .shared
                    .stores
                    .groups_announced
                    .is_news(&self.key, og.metadata.resource_version.as_deref());
                self.latest = Some(og);
                if news {
                    self.requeue_members();
                }
                reconcile::trigger(self, ctx, Cause::Observed);
            }
            ObjectEvent::Deleted => {
                self.shared.stores.groups_announced.forget(&self.key);
                self.requeue_members();
                let shared = self.shared.clone();
                let key = self.key.clone();
                let uid = self.latest.as_ref().and_then(|g| g.metadata.uid.clone());
                let mut apis = self.apis.clone();
                if let Some(g) = self.latest.as_deref() {
                    apis.extend(provided_apis::of_group(g));
                }
                ctx.wait(
                    async move { notify::group_deleted(&shared, &key, uid.as_deref(), &apis).await }
                        .into_actor(self)
                        .map(|_, _, ctx: &mut Context<Self>| ctx.stop()),
                );
            }
            ObjectEvent::Undecodable(error) => reconcile::hold(self, ctx, error),
        }
    }
}

olm_runtime::requeue_handler!(OperatorGroupActor);

impl Handler<OperatorGroupMsg> for OperatorGroupActor {
    type Result = ();

    fn handle(&mut self, msg: OperatorGroupMsg, ctx: &mut Self::Context) {
        if let (OperatorGroupMsg::NamespaceChanged(ns), Some(group)) =
            (&msg, self.latest.as_deref())
            && !namespace_interest::cares(group, ns)
        {
            return;
        }
        tracing::trace!(og = %self.key, ?msg, "operator group nudged");
        reconcile::trigger(self, ctx, Cause::Message("operator group message"));
    }
}

impl Handler<ChangeProvidedApis> for OperatorGroupActor {
    type Result = AtomicResponse<Self, Result<BTreeSet<String>, ProvidedApisError>>;

    fn handle(&mut self, msg: ChangeProvidedApis, _ctx: &mut Self::Context) -> Self::Result {
        let key = self.key.clone();
        let client = self.shared.client.clone();
        let is_static = self.latest.as_ref().map(|g| g.is_static());
        let held = self.control.held().is_some();
        AtomicResponse::new(Box::pin(
            async move {
                if held {
                    return Err(ProvidedApisError::Undecodable(key));
                }
                match is_static {
                    None => return Err(ProvidedApisError::NotObserved(key)),
                    Some(true) => return Err(ProvidedApisError::Static(key)),
                    Some(false) => {}
                }
                tracing::debug!(og = %key, csv = %msg.csv, change = ?msg.change, apis = ?msg.apis, "changing provided apis");
                effects::change_provided_apis(&client, &key, effects::edit_for(msg.change, msg.apis))
                    .await
                    .map_err(|e| ProvidedApisError::Write { group: key.clone(), message: olm_runtime::error::chain(&e) })
            }
            .into_actor(self),
        ))
    }
}

impl Reconciler for OperatorGroupActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let Some(group) = self.latest.clone() else {
            return reconcile::now(Outcome::Done(Next::Idle));
        };
        let namespaces = &self.shared.stores.namespaces;
        let listed = futures::FutureExt::now_or_never(namespaces.wait_until_ready())
            .is_some_and(|r| r.is_ok());
        let ns = namespaces.get(&kube::runtime::reflector::ObjectRef::new(
            self.key.namespace_or_empty(),
        ));
        if !home::standing(listed, ns.as_deref()) {
            // Its ClusterRoles are the janitor's to delete (the sweep on the namespace's deletion).
            tracing::debug!(og = %self.key, "the group's namespace is being deleted or gone: not synced");
            return reconcile::now(Outcome::Done(Next::Idle));
        }
        let store = &self.shared.stores.csvs;
        self.created.retain(|k| {
            store
                .get(
                    &kube::runtime::reflector::ObjectRef::new(&k.name)
                        .within(k.namespace_or_empty()),
                )
                .is_none()
        });
        let plan = match plan::plan(
            &self.shared,
            &group,
            &self.api_roles_done,
            &self.created,
            &self.apis,
            self.fingerprint.as_deref(),
        ) {
            Ok(plan) => plan,
            Err(error) => {
                return reconcile::now(Outcome::failed(ErrorClass::Transient, &error));
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
        Box::pin(
            fut.into_actor(self)
                .map(|outcome, act: &mut Self, _ctx: &mut Context<Self>| {
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
                        Outcome::Done(Next::Idle)
                    } else {
                        // Each failed write was logged where it failed; the loop retries with backoff.
                        Outcome::Failed(Failure {
                            class: ErrorClass::Transient,
                            message: "some writes of the sync failed".to_string(),
                        })
                    }
                }),
        )
    }
}

/// The groups of a namespace, from the store.
pub fn groups_in(shared: &Shared, namespace: &str) -> Vec<Arc<OperatorGroup>> {
    shared
        .stores
        .operator_groups
        .state()
        .into_iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(namespace))
        .collect()
}

/// Requeue reason used when a group asks CSVs to look again.
pub const REQUEUE_CSVS: Requeue = Requeue {
    reason: RequeueReason::DependencyChanged,
};
