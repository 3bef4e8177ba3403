//! Benchmark of the PackageManifest API (issue 18 figures): `kubectl get packagemanifests` latency through the
//! aggregator and the package-server's RSS, with the 745-bundle community FBC served by one CatalogSource, then
//! by ten (the same registry behind ten CatalogSources: ten catalogs of 33 packages each). Prints the figures.
//!
//! `OLM_RS_SHARED=/path/to/shared cargo test -p olm-tests --test package_manifests_bench -- --ignored --nocapture`

use olm_tests::bench_figures::rss_kib;
use olm_tests::catalog_fixture::*;
use olm_tests::package_server_fixture::*;
use olm_tests::{Cluster, community_fbc, eventually, with_namespace};
use std::time::{Duration, Instant};

const RUNS: usize = 10;

/// Wall times of `kubectl args`, sorted (ms).
fn time_kubectl(cluster: &Cluster, args: &[&str], lines: usize) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let (ok, out, err) = kubectl(cluster, args)?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(ok, "kubectl {}: {err}", args.join(" "));
        anyhow::ensure!(
            out.lines().count() >= lines,
            "expected at least {lines} lines"
        );
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

async fn add_catalogs(
    ctx: &olm_tests::TestContext,
    from: usize,
    to: usize,
    address: &str,
) -> anyhow::Result<()> {
    for i in from..to {
        let source = Catsrc::named(&format!("community-{i}"))
            .address(address)
            .display_name(&format!("Community {i}"));
        create(ctx, source.build()).await?;
    }
    Ok(())
}

/// `took_ms` of each "catalog read" line of the server's log (ANSI colours removed).
fn catalog_read_times(log: &str) -> Vec<u64> {
    log.lines()
        .filter(|l| l.contains("catalog read") && l.contains("changes"))
        .filter_map(|l| {
            let mut plain = String::new();
            let mut chars = l.chars();
            while let Some(c) = chars.next() {
                if c == '\u{1b}' {
                    for c in chars.by_ref() {
                        if c == 'm' {
                            break;
                        }
                    }
                } else {
                    plain.push(c);
                }
            }
            plain
                .split_whitespace()
                .find_map(|w| w.strip_prefix("took_ms="))
                .and_then(|v| v.parse().ok())
        })
        .collect()
}

#[tokio::test]
#[ignore = "benchmark: prints PackageManifest API latency and memory"]
async fn package_manifests_bench() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let _apiservice = exclusive().await;
    with_namespace(cluster, "pkgbench", |ctx| async move {
        let fbc = community_fbc()?;
        let registry = RegistryProcess::start_on_free_port(&[fbc.as_path()])?;
        let address = format!("127.0.0.1:{}", registry.port);
        let server = start(cluster, &ctx.client, &ctx.namespace).await?;
        let pid = server.process.pid();
        let idle = rss_kib(pid).ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))?;
        // Baseline: the same kubectl through the same apiserver for a built-in resource.
        let baseline = time_kubectl(cluster, &["get", "serviceaccounts", "-n", &ctx.namespace], 1)?;
        let ns = ctx.namespace.clone();
        let mut rows = Vec::new();
        for (from, to) in [(0usize, 1usize), (1, 10)] {
            add_catalogs(&ctx, from, to, &address).await?;
            let want = 33 * to;
            eventually(Duration::from_secs(300), &format!("{want} packages listed"), || async {
                Ok((names(cluster, &ns, &[])?.len() == want).then_some(()))
            })
            .await?;
            let table = time_kubectl(cluster, &["get", "packagemanifests", "-n", &ns], want)?;
            let raw_path = format!("/apis/packages.operators.coreos.com/v1/namespaces/{ns}/packagemanifests");
            let raw = time_kubectl(cluster, &["get", "--raw", &raw_path], 1)?;
            let one = time_kubectl(cluster, &["get", "packagemanifest", "-n", &ns, "-o", "yaml", "kube-green"], 1)?;
            let rss = rss_kib(pid).ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))?;
            rows.push(format!(
                "| {to} CatalogSource(s), {want} PackageManifests | `kubectl get packagemanifests` p50 {:.0} ms / max {:.0} ms | full JSON list (`get --raw`) p50 {:.0} ms | one package `-o yaml` p50 {:.0} ms | RSS {:.1} MiB |",
                table[RUNS / 2],
                table[RUNS - 1],
                raw[RUNS / 2],
                one[RUNS / 2],
                rss as f64 / 1024.0
            ));
        }
        let reads = catalog_read_times(&server.process.logs());
        println!(
            "catalog reads (ListBundles + GetPackage + GetBundleForChannel per channel, 33 packages), ms: {reads:?}"
        );
        println!(
            "baseline `kubectl get serviceaccounts` (no aggregation) p50 {:.0} ms",
            baseline[RUNS / 2]
        );
        println!("package-server (debug build) idle RSS before any catalog: {:.1} MiB", idle as f64 / 1024.0);
        for r in rows {
            println!("{r}");
        }
        drop(server);
        anyhow::Ok(())
    })
    .await
}
