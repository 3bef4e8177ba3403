//! The typed messages between olm-operator's actors that the `messages` crate does not define, in a leaf
//! module (it imports no actor module), so that `shared.rs` can hold their `Recipient`s without an import
//! circle between the actors and `shared.rs`.

use actix::Message;
use messages::crd::csv::ClusterServiceVersion;
use messages::key::ObjectKey;
use std::sync::Arc;

/// What the cluster janitor (`janitor/`) is asked to do: it is the one writer of the cluster-scoped objects a
/// CSV leaves behind (ClusterRoles, ClusterRoleBindings, webhook configurations, APIServices, the
/// `kube-system` auth-reader RoleBindings, the conversion of its CRDs).
#[derive(Clone, Debug)]
pub enum JanitorMsg {
    /// A CSV actor stopped because its CSV is gone: delete what it served and its cluster RBAC.
    CsvGone(CsvGone),
    /// Every store CSV decisions read listed once: sweep the cluster RBAC of CSVs deleted while no operator ran.
    StoresSynced,
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
