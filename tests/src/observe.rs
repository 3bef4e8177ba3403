//! The real tools of `hack/observe.sh` for tests: Prometheus (its HTTP API; scrape targets written as file_sd
//! files, removed when dropped), Phoenix (its REST API) and headless Chromium (Debian `chromium`: the DOM after
//! the page's scripts ran, and screenshots). A test using them FAILS when they are absent, naming the command
//! that starts them: they are its input.

use anyhow::{Context, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Observe {
    pub prometheus: String,
    pub phoenix: String,
    pub otlp: String,
    targets: PathBuf,
}

fn env_or(name: &str, default: String) -> String {
    std::env::var(name).unwrap_or(default)
}

fn curl(args: &[&str]) -> anyhow::Result<Vec<u8>> {
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "20"])
        .args(args)
        .output()
        .context("run curl")?;
    if !out.status.success() {
        bail!("curl {args:?} failed ({})", out.status);
    }
    Ok(out.stdout)
}

impl Observe {
    /// The running tools, or an error saying how to start them.
    pub fn require() -> anyhow::Result<Self> {
        let home = std::env::var("HOME").unwrap_or_default();
        let o = Self {
            prometheus: env_or("OLM_RS_PROMETHEUS_URL", "http://127.0.0.1:9090".into()),
            phoenix: env_or("OLM_RS_PHOENIX_URL", "http://127.0.0.1:6006".into()),
            otlp: env_or("OLM_RS_OBSERVE_OTLP", "http://127.0.0.1:4317".into()),
            targets: PathBuf::from(env_or(
                "OLM_RS_OBSERVE_TARGETS",
                format!("{home}/.cache/olm-rs/observe/targets"),
            )),
        };
        curl(&[&format!("{}/-/ready", o.prometheus)]).with_context(|| {
            format!(
                "Prometheus is not running at {}: start it with hack/observe.sh up",
                o.prometheus
            )
        })?;
        curl(&[&format!("{}/v1/projects", o.phoenix)]).with_context(|| {
            format!(
                "Phoenix is not running at {}: start it with hack/observe.sh up",
                o.phoenix
            )
        })?;
        which("chromium").context(
            "headless Chromium is missing: hack/observe.sh up installs Debian's chromium",
        )?;
        Ok(o)
    }

    /// Let Prometheus scrape `ports` (labelled `job` and `test`) until the returned guard is dropped.
    pub fn scrape(&self, test: &str, targets: &[(&str, u16)]) -> anyhow::Result<ScrapeTarget> {
        std::fs::create_dir_all(&self.targets)?;
        let groups: Vec<Value> = targets
            .iter()
            .map(|(job, port)| serde_json::json!({"targets": [format!("127.0.0.1:{port}")], "labels": {"job": job, "test": test}}))
            .collect();
        let path = self.targets.join(format!("test-{test}.json"));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&groups)?)?;
        std::fs::rename(&tmp, &path)?;
        Ok(ScrapeTarget { path })
    }

    /// An instant query: each series' labels and value.
    pub fn query(&self, expr: &str) -> anyhow::Result<Vec<(BTreeMap<String, String>, f64)>> {
        let body = curl(&[
            "-G",
            &format!("{}/api/v1/query", self.prometheus),
            "--data-urlencode",
            &format!("query={expr}"),
        ])?;
        let v: Value = serde_json::from_slice(&body)?;
        if v["status"] != "success" {
            bail!("query {expr}: {v}");
        }
        let mut out = Vec::new();
        for r in v["data"]["result"].as_array().cloned().unwrap_or_default() {
            let labels = serde_json::from_value(r["metric"].clone()).unwrap_or_default();
            let value = r["value"][1]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(f64::NAN);
            out.push((labels, value));
        }
        Ok(out)
    }

    /// Every metric name Prometheus holds.
    pub fn metric_names(&self) -> anyhow::Result<Vec<String>> {
        let body = curl(&[&format!("{}/api/v1/label/__name__/values", self.prometheus)])?;
        let v: Value = serde_json::from_slice(&body)?;
        Ok(serde_json::from_value(v["data"].clone())?)
    }

    /// Phoenix's spans (newest first), as its REST API returns them.
    pub fn phoenix_spans(&self, limit: usize) -> anyhow::Result<Vec<Value>> {
        let body = curl(&[&format!(
            "{}/v1/projects/default/spans?limit={limit}",
            self.phoenix
        )])?;
        let v: Value = serde_json::from_slice(&body)?;
        Ok(v["data"].as_array().cloned().unwrap_or_default())
    }
}

fn which(tool: &str) -> anyhow::Result<PathBuf> {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()?;
    if !out.status.success() {
        bail!("{tool} not found");
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn chromium(args: &[&str], url: &str) -> anyhow::Result<Vec<u8>> {
    let profile = tempfile_dir()?;
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1600,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--virtual-time-budget=15000",
            "--run-all-compositor-stages-before-draw",
        ])
        .args(args)
        .arg(url)
        .output()
        .context("run chromium")?;
    let _ = std::fs::remove_dir_all(&profile);
    if !out.status.success() {
        bail!(
            "chromium {url}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out.stdout)
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "olm-rs-chromium-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The page's DOM after its scripts ran (headless Chromium).
pub fn browser_dom(url: &str) -> anyhow::Result<String> {
    Ok(String::from_utf8_lossy(&chromium(&["--dump-dom"], url)?).into_owned())
}

/// A PNG screenshot of the page, written to `path`.
pub fn browser_screenshot(url: &str, path: &Path) -> anyhow::Result<()> {
    chromium(&[&format!("--screenshot={}", path.display())], url)?;
    if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) == 0 {
        bail!(
            "chromium wrote no screenshot of {url} to {}",
            path.display()
        );
    }
    Ok(())
}

/// The test's output folder (`target/.../observe-output/<test>`), kept after the run for a person to look at.
pub fn output_dir(test: &str) -> anyhow::Result<PathBuf> {
    let base = std::env::var("CARGO_TARGET_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let dir = base.join("observe-output").join(test);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A file_sd target file; removed when dropped (Prometheus then stops scraping it).
pub struct ScrapeTarget {
    path: PathBuf,
}

impl Drop for ScrapeTarget {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
