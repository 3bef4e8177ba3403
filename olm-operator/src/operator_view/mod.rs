//! The `operators.coreos.com/v1` Operator view (OLM's adoption and operator controllers, spec §1.7): one
//! cluster-scoped Operator `<package>.<namespace>` per subscribed package, whose `status.components` lists every
//! object labelled `operators.coreos.com/<name>`; that label is put on the Subscription, its installed CSV, its
//! current InstallPlan, and what the CSV owns. Components are never owned by the Operator, so deleting it
//! deletes nothing (and it is made again while labelled objects remain, as in OLM).
//!
//! One actor for the whole view, on the reconcile contract: messages name what changed (a Subscription to
//! adopt from, an Operator whose components may differ) and wait in a [`queue`]; a run takes them all (up to
//! [`queue::MAX_BATCH`] of each) and handles them together. Decisions are pure ([`adopt`], [`index`],
//! [`plans`], [`components`]); `sync` does the I/O: one pass over each store olm-operator keeps for CSVs anyway
//! for the whole batch, RoleBindings, ClusterRoleBindings and InstallPlans (not watched here) listed at most
//! once per kind and run, writes in parallel, and an Operator's status written only when it differs from the
//! stored one (a catalog change touching every Subscription rewrites only the Operators it changed).
//!
//! Differences from OLM, chosen: Secrets and ConfigMaps are not components (olm-operator may not list
//! Secrets: least privilege, see deploy/rbac), and a component's conditions are refreshed when its CSV,
//! Subscription, Deployment or Operator changes, not on every event of the fifteen kinds OLM watches.

pub mod adopt;
pub mod components;
pub mod index;
pub mod labels;
pub mod memo;
pub mod plans;
pub mod queue;
pub mod sync;

use crate::shared::Shared;
use actix::prelude::*;
use kube::Api;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use messages::crd::operator::Operator;
use messages::crd::subscription::Subscription;
use messages::key::ObjectKey;
use olm_runtime::outcome::{Next, Outcome, Policy};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::singleton::Pending;

use crate::routes::ViewChanged;

/// The one timer of the view: changes arriving within it are gathered into one run. An install touches the view
/// a dozen times in a second (each CSV phase, the Subscription's states, the Deployment); one run per burst keeps
/// the view's cost per install to a few requests, and an Operator's status lags by at most this much.
pub const DEBOUNCE: std::time::Duration = std::time::Duration::from_secs(1);

pub struct OperatorViewActor {
    shared: Shared,
    debounce: Option<SpawnHandle>,
    operators: Store<Operator>,
    control: Loop,
    queue: queue::Queue,
    memo: memo::Memo,
}

impl Actor for OperatorViewActor {
    type Context = Context<Self>;
}

impl Handler<ViewChanged> for OperatorViewActor {
    type Result = ();

    fn handle(&mut self, msg: ViewChanged, ctx: &mut Self::Context) {
        match msg {
            ViewChanged::Subscription(key) => {
                if !self.scope().contains(key.namespace.as_deref()) {
                    return;
                }
                // Seen with no plan as the change arrives (a run, a debounce later, may see its first plan
                // already): that plan needs no listing (`memo::PlanChange::First`).
                if self.without_plan(&key) {
                    self.memo.no_plan(&key);
                }
                self.queue.add_subscription(key);
            }
            ViewChanged::Operators(names) => {
                let scope = self.scope();
                let names: Vec<String> = names
                    .into_iter()
                    .filter(|n| adopt::in_scope(&scope, n))
                    .collect();
                if names.is_empty() {
                    return;
                }
                self.queue.add_names(names);
            }
        }
        if self.debounce.is_none() {
            self.debounce = Some(ctx.run_later(DEBOUNCE, |act, ctx| {
                act.debounce = None;
                reconcile::trigger(act, ctx, Cause::Message("view-changed"));
            }));
        }
    }
}

impl OperatorViewActor {
    fn scope(&self) -> olm_runtime::scope::Scope {
        self.shared.stores.scope.clone()
    }

    /// Whether the store holds the Subscription with no plan referenced.
    fn without_plan(&self, key: &ObjectKey) -> bool {
        let at =
            kube::runtime::reflector::ObjectRef::new(&key.name).within(key.namespace_or_empty());
        self.shared
            .stores
            .csv
            .subscriptions
            .get(&at)
            .is_some_and(|sub| {
                sub.status
                    .as_ref()
                    .and_then(|st| st.install_plan_ref.as_ref())
                    .is_none()
            })
    }
}

impl Reconciler for OperatorViewActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    /// One batch of the pending work (the whole of it up to [`queue::MAX_BATCH`] of each kind); a larger
    /// backlog runs again at once.
    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let batch = self.queue.take(queue::MAX_BATCH);
        let mut memo = std::mem::take(&mut self.memo);
        let (shared, operators) = (self.shared.clone(), self.operators.clone());
        let work = async move {
            let result = sync::run(&shared, &operators, batch, &mut memo).await;
            (result, memo)
        };
        Box::pin(
            actix::fut::wrap_future(work).map(|(result, memo), act: &mut Self, _ctx| {
                let outcome = match result {
                    Ok(()) => {
                        act.queue.done(queue::Batch::default());
                        act.memo = memo;
                        Outcome::Done(Next::Idle)
                    }
                    Err(failed) => {
                        // The failed work goes back to pending for the retry the loop schedules; the memo may
                        // say done for what failed, so it starts afresh (act.memo stays empty).
                        act.queue.done(failed.retry);
                        let class =
                            crate::error::class(olm_runtime::error::classify(&failed.error));
                        return Outcome::failed(class, &failed.error);
                    }
                };
                if act.queue.has_pending() {
                    Outcome::Done(Next::After(std::time::Duration::ZERO))
                } else {
                    outcome
                }
            }),
        )
    }
}

/// Run the view in its prepared mailbox (`shared.registries.operator_view`): a store of Operators (a changed or
/// deleted Operator is looked at again), made once and shared by every start, and the actor. A view that died
/// (a panic, a stop) is started again by the next message or the singleton's check; its queue and memo are gone
/// with it, so the new one queues every Subscription and every Operator in its stores: a full pass, as at
/// start-up.
pub fn start(shared: &Shared, pending: Pending<OperatorViewActor>) {
    let writer = Writer::default();
    let operators = writer.as_reader();
    let s = shared.clone();
    olm_runtime::watch::spawn_store(
        writer,
        Api::<Operator>::all(shared.client.clone()),
        watcher::Config::default(),
        move |o: &Operator| {
            if let Some(name) = o.metadata.name.clone() {
                s.registries
                    .operator_view
                    .do_send(ViewChanged::Operators(vec![name]));
            }
        },
    );
    let actor = {
        let s = shared.clone();
        let operators = operators.clone();
        move || OperatorViewActor {
            shared: s.clone(),
            debounce: None,
            operators: operators.clone(),
            control: Loop::new(
                "operator-view",
                ObjectKey::cluster("operator-view"),
                Policy::default(),
            )
            .with_chaos(s.process.chaos.clone()),
            queue: queue::Queue::default(),
            memo: memo::Memo::default(),
        }
    };
    let first = actor();
    let s = shared.clone();
    shared
        .registries
        .operator_view
        .run(pending, first, move |_restart| {
            let view = actor().start();
            for msg in everything(&s.stores.csv.subscriptions, &operators) {
                view.do_send(msg);
            }
            view.recipient()
        });
}

/// What a view started again must look at: every Subscription and every Operator its stores hold.
fn everything(
    subscriptions: &Store<Subscription>,
    operators: &Store<Operator>,
) -> Vec<ViewChanged> {
    let mut all: Vec<ViewChanged> = subscriptions
        .state()
        .iter()
        .filter_map(|sub| ObjectKey::of(sub.as_ref()))
        .map(ViewChanged::Subscription)
        .collect();
    let names: Vec<String> = operators
        .state()
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    if !names.is_empty() {
        all.push(ViewChanged::Operators(names));
    }
    all
}

/// Tell the view that an object with these labels changed (a no-op without `operators.coreos.com/` labels).
pub fn touch_labelled(
    shared: &Shared,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) {
    let names = adopt::operators_named(labels);
    if names.is_empty() {
        return;
    }
    shared
        .registries
        .operator_view
        .do_send(ViewChanged::Operators(names));
}

/// Tell the view a Subscription changed.
pub fn subscription_changed(shared: &Shared, key: ObjectKey) {
    shared
        .registries
        .operator_view
        .do_send(ViewChanged::Subscription(key));
}

#[cfg(test)]
mod restart_tests {
    use super::*;
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    fn subscription(namespace: &str, name: &str) -> Subscription {
        let mut sub = Subscription::new(name, Default::default());
        sub.metadata.namespace = Some(namespace.to_owned());
        sub
    }

    fn operator(name: &str) -> Operator {
        Operator::new(name, Default::default())
    }

    #[test]
    fn a_view_started_again_looks_at_every_subscription_and_operator() {
        let (subs, mut sub_writer) = reflector::store::<Subscription>();
        for sub in [subscription("a", "one"), subscription("b", "two")] {
            sub_writer.apply_watcher_event(&Event::Apply(sub));
        }
        let (ops, mut op_writer) = reflector::store::<Operator>();
        op_writer.apply_watcher_event(&Event::Apply(operator("one.a")));
        let mut all = everything(&subs, &ops);
        all.sort_by_key(|m| format!("{m:?}"));
        assert_eq!(
            all,
            vec![
                ViewChanged::Operators(vec!["one.a".to_owned()]),
                ViewChanged::Subscription(ObjectKey::new("a", "one")),
                ViewChanged::Subscription(ObjectKey::new("b", "two")),
            ]
        );
    }

    #[test]
    fn empty_stores_give_nothing_to_look_at() {
        let (subs, _subs) = reflector::store::<Subscription>();
        let (ops, _ops) = reflector::store::<Operator>();
        assert!(everything(&subs, &ops).is_empty());
    }
}
