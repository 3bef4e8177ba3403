//! Reading a catalog image, shared by both binaries that do it: catalog-operator serves image catalogs
//! in-process (`catalog-operator/src/catalog_images.rs`) and package-server lists their packages
//! (`package-server/src/image_catalog.rs`: read from catalog-operator, or, without `--image-catalogs-address`,
//! pulled itself). The pull is crate `oci`'s; this crate turns what was pulled into the catalog served, and the
//! pull Secrets into the credentials to pull it.
//!
//! - [`files`]: a pulled image's file-based catalog (the configs label, or `/configs`) indexed into a
//!   [`registry::store::Store`], the store `registry serve` uses;
//! - [`indexer`] and [`parts`]: the same, on disk and in a short-lived child process (catalog-operator): the
//!   layers unpacked into a cache folder, the FBC indexed one folder at a time, the bodies left in a file;
//! - [`sqlite`]: an older index image's sqlite database read as the same FBC documents;
//! - [`pull_secrets`]: a CatalogSource's `spec.secrets` and the global pull secret as one [`oci::Auth`] keyring
//!   (each binary says how it reads a named Secret: catalog-operator grants itself access first);
//! - [`secret_ref`]: the `--global-pull-secret NAMESPACE/NAME` flag both binaries take.
//!
//! ```text
//! oci pull ─▶ oci::Image ─▶ files::index ─▶ FBC under the configs folder ─┬─▶ catalog::Catalog ─▶ Store
//!                                        └─ or /database/index.db ─▶ sqlite::documents ─┘
//! Secrets (spec.secrets, --global-pull-secret) ─▶ pull_secrets::credentials ─▶ oci::Auth (keyring by host)
//! ```
//!
//! No actor, runtime or cluster state: the callers own caching, retries and when to read.

pub mod files;
pub mod indexer;
pub mod parts;
pub mod pull_secrets;
pub mod secret_ref;
pub mod sqlite;
