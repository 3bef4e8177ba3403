//! How olm-operator's actors address each other: the typed messages the `messages` crate does not define and
//! [`Route`], a registry's `Forward`/`Broadcast` recipients for one message type. A leaf of the module graph (it
//! imports no actor module), so `shared.rs` holds recipients, never actor types, and no import circle runs
//! through it; `run.rs` wires the registries' addresses in at start-up.

use actix::{Message, Recipient};
use messages::crd::csv::ClusterServiceVersion;
use messages::key::ObjectKey;
use olm_runtime::registry::{Broadcast, Forward};
use std::sync::Arc;

/// Where a registry routes messages of type `M`: to one actor ([`Forward`]) or to those a filter picks
/// ([`Broadcast`]). `do_send` takes either.
pub struct Route<M: Message + Send + 'static>
where
    M::Result: Send,
{
    forward: Recipient<Forward<M>>,
    broadcast: Recipient<Broadcast<M>>,
}

impl<M: Message + Send + 'static> Route<M>
where
    M::Result: Send,
{
    pub fn new(forward: Recipient<Forward<M>>, broadcast: Recipient<Broadcast<M>>) -> Self {
        Self { forward, broadcast }
    }

    /// Send a [`Forward`] or a [`Broadcast`] to the registry (dropped if it stopped).
    pub fn do_send(&self, msg: impl Routed<M>) {
        msg.route(self);
    }
}

/// A message a [`Route`] carries to its registry.
pub trait Routed<M: Message + Send + 'static>
where
    M::Result: Send,
{
    fn route(self, route: &Route<M>);
}

impl<M: Message + Send + 'static> Routed<M> for Forward<M>
where
    M::Result: Send,
{
    fn route(self, route: &Route<M>) {
        route.forward.do_send(self);
    }
}

impl<M: Message + Send + 'static> Routed<M> for Broadcast<M>
where
    M::Result: Send,
{
    fn route(self, route: &Route<M>) {
        route.broadcast.do_send(self);
    }
}

/// Something changed that may change an Operator's components (`operator_view`).
#[derive(Message, Clone, Debug, PartialEq, Eq)]
#[rtype(result = "()")]
pub enum ViewChanged {
    /// A Subscription changed: adopt from it (its package and namespace name the Operator).
    Subscription(ObjectKey),
    /// An object labelled for these Operators changed, or the Operator itself.
    Operators(Vec<String>),
}

/// What the cluster janitor (`janitor/`) is asked to do: it is the one writer of the cluster-scoped objects a
/// CSV leaves behind (ClusterRoles, ClusterRoleBindings, webhook configurations, APIServices, the
/// `kube-system` auth-reader RoleBindings, the conversion of its CRDs).
#[derive(Clone, Debug)]
pub enum JanitorMsg {
    /// A CSV actor stopped because its CSV is gone: delete what it served and its cluster RBAC.
    CsvGone(CsvGone),
    /// Every store CSV decisions read listed once: sweep the cluster RBAC of CSVs deleted while no operator ran.
    StoresSynced,
    /// An OperatorGroup actor stopped because its group is gone: delete the group's ClusterRoles (labelled
    /// `olm.owner.kind=OperatorGroup` with its name and namespace).
    GroupGone(ObjectKey),
    /// A namespace is being deleted or is gone: sweep again. Its CSVs and groups go with it, but the control
    /// plane can keep listing some of them after the namespace is gone (after an apiserver restart), so no
    /// `CsvGone`/`GroupGone` comes for those; the sweep counts a gone namespace's owners as gone.
    NamespaceGone(String),
}

impl Message for JanitorMsg {
    type Result = ();
}

/// A deleted CSV, as its actor last knew it.
#[derive(Clone, Debug)]
pub struct CsvGone {
    pub key: ObjectKey,
    /// The deleted CSV's uid: a CSV of the same name created since (another uid) owns the labelled objects now.
    pub uid: Option<String>,
    /// The CSV as last observed (its conversion webhooks name the CRDs to reset); `None` if never observed.
    pub csv: Option<Arc<ClusterServiceVersion>>,
}
