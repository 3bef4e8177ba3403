//! olm-rs package-server: the `packages.operators.coreos.com/v1` PackageManifest API, served as an aggregated
//! API server (what OLM v0's packageserver does), so `kubectl get packagemanifests` lists what the catalogs
//! offer.
//!
//! ```text
//! CatalogSource watch ─▶ CatalogActor (one per catalog) ─gRPC─▶ registry ─▶ manifest::build ─▶ PackageStore
//!                                                                                              │ list/get/watch
//! kubectl ─▶ kube-apiserver (aggregator, front-proxy cert + X-Remote-*) ─TLS─▶ server ─auth─SAR─┘
//! ```

pub mod accept;
pub mod aggregated_discovery;
pub mod apiservice;
pub mod auth;
pub mod authorize;
pub mod catalogs;
pub mod cli;
pub mod conditional;
pub mod csv_desc;
pub mod der;
pub mod discovery;
pub mod load;
pub mod manifest;
pub mod openapi_paths;
pub mod openapi_service;
pub mod openapi_v2;
pub mod openapi_v3;
pub mod routes;
pub mod run;
pub mod schema;
pub mod select;
pub mod server;
pub mod store;
pub mod table;
pub mod tls;
pub mod types;
