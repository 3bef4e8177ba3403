//! What the benches read and compute for their figures: a process serving on a port (found by its command line),
//! its resident memory (`VmRSS`), and percentiles of sorted timings.

use std::time::Duration;

/// The pid of the `binary` process whose command line names `127.0.0.1:<port>` (the operators' HTTP address).
pub fn pid_serving(binary: &str, port: u16) -> Option<u32> {
    let needle = format!("127.0.0.1:{port}");
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            (text.contains(binary) && text.contains(&needle)).then_some(pid)
        })
}

/// The resident memory of `pid` in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The p-quantile (0 to 1, nearest rank) of sorted durations; zero for none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
