//! olm-operator: owns ClusterServiceVersions and OperatorGroups.
//!
//! ```text
//! watch CSVs ─▶ Registry<CsvActor> ─▶ CsvActor (one per CSV) ──typed msgs──▶ OperatorGroupActor
//! watch OGs  ─▶ Registry<OperatorGroupActor> ─▶ OperatorGroupActor (one per OG) ──requeue──▶ CsvActor
//! shared reads: reflector Stores (CSVs, OperatorGroups, Namespaces)
//! ```

pub mod cli;
pub mod copied_csv;
pub mod csv;
pub mod error;
pub mod events;
pub mod janitor;
/// TEST ONLY: catalog-operator's fake API server (one file, shared by path; no dependency between the binaries).
#[cfg(test)]
#[path = "../../catalog-operator/src/fake_api.rs"]
pub mod fake_api;
pub mod metrics;
pub mod operator_condition;
pub mod operator_group;
pub mod operator_view;
pub mod rbac;
pub mod routes;
pub mod run;
pub mod shared;
