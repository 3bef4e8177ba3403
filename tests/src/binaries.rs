//! Where the workspace's binaries are: `$OLM_RS_BIN_DIR`, else the cargo target folder this test runs from
//! (`target/debug/deps/<test>` → `target/debug/`). The test command builds them first (`cargo build --workspace`).

use anyhow::{Context, bail};
use std::path::PathBuf;

pub fn bin_path(name: &str) -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("OLM_RS_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().context("current_exe")?;
            let deps = exe.parent().context("test binary has no parent folder")?;
            let dir = if deps.ends_with("deps") {
                deps.parent().context("deps has no parent")?
            } else {
                deps
            };
            dir.to_path_buf()
        }
    };
    let path = dir.join(name);
    if !path.is_file() {
        bail!(
            "{} not found: build the binaries first (`cargo build --workspace`) or set OLM_RS_BIN_DIR",
            path.display()
        );
    }
    Ok(path)
}
