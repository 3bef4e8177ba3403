//! olm-operator: owns ClusterServiceVersions and OperatorGroups.
//!
//! ```text
//! watch CSVs ─▶ Registry<CsvActor> ─▶ CsvActor (one per CSV) ──typed msgs──▶ OperatorGroupActor
//! watch OGs  ─▶ Registry<OperatorGroupActor> ─▶ OperatorGroupActor (one per OG) ──requeue──▶ CsvActor
//! CsvActor (its CSV gone) ──CsvGone──▶ JanitorActor ──cluster-scoped deletes──▶ API server
//! shared reads: reflector Stores (CSVs, OperatorGroups, Namespaces)
//! ```
//!
//! The modules import each other without circles (`tests/tests/crate_graph.rs` checks every level): `run` wires the
//! registries' addresses into `shared` as recipients of message types (`routes`); `janitor` → `csv` →
//! `operator_group`, `operator_condition`, `operator_view` → `shared` → `routes`, `stores` → `metrics`.

pub mod apply;
pub mod cli;
pub mod component_labels;
pub mod copied_csv;
pub mod csv;
pub mod error;
pub mod events;
pub mod group_announced;
pub mod hash;

pub mod janitor;
pub mod metrics;
pub mod operator_condition;
pub mod operator_group;
pub mod operator_view;
pub mod overrides;
pub mod rbac;
pub mod routes;
pub mod run;
pub mod shared;
pub mod stores;
pub mod strategy;
pub mod transition;

#[cfg(test)]
mod tests;
