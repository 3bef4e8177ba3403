//! Support for cluster tests: the real local control plane (etcd + kube-apiserver + kube-controller-manager on
//! loopback, plus the node simulator), started or attached once per test run; a fresh namespace per test; waits
//! on conditions with deadlines (never sleeps); a dump of the relevant objects when a test fails; the operator
//! binaries started as real subprocesses.
//!
//! ```no_run
//! # async fn t() -> anyhow::Result<()> {
//! let cluster = olm_tests::Cluster::shared()?;
//! olm_tests::with_namespace(&cluster, "demo", |ctx| async move {
//!     // ctx.client, ctx.namespace ...
//!     Ok(())
//! }).await
//! # }
//! ```

pub mod api_faults;
pub mod api_proxy;
pub mod bench_figures;
mod binaries;
pub mod catalog_fixture;
pub mod chaos_harness;
pub mod chaos_plane;
mod cluster;
pub mod converge;
pub mod csv_fixture;
mod dump;
pub mod fault_journal;
mod full_cluster;
mod namespace;
mod observe;
pub mod oci_fixture;
pub mod operator_group_fixture;
mod operators;
mod otlp;
pub mod package_server_fixture;
mod peers;
pub mod rbac;
pub mod release_fixture;
mod shared_catalogs;
pub mod slow_tcp;
mod test_operator;
pub mod test_webhook;
mod wait;
mod webhook_denial;
pub mod widgets;

pub use binaries::bin_path;
pub use chaos_plane::{CHAOS_PLANE_ENV, CHAOS_PLANE2_ENV};
pub use cluster::{ChaosPlane, Cluster};
pub use dump::dump_namespace;
pub use full_cluster::{FullCluster, with_full_namespace};
pub use namespace::{TestContext, with_namespace};
pub use observe::{Observe, ScrapeTarget, browser_dom, browser_screenshot, output_dir};
pub use operators::{FAST_LEASE, OperatorProcess, http_get_as, replica_args};
pub use otlp::{OtlpReceiver, ReceivedSpan};
pub use peers::peer_bin_dir;
pub use shared_catalogs::{community_fbc, shared_catalogs, shared_operators};
pub use test_operator::{
    await_csv_succeeded, await_ready_operator_pod, pod_ready, test_operator_csv,
    write_test_operator_bundle,
};
pub use wait::{DEFAULT_DEADLINE, await_none_listed, await_object, eventually};
pub use webhook_denial::await_webhook_denial;
