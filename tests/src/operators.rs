//! The operator binaries as real subprocesses against the test control plane, with their HTTP endpoints on a
//! free loopback port. Killed when dropped; their output goes to a log file printed on request.

use crate::binaries::bin_path;
use crate::cluster::Cluster;
use crate::wait::eventually;
use anyhow::Context;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct OperatorProcess {
    pub name: String,
    pub http_port: u16,
    pub log: PathBuf,
    child: Child,
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Leader election on a short lease (4 s, renewed within 3 s, retried every 1 s), so a standby takes over within
/// seconds of a leader kill in the tests that kill one; add `--leader-elect` and an identity.
/// The arguments of one leader-elected replica watching and living in `namespace`, named `identity`, with
/// [`FAST_LEASE`] timings.
pub fn replica_args<'a>(namespace: &'a str, identity: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        "--watched-namespaces",
        namespace,
        "--namespace",
        namespace,
        "--leader-elect",
        "--leader-elect-identity",
        identity,
    ];
    args.extend(FAST_LEASE);
    args
}

pub const FAST_LEASE: [&str; 6] = [
    "--leader-elect-lease-duration",
    "4",
    "--leader-elect-renew-deadline",
    "3",
    "--leader-elect-retry-period",
    "1",
];

impl OperatorProcess {
    /// Start `binary run` with the given extra flags, and wait until its `/healthz` answers.
    pub async fn start(cluster: &Cluster, binary: &str, extra: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_env(cluster, binary, extra, &[]).await
    }

    /// [`OperatorProcess::start`] with extra environment variables (e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub async fn start_with_env(
        cluster: &Cluster,
        binary: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let path = bin_path(binary)?;
        let http_port = free_port()?;
        let log = std::env::temp_dir().join(format!("olm-rs-{binary}-{http_port}.log"));
        let out = std::fs::File::create(&log)?;
        let err = out.try_clone()?;
        let child = Command::new(&path)
            .arg("run")
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{http_port}"))
            .args(extra)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            // On loopback: the tests read the metrics and debug endpoints without a token, unless they set
            // `OLM_METRICS_AUTH` themselves (metrics_auth.rs).
            .env("OLM_METRICS_AUTH", "none")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("spawn {}", path.display()))?;
        let mut process = OperatorProcess {
            name: binary.to_string(),
            http_port,
            log,
            child,
        };
        let started = eventually(
            Duration::from_secs(30),
            &format!("{binary} /healthz"),
            || {
                let port = http_port;
                async move {
                    Ok(http_get(port, "/healthz")
                        .await
                        .ok()
                        .filter(|(code, _)| *code == 200)
                        .map(|_| ()))
                }
            },
        )
        .await;
        if let Err(e) = started {
            if let Ok(Some(status)) = process.child.try_wait() {
                anyhow::bail!("{binary} exited with {status}: {}", process.logs());
            }
            return Err(e);
        }
        Ok(process)
    }

    /// GET a path of the operator's HTTP endpoints: (status code, body bytes).
    pub async fn get(&self, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        http_get(self.http_port, path).await
    }

    /// The live object actors per kind, from `/debug/actors`.
    pub async fn actor_counts(&self) -> anyhow::Result<std::collections::BTreeMap<String, usize>> {
        let (code, body) = self.get("/debug/actors").await?;
        anyhow::ensure!(code == 200, "/debug/actors answered {code}");
        Ok(serde_json::from_slice(&body)?)
    }

    /// The process id (e.g. to read its memory from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of its log, oldest first (what a failing test prints).
    pub fn log_tail(&self, lines: usize) -> String {
        let logs = self.logs();
        let tail: Vec<&str> = logs.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Ask the process to stop (SIGTERM, as Kubernetes does when it stops a pod); `kill` or drop reaps it.
    pub fn terminate(&mut self) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .context("run kill -TERM")?;
        anyhow::ensure!(status.success(), "kill -TERM {} failed", self.child.id());
        Ok(())
    }

    /// The exit status once the process has exited on its own (a leader that could not renew its Lease exits).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Stop the process (SIGKILL; the chaos tests use this on purpose).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A minimal HTTP/1.1 GET over loopback (no client dependency needed for three endpoints).
async fn http_get(port: u16, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    http_get_as(port, path, None).await
}

/// [`http_get`] on any loopback port, with `Authorization: Bearer <token>` when a token is given.
pub async fn http_get_as(
    port: u16,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    stream
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{authorization}Connection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no header end")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let code: u16 = head
        .split_whitespace()
        .nth(1)
        .context("no status code")?
        .parse()?;
    Ok((code, raw[split + 4..].to_vec()))
}
