//! Operator catalogs for OLM: one model ([`Catalog`]) and loaders for the formats operators
//! are published in, validation with actionable findings, and FBC rendering.
//!
//! ```text
//! Catalog ─┬─ Package ─┬─ Channel ── ChannelEntry {name, replaces, skips, skipRange}
//!          │           └─ Bundle ── Property {type, value}  (olm.package, olm.gvk, ..., olm.bundle.object)
//!          └─ CustomBlob (non-olm schemas, for the experimental registry RPC)
//! ```
//!
//! Loaders: [`fbc`] (file-based catalogs), [`manifests`] (package-manifest folders),
//! [`bundle_dir`] (registry+v1 bundle folders and trees of them), [`configmap`] (ConfigMap
//! catalogs, [`Catalog::from_configmap_data`]). [`load::detect`] picks one for a path.
//! This crate does no async I/O and knows nothing of gRPC.

pub mod bundle_dir;
pub mod configmap;
pub mod csv;
pub mod csv_json;
pub mod diagnostic;
pub mod documents;
pub mod error;
pub mod fbc;
pub mod load;
pub mod manifests;
pub mod model;
pub mod property;
pub mod range;
pub mod render;
pub mod validate;
pub mod yaml;

pub use diagnostic::{Diagnostic, Diagnostics, Problem, Scope};
pub use error::LoadError;
pub use load::Format;
pub use model::{
    Bundle, Catalog, Channel, ChannelEntry, CustomBlob, Icon, Origin, Package, Property,
    RelatedImage,
};
pub use property::PropertyType;
pub use range::{RangeError, VersionRange};
