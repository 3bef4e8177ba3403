//! The monitoring files of `deploy/monitoring/`: the plain rule file passes `promtool check rules` (Debian's
//! `prometheus` package; `hack/observe.sh install` installs it, and this test fails without it), the
//! PrometheusRule carries exactly the same groups, and the Grafana dashboard parses with a Prometheus query in
//! every panel. (That each queried metric exists in what the operators export is checked against a live scrape
//! in `observe_tools`.)

use std::path::PathBuf;
use std::process::Command;

fn monitoring() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../deploy/monitoring")
}

#[test]
fn the_rule_file_passes_promtool() -> anyhow::Result<()> {
    let rules = monitoring().join("rules/olm-rs.rules.yaml");
    let out = Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
        .map_err(|e| anyhow::anyhow!("promtool is missing ({e}): run hack/observe.sh install"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "promtool check rules {}: {text}",
        rules.display()
    );
    assert!(text.contains("SUCCESS"), "{text}");
    Ok(())
}

#[test]
fn the_prometheus_rule_object_holds_the_rule_file() -> anyhow::Result<()> {
    let plain = std::fs::read_to_string(monitoring().join("rules/olm-rs.rules.yaml"))?;
    let object = std::fs::read_to_string(monitoring().join("prometheus-rule.yaml"))?;
    let body: String = object
        .split_once("\nspec:\n")
        .map(|(_, b)| b.to_string())
        .ok_or_else(|| anyhow::anyhow!("no spec in prometheus-rule.yaml"))?;
    let want: String = plain
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("  {l}\n"))
        .collect();
    assert_eq!(
        body, want,
        "prometheus-rule.yaml drifted from rules/olm-rs.rules.yaml: regenerate it (command in its header)"
    );
    assert!(object.contains("kind: PrometheusRule"));
    Ok(())
}

#[test]
fn the_dashboard_parses_and_every_panel_queries_prometheus() -> anyhow::Result<()> {
    let d: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        monitoring().join("grafana-dashboard.json"),
    )?)?;
    assert!(d["title"].is_string() && d["uid"].is_string() && d["schemaVersion"].is_u64());
    let panels = d["panels"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("no panels"))?;
    assert!(
        panels.len() >= 6,
        "install/upgrade latency, CSV phases, catalog health, actors, mailbox, errors"
    );
    for p in panels {
        let targets = p["targets"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("panel {} has no targets", p["title"]))?;
        assert!(!targets.is_empty(), "panel {}", p["title"]);
        for t in targets {
            let expr = t["expr"].as_str().unwrap_or_default();
            assert!(
                !expr.is_empty() && expr.matches('(').count() == expr.matches(')').count(),
                "panel {}: {expr}",
                p["title"]
            );
        }
    }
    Ok(())
}
