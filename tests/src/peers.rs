//! The ecosystem's tools as test peers (opm, ...): built from their Go modules at the versions `hack/versions.env`
//! pins, cached in `~/.cache/olm-rs/NAME-VERSION/bin` (`hack/peers.sh`; the test command builds them beside the
//! Rust build, so a test only finds them).

use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The folder of a peer's commands, built first if it is not cached.
pub fn peer_bin_dir(name: &str) -> anyhow::Result<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../hack/peers.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args(["path", name])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("run {}", script.display()))?;
    if !out.status.success() {
        bail!("hack/peers.sh path {name} failed ({})", out.status);
    }
    let dir = PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .trim(),
    );
    if !dir.is_dir() {
        bail!(
            "hack/peers.sh path {name} printed {}, not a folder",
            dir.display()
        );
    }
    Ok(dir)
}
