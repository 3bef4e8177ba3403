//! The README's main job as a newcomer runs it: `hack/quickstart.sh` on a control plane of its own (ports moved
//! with `OLM_RS_QUICKSTART_*_PORT`, so a quick start the user left running is not touched), with this build's
//! binaries (`OLM_RS_BIN_DIR`). It must install the channel head of the sample catalog and end by listing the
//! catalog's packages through package-server (`kubectl get packagemanifests`), then `hack/quickstart.sh down` stops
//! it all.

use olm_tests::bin_path;
use std::path::PathBuf;
use std::process::{Command, Output};

const PORTS: &[(&str, &str)] = &[
    ("OLM_RS_QUICKSTART_ETCD_PORT", "24690"),
    ("OLM_RS_QUICKSTART_ETCD_PEER_PORT", "24700"),
    ("OLM_RS_QUICKSTART_API_PORT", "27343"),
    ("OLM_RS_QUICKSTART_KCM_PORT", "26857"),
    ("OLM_RS_QUICKSTART_REGISTRY_PORT", "25900"),
    ("OLM_RS_QUICKSTART_OLM_PORT", "18180"),
    ("OLM_RS_QUICKSTART_CATALOG_PORT", "18181"),
    ("OLM_RS_QUICKSTART_PACKAGES_PORT", "18543"),
    ("OLM_RS_QUICKSTART_PACKAGES_HTTP_PORT", "18182"),
];

fn quickstart(arg: &str) -> anyhow::Result<Output> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin_dir = bin_path("olm-operator")?
        .parent()
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("no binary folder"))?;
    let home = std::env::var("HOME")?;
    Ok(Command::new("bash")
        .arg(repo.join("hack/quickstart.sh"))
        .arg(arg)
        .env("OLM_RS_BIN_DIR", bin_dir)
        .env(
            "OLM_RS_QUICKSTART_DIR",
            format!("{home}/.cache/olm-rs/quickstart-test"),
        )
        .envs(PORTS.iter().copied())
        .output()?)
}

/// Stops the test's quick start however the test ends.
struct Down;

impl Drop for Down {
    fn drop(&mut self) {
        match quickstart("down") {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "hack/quickstart.sh down: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("hack/quickstart.sh down: {e}"),
        }
    }
}

#[test]
fn the_quick_start_installs_the_sample_operator_and_lists_its_packages() -> anyhow::Result<()> {
    let _down = Down;
    let out = quickstart("up")?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    anyhow::ensure!(
        out.status.success(),
        "hack/quickstart.sh failed ({}):\n{said}",
        out.status
    );
    anyhow::ensure!(
        said.contains("installed the channel head (etcdoperator.v0.9.4)"),
        "no install reported:\n{said}"
    );
    // `kubectl get catsrc,sub,installplan,csv,deploy` then `kubectl get packagemanifests`, as the script prints them.
    let lines: Vec<&str> = said.lines().collect();
    let succeeded = lines.iter().any(|l| {
        l.starts_with("clusterserviceversion.operators.coreos.com/etcdoperator.v0.9.4")
            && l.contains("Succeeded")
    });
    anyhow::ensure!(succeeded, "the CSV is not listed as Succeeded:\n{said}");
    let header = lines
        .iter()
        .position(|l| l.starts_with("NAME") && l.contains("CATALOG") && l.contains("AGE"))
        .ok_or_else(|| anyhow::anyhow!("no `kubectl get packagemanifests` table:\n{said}"))?;
    let etcd = lines.get(header + 1).copied().unwrap_or_default();
    anyhow::ensure!(
        etcd.starts_with("etcd ") && etcd.contains("olm-rs sample catalog"),
        "the package list does not show etcd from the sample catalog: {etcd:?}\n{said}"
    );
    Ok(())
}
