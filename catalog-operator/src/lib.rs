//! catalog-operator: owns CatalogSources, Subscriptions and InstallPlans.
//!
//! ```text
//! watch CatalogSources ─▶ Registry<CatalogSourceActor> ─▶ CatalogSourceActor ──content──▶ Catalogs (shared)
//!                                                              │ Resolve(ns)                 ▲ read
//! watch Subscriptions  ─▶ Registry<SubscriptionActor>  ─▶ SubscriptionActor ─Resolve(ns)─▶ NamespaceResolver
//! watch CSVs, OperatorGroups (stores) ──────────────────────────────────────Resolve(ns)─▶   │ resolver::resolve
//!                                                                                          ▼ (spawn_blocking)
//! watch InstallPlans   ─▶ Registry<InstallPlanActor>   ─▶ InstallPlanActor ◀── creates ── InstallPlan + sub status
//!                              executes steps (CRDs, CSV, RBAC, objects) ─▶ olm-operator takes the CSV from there
//! ```
//! A W3C trace context written on each InstallPlan and CSV carries one trace from resolution into olm-operator.

pub mod bundle_content;
pub mod bundle_image;
pub mod bundle_ref;
pub mod catalog_endpoint;
pub mod catalog_health;
pub mod catalog_images;
pub mod catalog_source;
pub mod catalogs;
pub mod cli;
pub mod csv_view;
pub mod deprecation;
pub mod error;
pub mod events;
pub mod group_view;
pub mod handover;
pub mod install_plan;
pub mod kinds;
pub mod metrics;
pub mod namespace;
pub mod properties;
pub mod rbac;
pub mod routes;
pub mod run;
pub mod self_grant;
pub mod shared;
pub mod snapshot;
pub mod status;
pub mod steps;
pub mod subscription;
pub mod unpacker;
pub mod wants;
