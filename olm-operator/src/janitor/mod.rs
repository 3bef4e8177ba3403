//! The cluster janitor: one actor per operator, on the reconcile contract, the one writer of the
//! cluster-scoped objects CSVs leave behind. A stopping CSV actor sends it what it knew of its CSV
//! ([`JanitorMsg::CsvGone`]: key, uid, last object); `watches::mark_ready` sends [`JanitorMsg::StoresSynced`]
//! once every store listed, which makes the start-up sweep of cluster-scoped objects (RBAC, APIServices, webhook
//! configurations) orphaned while no operator ran
//! due. A run decides each pending job from the stores (`decide.rs`, pure), applies it (`apply.rs`) and keeps
//! what failed for the loop's retry with backoff; no write happens in a spawned task.
//!
//! ```text
//! CsvActor (ObjectEvent::Deleted) ─CsvGone { key, uid, csv }─▶ JanitorActor ─deletes by owner labels─▶ API server
//! OperatorGroupActor (ObjectEvent::Deleted) ─GroupGone(key)─▶ JanitorActor ─deletes the group's ClusterRoles─▶ API server
//! mark_ready (every store listed) ─StoresSynced─▶ JanitorActor ─sweep (list + delete orphans)─▶ API server
//! ```

pub mod apply;
pub mod decide;

use crate::routes::{CsvGone, JanitorMsg};
use crate::shared::Shared;
use actix::prelude::*;
use decide::{SweepView, Verdict};
use kube::runtime::reflector::ObjectRef;
use messages::key::ObjectKey;
use olm_runtime::journal::SharedJournal;
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::singleton::Pending;
use std::collections::{BTreeMap, BTreeSet};

/// How soon the sweep looks again at orphans that were too young to judge.
const RESWEEP: std::time::Duration = std::time::Duration::from_secs(10);

/// The start-up sweep's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sweep {
    /// The stores have not all listed yet.
    Waiting,
    Due,
    Done,
}

pub struct JanitorActor {
    shared: Shared,
    control: Loop,
    /// Gone CSVs whose objects are not deleted yet (a newer message for the same key replaces the older).
    pending: BTreeMap<ObjectKey, CsvGone>,
    /// Gone OperatorGroups whose ClusterRoles are not deleted yet.
    pending_groups: BTreeSet<ObjectKey>,
    sweep: Sweep,
}

impl JanitorActor {
    pub fn new(shared: Shared) -> Self {
        Self {
            control: Loop::new(
                "Janitor",
                ObjectKey::cluster("olm-operator"),
                crate::error::policy(),
            )
            .with_chaos(shared.process.chaos.clone()),
            shared,
            pending: BTreeMap::new(),
            pending_groups: BTreeSet::new(),
            sweep: Sweep::Waiting,
        }
    }

    /// Record runs in this journal (tests; the debug endpoint reads the kinds' journals).
    pub fn with_journal(mut self, journal: SharedJournal) -> Self {
        self.control.attach(journal);
        self
    }
}

/// Run the janitor in its prepared mailbox (`shared.registries.janitor`). A janitor that died (a panic, a stop) is started again
/// by the next message ([`olm_runtime::singleton::Singleton`]); the jobs the dead one held are lost with it, so the new one sweeps (the
/// sweep finds what any lost job would have deleted) once the stores it reads are synced: at once when they
/// were already, else on `StoresSynced` as at start-up.
pub fn start(shared: &Shared, pending: Pending<JanitorActor>) {
    let again = shared.clone();
    shared.registries.janitor.run(
        pending,
        JanitorActor::new(shared.clone()),
        move |_restart| {
            let janitor = JanitorActor::new(again.clone()).start();
            if again.stores.csv.ready.is_open() {
                let shared = again.clone();
                let janitor = janitor.clone();
                actix::spawn(async move {
                    if shared.stores.namespaces.wait_until_ready().await.is_ok() {
                        janitor.do_send(JanitorMsg::StoresSynced);
                    }
                });
            }
            janitor.recipient()
        },
    );
}

impl Actor for JanitorActor {
    type Context = Context<Self>;
}

impl Handler<JanitorMsg> for JanitorActor {
    type Result = ();

    fn handle(&mut self, msg: JanitorMsg, ctx: &mut Self::Context) {
        let cause = match msg {
            JanitorMsg::CsvGone(gone) => {
                self.pending.insert(gone.key.clone(), gone);
                "csv gone"
            }
            JanitorMsg::GroupGone(key) => {
                self.pending_groups.insert(key);
                "group gone"
            }
            JanitorMsg::StoresSynced => {
                if self.sweep == Sweep::Waiting {
                    self.sweep = Sweep::Due;
                }
                "stores synced"
            }
            JanitorMsg::NamespaceGone(namespace) => {
                tracing::debug!(%namespace, "namespace deleted: sweeping again");
                if self.sweep == Sweep::Done {
                    self.sweep = Sweep::Due;
                }
                "namespace gone"
            }
        };
        reconcile::trigger(self, ctx, Cause::Message(cause));
    }
}

/// One gone CSV to clean in this run.
struct Job {
    gone: CsvGone,
    reset_conversions: bool,
}

impl JanitorActor {
    /// Decide every pending job from the stores as they are now; skipped ones are dropped.
    fn jobs(&mut self) -> Vec<Job> {
        let csvs = &self.shared.stores.csvs;
        let mut jobs = Vec::new();
        let mut skipped = Vec::new();
        for (key, gone) in &self.pending {
            let stored = csvs.get(&ObjectRef::new(&key.name).within(key.namespace_or_empty()));
            let replaced = csvs.state().iter().any(|c| {
                c.metadata.namespace.as_deref() == key.namespace.as_deref()
                    && c.spec.replaces.as_deref() == Some(key.name.as_str())
            });
            let verdict = decide::verdict(
                gone.uid.as_deref(),
                stored.as_ref().map(|c| c.metadata.uid.as_deref()),
                replaced,
                gone.csv.is_some(),
                gone.csv.as_ref().is_some_and(|c| c.is_copied()),
            );
            match verdict {
                Verdict::Clean { reset_conversions } => jobs.push(Job {
                    gone: gone.clone(),
                    reset_conversions,
                }),
                Verdict::Skip(why) => {
                    tracing::debug!(csv = %key, ?why, "nothing of the gone CSV to delete");
                    skipped.push(key.clone());
                }
            }
        }
        for key in skipped {
            self.pending.remove(&key);
        }
        jobs
    }

    /// The gone groups to clean in this run: a group the store holds under its key again (made again with the
    /// same name) owns the labelled roles now, and is dropped.
    fn group_jobs(&mut self) -> Vec<ObjectKey> {
        let groups = &self.shared.stores.operator_groups;
        self.pending_groups.retain(|key| {
            let back = groups
                .get(&ObjectRef::new(&key.name).within(key.namespace_or_empty()))
                .is_some();
            if back {
                tracing::debug!(og = %key, "the gone group is back: its roles are its own");
            }
            !back
        });
        self.pending_groups.iter().cloned().collect()
    }

    /// What the sweep reads of the stores, copied out for the run.
    fn sweep_input(&self) -> SweepInput {
        let stores = &self.shared.stores;
        SweepInput {
            // A terminating namespace counts as gone: everything in it is being deleted, and an APIService
            // pointing at its deleted Service would keep it terminating for good (the namespace controller
            // cannot finish while discovery fails).
            namespaces: stores
                .namespaces
                .state()
                .iter()
                .filter(|n| n.metadata.deletion_timestamp.is_none())
                .filter_map(|n| n.metadata.name.clone())
                .collect(),
            csvs: stores
                .csvs
                .state()
                .iter()
                .filter_map(|c| ObjectKey::of(c.as_ref()))
                .collect(),
            groups: stores
                .operator_groups
                .state()
                .iter()
                .filter_map(|g| ObjectKey::of(g.as_ref()))
                .collect(),
            scope: stores.scope.clone(),
        }
    }
}

struct SweepInput {
    namespaces: BTreeSet<String>,
    csvs: BTreeSet<ObjectKey>,
    groups: BTreeSet<ObjectKey>,
    scope: olm_runtime::scope::Scope,
}

impl SweepInput {
    async fn run(self, client: &kube::Client) -> Result<(usize, usize), crate::error::Error> {
        let namespace_exists = |ns: &str| self.namespaces.contains(ns);
        let watched = |ns: &str| self.scope.contains(Some(ns));
        let csv_exists = |k: &ObjectKey| self.csvs.contains(k);
        let group_exists = |k: &ObjectKey| self.groups.contains(k);
        // Objects younger than this may belong to a namespace our store has not seen yet.
        let view = SweepView {
            settled: k8s_openapi::jiff::Timestamp::now()
                - k8s_openapi::jiff::SignedDuration::from_mins(2),
            settled_namespace: k8s_openapi::jiff::Timestamp::now()
                - k8s_openapi::jiff::SignedDuration::from_secs(30),
            namespace_exists: &namespace_exists,
            watched: &watched,
            csv_exists: &csv_exists,
            group_exists: &group_exists,
        };
        apply::sweep(client, &view).await
    }
}

impl Reconciler for JanitorActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let jobs = self.jobs();
        let group_jobs = self.group_jobs();
        let sweep = match self.sweep {
            Sweep::Due => Some(self.sweep_input()),
            Sweep::Waiting | Sweep::Done => None,
        };
        if jobs.is_empty() && group_jobs.is_empty() && sweep.is_none() {
            return reconcile::now(Outcome::Done(Next::Idle));
        }
        let client = self.shared.client.clone();
        let fut = async move {
            let mut results = Vec::with_capacity(jobs.len());
            for job in jobs {
                let result = apply::clean(
                    &client,
                    &job.gone.key,
                    job.gone.csv.as_deref(),
                    job.reset_conversions,
                )
                .await;
                results.push((job.gone.key, result));
            }
            let mut group_results = Vec::with_capacity(group_jobs.len());
            for key in group_jobs {
                let result = apply::clean_group(&client, &key).await;
                group_results.push((key, result));
            }
            let swept = match sweep {
                Some(input) => Some(input.run(&client).await),
                None => None,
            };
            (results, group_results, swept)
        };
        Box::pin(
            fut.into_actor(self)
                .map(|(results, group_results, swept), act: &mut Self, _ctx| {
                    let mut first = None;
                    let mut again = false;
                    for (key, result) in results {
                        match result {
                            Ok(()) => {
                                act.pending.remove(&key);
                            }
                            Err(e) => {
                                tracing::warn!(csv = %key, error = %e.chain(), "cannot delete what a deleted CSV left in the cluster; retrying");
                                first.get_or_insert(e);
                            }
                        }
                    }
                    for (key, result) in group_results {
                        match result {
                            Ok(()) => {
                                act.pending_groups.remove(&key);
                            }
                            Err(e) => {
                                tracing::warn!(og = %key, error = %e.chain(), "cannot delete a deleted OperatorGroup's cluster roles; retrying");
                                first.get_or_insert(e);
                            }
                        }
                    }
                    match swept {
                        Some(Ok((deleted, not_yet))) => {
                            // Orphans too young to judge: sweep again later (chaos defect 13).
                            again = not_yet > 0;
                            if !again {
                                act.sweep = Sweep::Done;
                            }
                            if deleted > 0 {
                                tracing::info!(
                                    deleted,
                                    "deleted cluster objects left by CSVs deleted while no operator ran"
                                );
                            }
                        }
                        Some(Err(e)) => {
                            tracing::warn!(error = %e.chain(), "the sweep of orphaned cluster RBAC failed; retrying");
                            first.get_or_insert(e);
                        }
                        None => {}
                    }
                    match first {
                        Some(e) => Outcome::failed(crate::error::class(e.kind()), &e),
                        None if again => Outcome::Done(Next::After(RESWEEP)),
                        None => Outcome::Done(Next::Idle),
                    }
                }),
        )
    }
}

#[cfg(test)]
mod tests;
