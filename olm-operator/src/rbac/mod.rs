//! Generated RBAC of OperatorGroups (spec §3.5): the three aggregate ClusterRoles per group and the per-API
//! admin/edit/view (and crdview) ClusterRoles that aggregate into them. Pure rendering here; the
//! OperatorGroup actor applies the objects.

pub mod naming;
pub mod render;
pub mod tenant;
