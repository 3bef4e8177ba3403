//! TEST ONLY: what both operators' tests share, a dev-dependency of each (never a dependency of a binary).
//!
//! - [`fake_api`]: a fake API server for actor tests without a cluster;
//! - [`import_graph`]: the check that a crate's sibling modules, at every level, import each other without circles.

pub mod fake_api;
pub mod import_graph;
