//! The OLM v0 resolver as a pure library: from a namespace's installed operators, Subscriptions and
//! visible catalog snapshots, decide which bundles to install or upgrade (and which Subscriptions to
//! create for new dependencies), or explain in plain sentences why a Subscription cannot be resolved.
//!
//! No Kubernetes client, actors, async runtime or I/O: callers build a [`model::Namespace`] and call
//! [`resolve`]. See `README.md` for the algorithm, the explanation format and the isolation choice.
//!
//! ```text
//! Namespace ──▶ problem (variables + indexes) ──▶ candidates (per Subscription)
//!                                   │                        │
//!                                   └──▶ search (backjumping) ◀┘ ──▶ Resolution / Explanation
//! ```

mod candidates;
pub mod cel;
pub mod channel;
pub mod explain;
pub mod from_catalog;
pub mod model;
mod problem;
/// Version ranges (`olm.skipRange`, `versionRange`): the catalog crate's parser, re-exported.
pub use catalog::range;
pub mod requirement;
mod resolve;
mod search;

pub use explain::{BundleRef, Candidate, Explanation, NoCandidates, Rejection};
pub use model::{
    BundleEntry, CatalogKey, CatalogSnapshot, CsvPhase, Gvk, InstalledOperator, Namespace,
    PackageInfo, Property, SubscriptionSpec,
};
pub use range::{RangeError, VersionRange};
pub use resolve::{
    BundleStep, NewSubscription, Options, Outcome, Resolution, SubscriptionOutcome, resolve,
    subscription_name,
};
