//! The `operators.coreos.com` kinds OLM v0 serves, wire-compatible with OLM's Go API, and the
//! generation of their CustomResourceDefinitions (`deploy/crds/`).

pub mod annotations;
pub mod catalog_source;
pub mod cel;
mod conform;
pub mod csv;
mod generate;
pub mod install_plan;
mod kube_markers;
pub mod olm_config;
pub mod operator;
pub mod operator_condition;
pub mod operator_group;
pub mod schema;
mod schema_path;
pub mod subscription;
mod wire_enum;

pub use generate::{CrdError, all_crds, crd_file_name, render_crds, write_crds};

/// The API group of every kind here.
pub const GROUP: &str = "operators.coreos.com";
