//! OCI images for olm-rs: bundle images and catalog images pulled straight from a registry over the OCI
//! distribution API (`oci-client`), digest-checked, unpacked in memory, and built and pushed without a
//! container engine.
//!
//! ```text
//! Registry::pull(ref) ─▶ Image { digest, labels, layers } ─▶ layers::unpack(keep) ─▶ Files (path → bytes)
//!                                                              ├─▶ bundle::from_files → UnpackedBundle
//!                                                              └─▶ catalog image: /configs (FBC)
//! build::{layer, config} ─▶ Registry::push ─▶ digest           cache::DigestCache: bounded by bytes
//! ```

pub mod build;
pub mod bundle;
pub mod cache;
pub mod capped;
pub mod client;
pub mod digest;
pub mod error;
pub mod index;
pub mod layers;
pub mod layout;
pub mod limits;
pub mod manifest;
pub(crate) mod manifest_read;
pub mod mirrors;
pub mod options;
pub mod platform;
pub mod publish;
pub mod unpack_dir;

pub use bundle::UnpackedBundle;
pub use client::{Auth, Image, Registry};
pub use error::PullError;
pub use layers::Files;
pub use limits::Limits;

/// Label naming the folder of a catalog image's file-based catalog.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";
/// Where a catalog image keeps its file-based catalog when the label is absent.
pub const DEFAULT_CONFIGS_DIR: &str = "configs";
/// The sqlite index of an older catalog image.
pub const SQLITE_INDEX: &str = "database/index.db";
