//! The two OLMs the side-by-side bench compares, as host processes against one control plane: OLM v0's `olm` and
//! `catalog` commands (built from its module at the pinned release by `hack/peers.sh`) and olm-rs's
//! `olm-operator` and `catalog-operator` (from `OLM_RS_BIN_DIR`, release builds for figures). Both watch every
//! namespace; each is stopped when dropped. Also the table the bench prints.

use anyhow::Context;
use olm_tests::{Cluster, OperatorProcess, peer_bin_dir};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Which OLM runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Olm {
    V0,
    Rs,
}

impl Olm {
    /// A short tag for names (namespaces, packages) so one OLM's objects never meet the other's.
    pub fn tag(self) -> &'static str {
        match self {
            Olm::V0 => "v0",
            Olm::Rs => "rs",
        }
    }

    /// The column heading.
    pub fn heading(self) -> String {
        match self {
            Olm::V0 => format!(
                "OLM v0 {}",
                std::env::var("OLM_V0_VERSION").unwrap_or_else(|_| "(pinned)".into())
            ),
            Olm::Rs => "olm-rs".into(),
        }
    }

    /// The audit-log components (`scale_support::component`) of its olm-operator and catalog-operator.
    pub fn components(self) -> [&'static str; 2] {
        match self {
            Olm::V0 => ["olm", "catalog"],
            Olm::Rs => ["olm-operator", "catalog-operator"],
        }
    }
}

/// One OLM v0 command run on the host; killed when dropped.
pub struct HostCommand {
    child: Child,
    log: PathBuf,
}

impl HostCommand {
    fn start(cluster: &Cluster, command: &str, args: &[&str]) -> anyhow::Result<Self> {
        let bin = peer_bin_dir("olm-v0")?.join(command);
        let log = std::env::temp_dir().join(format!("olm-v0-{command}-{}.log", std::process::id()));
        let out = std::fs::File::create(&log)?;
        let child = Command::new(&bin)
            .args(args)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("spawn {}", bin.display()))?;
        Ok(Self { child, log })
    }
}

impl Drop for HostCommand {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running operator of either OLM.
pub enum Process {
    V0(HostCommand),
    Rs(OperatorProcess),
}

impl Process {
    pub fn pid(&self) -> u32 {
        match self {
            Process::V0(c) => c.child.id(),
            Process::Rs(p) => p.pid(),
        }
    }

    /// Whether it is still running (an exited operator makes the figures meaningless).
    pub fn exited(&mut self) -> Option<String> {
        match self {
            Process::V0(c) => match c.child.try_wait() {
                Ok(Some(status)) => Some(format!(
                    "{status}: {}",
                    std::fs::read_to_string(&c.log).unwrap_or_default()
                )),
                _ => None,
            },
            Process::Rs(_) => None,
        }
    }
}

/// Start `olm`'s olm-operator and catalog-operator (in that order), both watching every namespace, with
/// `namespace` as the operator (and global catalog) namespace.
pub async fn start(olm: Olm, cluster: &Cluster, namespace: &str) -> anyhow::Result<[Process; 2]> {
    Ok(match olm {
        Olm::V0 => {
            // `--writeStatusName ""`: no OpenShift ClusterOperator. The images are for pods OLM v0 would start
            // (ConfigMap registries, bundle unpack Jobs); the bench's catalog is an address and its bundles carry
            // their objects, so none runs.
            let olm_operator = HostCommand::start(
                cluster,
                "olm",
                &["--namespace", namespace, "--writeStatusName", ""],
            )?;
            let catalog = HostCommand::start(
                cluster,
                "catalog",
                &[
                    "--namespace",
                    namespace,
                    "--writeStatusName",
                    "",
                    "--configmapServerImage",
                    "unused.invalid/none",
                    "--opmImage",
                    "unused.invalid/none",
                    "--util-image",
                    "unused.invalid/none",
                ],
            )?;
            [Process::V0(olm_operator), Process::V0(catalog)]
        }
        Olm::Rs => [
            Process::Rs(
                OperatorProcess::start(cluster, "olm-operator", &["--namespace", namespace])
                    .await?,
            ),
            Process::Rs(
                OperatorProcess::start(cluster, "catalog-operator", &["--namespace", namespace])
                    .await?,
            ),
        ],
    })
}

/// What the bench measured of one OLM.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Operators started → the CatalogSource READY.
    pub catalog_ready: Duration,
    pub install_p50: Duration,
    pub install_p90: Duration,
    pub installs: usize,
    /// API requests of olm-operator + catalog-operator during the installs, per install.
    pub requests_per_install: f64,
    /// Subscription (startingCSV v1.0.0) → v1.3.0 Succeeded.
    pub upgrade_chain: Duration,
    pub copies: usize,
    /// First namespace created → every copy present.
    pub copies_done: Duration,
    /// Creating the namespaces alone (the control plane's share of `copies_done`).
    pub namespaces_created: Duration,
    /// RSS at the end, KiB: olm-operator, catalog-operator.
    pub rss_kib: [u64; 2],
    /// CPU seconds from the operators' start to the end of the workload: olm-operator, catalog-operator.
    pub cpu_s: [f64; 2],
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The markdown table of both columns, one row per figure.
pub fn table(columns: &[(Olm, Figures)]) -> String {
    type Row = (&'static str, fn(&Figures) -> String);
    let rows: [Row; 8] = [
        ("operators started → CatalogSource READY", |f| {
            secs(f.catalog_ready)
        }),
        ("Subscription → CSV Succeeded, p50 / p90", |f| {
            format!(
                "{} / {} ({} installs)",
                secs(f.install_p50),
                secs(f.install_p90),
                f.installs
            )
        }),
        ("API requests per install (both operators)", |f| {
            format!("{:.1}", f.requests_per_install)
        }),
        (
            "install + 3-step `replaces` upgrade → v1.3.0 Succeeded",
            |f| secs(f.upgrade_chain),
        ),
        (
            "copied CSVs into new namespaces: all present after the last namespace exists (creating them took)",
            |f| {
                format!(
                    "{} ({} namespaces; {})",
                    secs(f.copies_done.saturating_sub(f.namespaces_created)),
                    f.copies,
                    secs(f.namespaces_created)
                )
            },
        ),
        ("RSS at the end: olm-operator / catalog-operator", |f| {
            format!("{} / {} MiB", mib(f.rss_kib[0]), mib(f.rss_kib[1]))
        }),
        (
            "CPU over the whole run: olm-operator / catalog-operator",
            |f| format!("{:.1} / {:.1} s", f.cpu_s[0], f.cpu_s[1]),
        ),
        ("CPU over the whole run, both", |f| {
            format!("{:.1} s", f.cpu_s[0] + f.cpu_s[1])
        }),
    ];
    let mut out = String::from("| what |");
    for (olm, _) in columns {
        out.push_str(&format!(" {} |", olm.heading()));
    }
    out.push_str("\n|---|");
    for _ in columns {
        out.push_str("---|");
    }
    for (what, cell) in rows {
        out.push_str(&format!("\n| {what} |"));
        for (_, figures) in columns {
            out.push_str(&format!(" {} |", cell(figures)));
        }
    }
    out.push('\n');
    out
}
