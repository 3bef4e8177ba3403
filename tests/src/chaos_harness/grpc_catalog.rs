//! The gRPC catalog of the chaos workload: the `registry` binary serving the second package (and `dep`) from a
//! file, behind a forwarder that can slow it ([`crate::slow_tcp`]); the CatalogSource names the forwarder, so
//! the registry can be killed and started again on another port.

use super::workload::{SIDE_VERSIONS, Scope, gizmo};
use crate::catalog_fixture::*;
use crate::slow_tcp::SlowTcp;

/// The gRPC catalog of the workload: the `registry` binary serving the second package from a file, behind a
/// forwarder that can slow it (`crate::slow_tcp`); the CatalogSource names the forwarder, so the registry
/// can be killed and started again on another port.
pub struct GrpcCatalog {
    file: std::path::PathBuf,
    registry: Option<RegistryProcess>,
    pub forwarder: SlowTcp,
}

impl GrpcCatalog {
    pub async fn start(ns: &str, scope: Scope) -> anyhow::Result<Self> {
        let op = |v: &str| {
            Op::new("side", v)
                .min_ready_seconds(1)
                .versioned_deployment()
        };
        let mut ops = vec![
            op(SIDE_VERSIONS[0]),
            op(SIDE_VERSIONS[1])
                .replaces(&format!("side.v{}", SIDE_VERSIONS[0]))
                .skip_range(&format!("<{}", SIDE_VERSIONS[1])),
        ];
        if scope == Scope::Full {
            ops.push(
                Op::new("dep", "1.0.0")
                    .min_ready_seconds(1)
                    .owns(&gizmo(ns)),
            );
        }
        let catalog = Catalog::with(ops);
        let dir = std::env::temp_dir().join(format!("olm-rs-chaos-{ns}"));
        let file = catalog.write_file(&dir, "side")?;
        let registry = RegistryProcess::start_on_free_port(&[file.as_path()])?;
        let forwarder = SlowTcp::start(([127, 0, 0, 1], registry.port).into()).await?;
        Ok(Self {
            file,
            registry: Some(registry),
            forwarder,
        })
    }

    pub fn address(&self) -> String {
        self.forwarder.addr.to_string()
    }

    /// The registry goes away (SIGKILL on drop): new connections fail, open ones close.
    pub fn down(&mut self) {
        self.registry = None;
    }

    /// A new registry process (on a new port) behind the same address.
    pub fn up(&mut self) -> anyhow::Result<()> {
        if self.registry.is_none() {
            let registry = RegistryProcess::start_on_free_port(&[self.file.as_path()])?;
            self.forwarder
                .set_upstream(([127, 0, 0, 1], registry.port).into());
            self.registry = Some(registry);
        }
        Ok(())
    }
}
