//! A registry server wire-compatible with operator-registry's `opm serve` (`api.Registry`,
//! health, reflection), and the client the catalog-operator uses.
//!
//! ```text
//! catalog::Catalog ──Store::build──▶ Store (compact index) ──query::*──▶ service (tonic) ──▶ server::serve
//!                                                                      client::RegistryClient ◀──┘
//! ```

pub mod api {
    //! Code generated from `proto/registry.proto` (package `api`).
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("api");
    /// Encoded descriptors of `registry.proto` (with imports), for server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("registry_descriptor");
}

pub mod bodies;
pub mod cli;
pub mod client;
pub mod commands;
pub mod query;
pub mod routed;
pub mod server;
pub mod service;
pub mod store;
pub mod synthetic;
