//! Resolution time and peak memory.
//!
//! `cargo bench -p resolver --bench resolver-bench` (optional: `-- <iterations>`). Three namespaces:
//! 1. 10 Subscriptions against every catalog in `../shared/catalogs` (skipped when absent);
//! 2. the same 10 against ten renamed copies of those catalogs (the "ten-times" catalog);
//! 3. 200 Subscriptions (half upgrading, half new) against a synthetic 10 000-bundle catalog with
//!    skipRanges and cross-package API dependencies;
//! 4. the same plus 20 unsatisfiable Subscriptions (the isolation path: one admission per Subscription).
//!
//! Prints p50/p99/max per namespace and the process's peak resident memory (VmHWM).

#[path = "../tests/shared_catalogs/mod.rs"]
mod shared_catalogs;

use std::time::{Duration, Instant};

use resolver::{
    BundleEntry, CatalogKey, CatalogSnapshot, Gvk, InstalledOperator, Namespace, Options, Outcome,
    PackageInfo, SubscriptionSpec, resolve,
};
use semver::Version;

fn sub(name: &str, package: &str, channel: &str, cat: &CatalogKey) -> SubscriptionSpec {
    SubscriptionSpec {
        name: name.into(),
        package: package.into(),
        channel: channel.into(),
        source: cat.name.clone(),
        source_namespace: cat.namespace.clone(),
        starting_csv: None,
        installed_csv: None,
        current_csv: None,
    }
}

/// A renamed copy `k` of a catalog: packages, bundle names and API groups get a `c<k>-` prefix.
fn copy(c: &CatalogSnapshot, k: usize) -> CatalogSnapshot {
    let p = |s: &str| format!("c{k}-{s}");
    let g = |x: &Gvk| Gvk::new(&format!("c{k}.{}", x.group), &x.version, &x.kind);
    let rename_props = |props: &[resolver::Property]| {
        props
            .iter()
            .map(|pr| {
                let mut v = pr.value.clone();
                if let Some(group) = v
                    .get("group")
                    .and_then(|x| x.as_str())
                    .map(|x| format!("c{k}.{x}"))
                {
                    v["group"] = group.into();
                }
                if let Some(name) = v
                    .get("packageName")
                    .and_then(|x| x.as_str())
                    .map(|x| format!("c{k}-{x}"))
                {
                    v["packageName"] = name.into();
                }
                resolver::Property {
                    type_: pr.type_.clone(),
                    value: v,
                }
            })
            .collect()
    };
    CatalogSnapshot {
        key: CatalogKey::new(p(&c.key.name), c.key.namespace.clone()),
        priority: c.priority,
        packages: c
            .packages
            .iter()
            .map(|x| PackageInfo {
                name: p(&x.name),
                default_channel: x.default_channel.clone(),
            })
            .collect(),
        bundles: c
            .bundles
            .iter()
            .map(|b| BundleEntry {
                name: p(&b.name),
                package: p(&b.package),
                replaces: b.replaces.as_deref().map(p),
                skips: b.skips.iter().map(|s| p(s)).collect(),
                provided_apis: b.provided_apis.iter().map(g).collect(),
                required_apis: b.required_apis.iter().map(g).collect(),
                properties: rename_props(&b.properties),
                ..b.clone()
            })
            .collect(),
    }
}

/// 1000 packages x 10 versions in one channel; every version replaces the previous one and skipRanges
/// all older ones; package i provides API `K<i>` and, for i % 3 == 0, requires `K<(i + 7) % 1000>`.
fn synthetic() -> CatalogSnapshot {
    let key = CatalogKey::new("synthetic", "olm");
    let mut bundles = Vec::with_capacity(10_000);
    for i in 0..1000 {
        for v in 0..10u64 {
            bundles.push(BundleEntry {
                name: format!("pkg{i}.v{v}"),
                package: format!("pkg{i}"),
                channel: "stable".into(),
                version: Version::new(1, v, 0),
                replaces: (v > 0).then(|| format!("pkg{i}.v{}", v - 1)),
                skips: vec![],
                skip_range: (v > 1).then(|| format!(">=1.0.0 <1.{v}.0")),
                provided_apis: vec![Gvk::new("synthetic.example.com", "v1", &format!("K{i}"))],
                required_apis: if i % 3 == 0 {
                    vec![Gvk::new(
                        "synthetic.example.com",
                        "v1",
                        &format!("K{}", (i + 7) % 1000),
                    )]
                } else {
                    vec![]
                },
                properties: vec![],
                bundle_path: String::new(),
                deprecated: false,
            });
        }
    }
    let packages = (0..1000)
        .map(|i| PackageInfo {
            name: format!("pkg{i}"),
            default_channel: "stable".into(),
        })
        .collect();
    CatalogSnapshot {
        key,
        priority: 0,
        packages,
        bundles,
    }
}

/// 200 Subscriptions: even ones installed at v3 (an upgrade is due), odd ones new.
fn synthetic_namespace() -> Namespace {
    let cat = synthetic();
    let mut subs = Vec::new();
    let mut installed = Vec::new();
    for i in (0..1000).step_by(5).take(200) {
        let mut s = sub(&format!("s{i}"), &format!("pkg{i}"), "stable", &cat.key);
        if i % 2 == 0 {
            let name = format!("pkg{i}.v3");
            let e = cat.bundles.iter().find(|b| b.name == name).cloned();
            if let Some(e) = e {
                installed.push(InstalledOperator {
                    name: name.clone(),
                    package: Some(e.package.clone()),
                    version: e.version.clone(),
                    provided_apis: e.provided_apis.clone(),
                    required_apis: vec![],
                    properties: vec![],
                    replaces: e.replaces.clone(),
                    phase: resolver::CsvPhase::Succeeded,
                });
                s.installed_csv = Some(name.clone());
                s.current_csv = Some(name);
            }
        }
        subs.push(s);
    }
    Namespace {
        name: "bench".into(),
        subscriptions: subs,
        installed,
        catalogs: vec![cat],
        fail_forward: false,
    }
}

/// The synthetic namespace plus 20 Subscriptions to packages whose only bundle requires an API nobody
/// provides: the all-together solve fails and each Subscription is admitted one at a time (isolation).
fn synthetic_namespace_with_failures() -> Namespace {
    let mut ns = synthetic_namespace();
    let key = ns.catalogs[0].key.clone();
    for i in 0..20 {
        let package = format!("broken{i}");
        ns.catalogs[0].bundles.push(BundleEntry {
            name: format!("{package}.v1"),
            package: package.clone(),
            channel: "stable".into(),
            version: Version::new(1, 0, 0),
            replaces: None,
            skips: vec![],
            skip_range: None,
            provided_apis: vec![],
            required_apis: vec![Gvk::new("missing.example.com", "v1", "Missing")],
            properties: vec![],
            bundle_path: String::new(),
            deprecated: false,
        });
        ns.catalogs[0].packages.push(PackageInfo {
            name: package.clone(),
            default_channel: "stable".into(),
        });
        ns.subscriptions
            .push(sub(&format!("t{i}"), &package, "stable", &key));
    }
    ns
}

/// Up to 10 Subscriptions to default channels of the community FBC packages (the first catalog labelled so).
fn ten_subs(catalogs: &[CatalogSnapshot], prefer: &str) -> Vec<SubscriptionSpec> {
    let Some(c) = catalogs
        .iter()
        .find(|c| c.key.name.contains(prefer))
        .or(catalogs.first())
    else {
        return vec![];
    };
    c.packages
        .iter()
        .take(10)
        .map(|p| {
            sub(
                &format!("{}-sub", p.name),
                &p.name,
                &p.default_channel,
                &c.key,
            )
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

fn run(label: &str, ns: &Namespace, iterations: usize) {
    let entries: usize = ns.catalogs.iter().map(|c| c.bundles.len()).sum();
    let mut times = Vec::with_capacity(iterations);
    let mut last = None;
    for _ in 0..iterations {
        let t = Instant::now();
        let r = resolve(ns, &Options::default());
        times.push(t.elapsed());
        last = Some(r);
    }
    times.sort();
    let Some(r) = last else { return };
    let failed = r
        .subscriptions
        .iter()
        .filter(|s| matches!(s.outcome, Outcome::Failed { .. }))
        .count();
    println!(
        "{label}: {} catalogs, {entries} channel entries, {} subscriptions ({} resolved, {failed} failed), {} steps, {} search steps; \
         {iterations} runs: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ns.catalogs.len(),
        ns.subscriptions.len(),
        ns.subscriptions.len() - failed,
        r.steps.len(),
        r.search_steps,
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() {
    let iterations: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    match shared_catalogs::catalogs_dir() {
        None => println!("shared catalogs not found: the two corpus namespaces are skipped"),
        Some(root) => {
            let t = Instant::now();
            let catalogs: Vec<CatalogSnapshot> = shared_catalogs::load_all(&root)
                .into_iter()
                .filter_map(|l| l.snapshot.ok())
                .collect();
            println!(
                "loaded {} catalogs from {} in {:.1} s",
                catalogs.len(),
                root.display(),
                t.elapsed().as_secs_f64()
            );
            let subs = ten_subs(&catalogs, "community-operators-prod-fbc");
            let ns = Namespace {
                name: "bench".into(),
                subscriptions: subs.clone(),
                installed: vec![],
                catalogs: catalogs.clone(),
                fail_forward: false,
            };
            run("10 subscriptions x all shared catalogs", &ns, iterations);
            let x10: Vec<CatalogSnapshot> = (0..10)
                .flat_map(|k| catalogs.iter().map(move |c| copy(c, k)))
                .collect();
            let subs10: Vec<SubscriptionSpec> = subs
                .iter()
                .map(|s| SubscriptionSpec {
                    package: format!("c0-{}", s.package),
                    source: format!("c0-{}", s.source),
                    ..s.clone()
                })
                .collect();
            let ns = Namespace {
                name: "bench".into(),
                subscriptions: subs10,
                installed: vec![],
                catalogs: x10,
                fail_forward: false,
            };
            run(
                "10 subscriptions x ten renamed copies of all shared catalogs",
                &ns,
                iterations,
            );
        }
    }
    run(
        "200 subscriptions x synthetic 10k-bundle catalog",
        &synthetic_namespace(),
        iterations.min(50),
    );
    run(
        "220 subscriptions (20 unsatisfiable) x synthetic 10k-bundle catalog",
        &synthetic_namespace_with_failures(),
        iterations.min(20),
    );
    match peak_rss_kib() {
        Some(kib) => println!(
            "peak resident memory (VmHWM): {:.1} MiB",
            kib as f64 / 1024.0
        ),
        None => println!("peak resident memory: unavailable (no /proc/self/status)"),
    }
}
