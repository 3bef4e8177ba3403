//! Metrics and traces as a person sees them, in the real tools `hack/observe.sh up` starts (issue 16):
//! Prometheus scrapes both operators (scenario 38 through its HTTP API: OLM's labels, zero values, relabel on
//! phase change, removal on delete; every metric the Grafana dashboard queries exists), Phoenix receives both
//! operators' spans and its UI, opened in headless Chromium, shows one Subscription's install trace with spans
//! of both; Prometheus' graph page draws the install-duration histogram. Screenshots are written under the
//! test output folder (printed). Without the tools these tests fail, saying how to start them.

use kube::Api;
use kube::api::{DeleteParams, PostParams};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{
    Cluster, Observe, OperatorProcess, await_object, browser_dom, browser_screenshot, eventually,
    output_dir, with_namespace,
};
use std::time::Duration;

const SCRAPE: Duration = Duration::from_secs(60);

/// Wait until `expr` returns series satisfying `ok`.
async fn prom(
    o: &Observe,
    expr: &str,
    what: &str,
    ok: impl Fn(&[(std::collections::BTreeMap<String, String>, f64)]) -> bool,
) -> anyhow::Result<Vec<(std::collections::BTreeMap<String, String>, f64)>> {
    eventually(SCRAPE, &format!("{what} ({expr})"), || {
        let r = o.query(expr);
        let pass = r.as_ref().map(|v| ok(v)).unwrap_or(false);
        async move { Ok(if pass { r.ok() } else { None }) }
    })
    .await
}

#[tokio::test]
async fn scenario_38_through_prometheus_and_the_install_trace_in_phoenix() -> anyhow::Result<()> {
    let observe = Observe::require()?;
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "observe", |ctx| async move {
        let ns = ctx.namespace.clone();
        let ns = ns.as_str();
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", observe.otlp.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "200")];
        let cat = OperatorProcess::start_with_env(ctx.cluster, "catalog-operator", &["--watched-namespaces", ns, "--namespace", ns], &env).await?;
        let olm = OperatorProcess::start_with_env(ctx.cluster, "olm-operator", &["--watched-namespaces", ns], &env).await?;
        let _target = observe.scrape(ns, &[("catalog-operator", cat.http_port), ("olm-operator", olm.http_port)])?;
        let t = format!("test=\"{ns}\"");

        // Zero values: both operators' counters and controller series are there before anything happened.
        prom(&observe, &format!("installplan_warnings_total{{{t}}}"), "installplan_warnings_total at 0", |v| v.len() == 1 && v[0].1 == 0.0).await?;
        prom(&observe, &format!("rest_client_request_duration_seconds_count{{{t},verb=\"DELETE\"}}"), "API latency per verb from the start", |v| v.len() == 2).await?;

        // The OCI registry (hack/lib/registry.sh) is scraped too: its own metrics, beside both operators'.
        prom(&observe, "up{job=\"oci-registry\"}", "the OCI registry scraped and up", |v| v.len() == 1 && v[0].1 == 1.0).await?;
        prom(&observe, "go_goroutines{job=\"oci-registry\"}", "the registry's own metrics", |v| v.len() == 1 && v[0].1 > 0.0).await?;

        // csv_abnormal with OLM's labels; csv_succeeded 0 beside it (scenario 38: UnsupportedOperatorGroup).
        operator_group(&ctx).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), ns);
        csvs.create(&PostParams::default(), &olm_tests::operator_group_fixture::csv("allns.v1", &["AllNamespaces"], &[])?).await?;
        let abnormal = prom(&observe, &format!("csv_abnormal{{{t},name=\"allns.v1\"}}"), "csv_abnormal UnsupportedOperatorGroup", |v| v.iter().any(|(l, x)| *x == 1.0 && l.get("reason").map(String::as_str) == Some("UnsupportedOperatorGroup"))).await?;
        let labels = &abnormal[0].0;
        assert_eq!(labels.get("namespace").map(String::as_str), Some(ns));
        assert_eq!(labels.get("phase").map(String::as_str), Some("Failed"));
        assert_eq!(labels.get("version").map(String::as_str), Some("1.0.0"));
        prom(&observe, &format!("csv_succeeded{{{t},name=\"allns.v1\"}}"), "csv_succeeded 0 for the failed CSV", |v| v.len() == 1 && v[0].1 == 0.0).await?;
        // Removal on delete.
        csvs.delete("allns.v1", &DeleteParams::default()).await?;
        prom(&observe, &format!("csv_abnormal{{{t},name=\"allns.v1\"}} or csv_succeeded{{{t},name=\"allns.v1\"}}"), "no series of the deleted CSV", |v| v.is_empty()).await?;

        // An install through a Subscription: catalog READY, the sync counter relabelled to the installed CSV.
        let crd = Crd::new("probes", &format!("{}.observe.olm-rs.io", &ns[ns.len() - 6..]), "Probe");
        configmap_catalog(&ctx, "cat", &Catalog::with(vec![Op::new("watched", "0.1.0").owns(&crd)]), 0).await?;
        prom(&observe, &format!("catalogsource_ready{{{t},namespace=\"{ns}\",name=\"cat\"}}"), "catalogsource_ready 1", |v| v.len() == 1 && v[0].1 == 1.0).await?;
        subscription(&ctx, sub_to(&ctx, "watched", "watched", "cat")).await?;
        await_sub(&ctx, "watched", "AtLatestKnown", |s| s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "watched.v0.1.0").await?;
        await_object(&csvs, "watched.v0.1.0", DEADLINE, "Succeeded", |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded")).await?;
        // Relabel on phase change: the CSV's abnormal series went, csv_succeeded is 1.
        prom(&observe, &format!("csv_succeeded{{{t},name=\"watched.v0.1.0\"}}"), "csv_succeeded 1", |v| v.len() == 1 && v[0].1 == 1.0).await?;
        prom(&observe, &format!("csv_abnormal{{{t},name=\"watched.v0.1.0\"}}"), "no abnormal series once Succeeded", |v| v.is_empty()).await?;
        let syncs = prom(&observe, &format!("subscription_sync_total{{{t},name=\"watched\"}}"), "subscription_sync_total relabelled to the installed CSV", |v| v.len() == 1 && v[0].0.get("installed").map(String::as_str) == Some("watched.v0.1.0")).await?;
        for (label, want) in [("package", "watched"), ("approval", "Automatic")] {
            assert_eq!(syncs[0].0.get(label).map(String::as_str), Some(want), "{syncs:?}");
        }
        prom(&observe, &format!("olm_rs_install_duration_seconds_count{{{t}}}"), "one install duration observed", |v| v.len() == 1 && v[0].1 >= 1.0).await?;
        prom(&observe, &format!("controller_runtime_reconcile_total{{{t},controller=\"ClusterServiceVersion\",result=\"success\"}}"), "CSV reconciles counted", |v| v.len() == 1 && v[0].1 >= 1.0).await?;

        // Every metric the dashboard queries exists in what the operators export.
        let dashboard: serde_json::Value = serde_json::from_str(include_str!("../../deploy/monitoring/grafana-dashboard.json"))?;
        let names = observe.metric_names()?;
        for expr in dashboard["panels"].as_array().into_iter().flatten().flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default()).filter_map(|t| t["expr"].as_str().map(String::from)) {
            for name in metric_names_in(&expr) {
                assert!(names.contains(&name), "the dashboard queries {name} ({expr}), which no operator exports");
            }
        }

        // Removal on delete for the catalog.
        Api::<messages::crd::catalog_source::CatalogSource>::namespaced(ctx.client.clone(), ns).delete("cat", &DeleteParams::default()).await?;
        prom(&observe, &format!("catalogsource_ready{{{t},name=\"cat\"}}"), "catalogsource_ready removed with its catalog", |v| v.is_empty()).await?;

        // Phoenix: the install's trace holds spans of both operators; its UI shows it.
        let csv = csvs.get("watched.v0.1.0").await?;
        let trace = csv.metadata.annotations.as_ref().and_then(|a| a.get("tracing.olm.operatorframework.io/traceparent")).and_then(|v| v.split('-').nth(1)).map(String::from).ok_or_else(|| anyhow::anyhow!("the CSV carries no trace context"))?;
        let spans = eventually(SCRAPE, "Phoenix holds spans of both operators in the install trace", || {
            let spans = observe.phoenix_spans(1000).unwrap_or_default();
            let trace = trace.clone();
            async move {
                let mine: Vec<serde_json::Value> = spans.into_iter().filter(|s| s["context"]["trace_id"].as_str() == Some(trace.as_str())).collect();
                let names: Vec<&str> = mine.iter().filter_map(|s| s["name"].as_str()).collect();
                let both = names.contains(&"catalog.resolve") && names.contains(&"csv.reconcile") && names.iter().any(|n| n.starts_with("apply "));
                Ok(both.then_some(mine))
            }
        }).await?;
        assert!(spans.iter().any(|s| s["name"] == "apply ClusterServiceVersion"), "a step span names its kind: {spans:?}");
        let out = output_dir("observe_tools")?;
        let projects: serde_json::Value = serde_json::from_slice(&std::process::Command::new("curl").args(["-sf", &format!("{}/v1/projects", observe.phoenix)]).output()?.stdout)?;
        let project = projects["data"].as_array().into_iter().flatten().find(|p| p["name"] == "default").and_then(|p| p["id"].as_str()).ok_or_else(|| anyhow::anyhow!("no default project in Phoenix: {projects}"))?.to_string();
        let url = format!("{}/projects/{project}/traces/{trace}", observe.phoenix);
        let dom = browser_dom(&url)?;
        for name in ["catalog.resolve", "installplan.execute", "csv.reconcile"] {
            assert!(dom.contains(name), "Phoenix's trace page {url} shows no {name} span; its DOM is in {}", { let p = out.join("phoenix-trace.html"); std::fs::write(&p, &dom)?; p.display().to_string() });
        }
        let shot = out.join("phoenix-install-trace.png");
        browser_screenshot(&url, &shot)?;

        // Prometheus' graph page for the install-duration histogram.
        let expr = format!("olm_rs_install_duration_seconds_bucket{{{t}}}");
        let graph = format!("{}/graph?g0.expr={}&g0.tab=1&g0.range_input=15m", observe.prometheus, urlencode(&expr));
        let dom = browser_dom(&graph)?;
        assert!(dom.contains("olm_rs_install_duration_seconds_bucket"), "Prometheus' table does not list the histogram at {graph}");
        let graph_shot = out.join("prometheus-install-duration.png");
        browser_screenshot(&graph.replace("g0.tab=1", "g0.tab=0"), &graph_shot)?;
        println!("screenshots: {} {}", shot.display(), graph_shot.display());
        Ok(())
    })
    .await
}

/// The metric names a PromQL expression reads (identifiers followed by `{`, `[` or `)` that are not functions,
/// keywords or label names; histogram suffixes kept).
fn metric_names_in(expr: &str) -> Vec<String> {
    const NOT_METRICS: &[&str] = &[
        "histogram_quantile",
        "sum",
        "rate",
        "count",
        "by",
        "increase",
        "le",
        "outcome",
        "phase",
        "name",
        "controller",
        "result",
        "verb",
        "kind",
        "and",
        "or",
        "__rate_interval",
    ];
    let mut out = Vec::new();
    let mut word = String::new();
    for c in expr.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        let w = std::mem::take(&mut word);
        if w.contains('_')
            && !NOT_METRICS.contains(&w.as_str())
            && !w.starts_with("__")
            && !w.chars().next().is_some_and(|c| c.is_ascii_digit())
            && c != '('
        {
            out.push(w);
        }
    }
    out.sort();
    out.dedup();
    out
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
