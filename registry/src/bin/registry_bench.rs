//! `registry-bench`: load time and RSS of `registry serve`, and p50/p99 latency of
//! GetBundleForChannel and ListBundles, on the largest shared catalogs and on a synthetic
//! catalog ten times the size of the largest FBC (generated on first run).
//!
//! Run: `cargo run --release -p registry --bin registry-bench` (uses the `registry` binary built
//! next to this one; env `OLM_RS_SHARED` overrides the shared folder, `BENCH_SYNTHETIC_DIR` the
//! synthetic catalog's folder).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use registry::client::{ClientOptions, ConnectionState, RegistryClient};

struct Served {
    child: Child,
    addr: String,
    load: Duration,
    summary: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(registry: &Path, catalog: &Path, bodies: &str) -> anyhow::Result<Served> {
    let started = Instant::now();
    let mut child = Command::new(registry)
        .args([
            "serve",
            "--port",
            "0",
            "--listen",
            "127.0.0.1",
            "--bodies",
            bodies,
        ])
        .arg(catalog)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("start {}", registry.display()))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let load = started.elapsed();
    let addr = line
        .rsplit("serving on ")
        .next()
        .map(str::trim)
        .unwrap_or_default()
        .to_string();
    if addr.is_empty() {
        bail!("registry serve did not start: {line:?}");
    }
    let summary = line
        .split(" in ")
        .next()
        .unwrap_or_default()
        .trim_start_matches("loaded ")
        .to_string();
    Ok(Served {
        child,
        addr,
        load,
        summary,
    })
}

/// (VmRSS, VmHWM) in MiB.
fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kib| kib / 1024.0)
            .unwrap_or(f64::NAN)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn measure(name: &str, registry: &Path, catalog: &Path) -> anyhow::Result<()> {
    for bodies in ["disk", "memory"] {
        measure_mode(
            &format!("{name} [--bodies {bodies}]"),
            registry,
            catalog,
            bodies,
        )
        .await?;
    }
    Ok(())
}

async fn measure_mode(
    name: &str,
    registry: &Path,
    catalog: &Path,
    bodies: &str,
) -> anyhow::Result<()> {
    let served = spawn(registry, catalog, bodies)?;
    let pid = served.child.id();
    let (rss_loaded, hwm_loaded) = rss_mib(pid);
    let client = RegistryClient::connect(&served.addr, ClientOptions::default())?;
    client
        .wait_for(ConnectionState::Ready, Duration::from_secs(30))
        .await?;
    let mut heads = Vec::new();
    for p in client.list_packages().await? {
        let pkg = client.get_package(&p).await?;
        for c in pkg.channels {
            heads.push((p.clone(), c.name));
        }
    }
    let rounds = 1000usize;
    let mut gbfc = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let (p, c) = &heads[(i * 7919) % heads.len()];
        let t = Instant::now();
        client.get_bundle_for_channel(p, c).await?;
        gbfc.push(t.elapsed());
    }
    let list_rounds = 30usize;
    let mut lb = Vec::with_capacity(list_rounds);
    let mut count = 0;
    for _ in 0..list_rounds {
        let t = Instant::now();
        count = client.list_bundles().await?.len();
        lb.push(t.elapsed());
    }
    let (rss_after, hwm_after) = rss_mib(pid);
    gbfc.sort();
    lb.sort();
    println!(
        "{name}\n  {}\n  load+listen {:.0} ms | RSS after load {rss_loaded:.1} MiB (peak {hwm_loaded:.1}) | RSS after queries {rss_after:.1} MiB (peak {hwm_after:.1})\n  GetBundleForChannel x{rounds} over {} channels: p50 {:.3} ms, p99 {:.3} ms\n  ListBundles x{list_rounds} ({count} bundles each): p50 {:.1} ms, p99 {:.1} ms",
        served.summary,
        ms(served.load),
        heads.len(),
        ms(percentile(&gbfc, 0.5)),
        ms(percentile(&gbfc, 0.99)),
        ms(percentile(&lb, 0.5)),
        ms(percentile(&lb, 0.99)),
    );
    client.close();
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let shared = std::env::var_os("OLM_RS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(
                std::env::var("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
            )
            .join("../../shared")
        })
        .join("catalogs");
    if !shared.is_dir() {
        println!("skipped: {} is absent", shared.display());
        return Ok(());
    }
    let registry = std::env::current_exe()?.with_file_name("registry");
    if !registry.is_file() {
        bail!(
            "{} not found: build it first (cargo build --release -p registry)",
            registry.display()
        );
    }
    let fbc = shared.join("community-operators-prod-fbc/catalogs/v4.21");
    let bundles = shared.join("community-operators-prod-bundles/operators");
    let synthetic = std::env::var_os("BENCH_SYNTHETIC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("olm-rs-synthetic-10x"));
    if !synthetic.is_dir() {
        let t = Instant::now();
        let source = catalog::load::load_unchecked(&fbc)?;
        let (p, b) = registry::commands::write_synthetic(&source, 10, &synthetic)?;
        println!(
            "generated {} ({p} packages, {b} bundles) in {:.1} s",
            synthetic.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        measure("community-operators-prod-fbc v4.21 (FBC, 33 pkgs, 745 bundles, 14 MB)", &registry, &fbc).await?;
        measure("community-operators-prod-bundles (registry+v1 dirs, 70 pkgs, 613 bundles, 51 MB, manifests inline)", &registry, &bundles).await?;
        measure("synthetic 10x FBC (330 pkgs, 7450 bundles)", &registry, &synthetic).await
    })
}
