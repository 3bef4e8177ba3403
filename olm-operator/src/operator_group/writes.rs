//! The writes an OperatorGroup plan asks for and its effects carry out (`plan` → `effects`): copies of member CSVs
//! and a member's RBAC in a target namespace. Types only, so the plan and the effects both read them without
//! importing each other.

use crate::copied_csv;
use k8s_openapi::api::rbac::v1::ClusterRole;
use messages::crd::csv::ClusterServiceVersion;
use messages::key::ObjectKey;

/// One write of the copy fan-out. Copies are created and replaced, not applied (OLM's `syncCopyCSV`): the write
/// is decided on the copy read (its spec and status hashes), a live `olm.targetNamespaces` must go whoever set
/// it while other annotations and labels stay, the status takes a second write to the subresource anyway, and a
/// 409 or 404 means a newer event rewrites the copy.
#[derive(Debug, Clone)]
pub enum CopyWrite {
    /// Create the copy, then set its status.
    Create(Box<ClusterServiceVersion>),
    /// Update the copy (object and/or status) to the wanted one.
    Update {
        wanted: Box<ClusterServiceVersion>,
        existing: Box<ClusterServiceVersion>,
        drift: copied_csv::Drift,
    },
    Delete(ObjectKey),
}

/// One CSV's RBAC for one target namespace (or lifted), keyed by `done` once applied.
#[derive(Debug, Default)]
pub struct TenantRbac {
    pub done: String,
    pub roles: Vec<k8s_openapi::api::rbac::v1::Role>,
    pub bindings: Vec<k8s_openapi::api::rbac::v1::RoleBinding>,
    pub cluster_roles: Vec<ClusterRole>,
    pub cluster_bindings: Vec<k8s_openapi::api::rbac::v1::ClusterRoleBinding>,
    /// Remove the RBAC lifted for this CSV (name, namespace): the group no longer targets all namespaces.
    pub unlift: Option<(String, String)>,
}
