//! olm-rs's `registry serve` against `opm serve` (operator-registry, built from its Go module at the version
//! `hack/versions.env` pins) over the same catalogs, call by call: every package, every bundle of every channel,
//! every channel head, every replacement query and every provided API, on every method of `api.Registry`.
//! Answers are compared in a normal form (`opm_support`: JSON as values, unordered lists sorted); an error is
//! compared by its gRPC code. A difference fails the test unless [`KNOWN`] lists it with its reason.
//!
//! Corpora: the community FBC catalog (`community-operators-prod-fbc`), and operator-registry's own
//! package-manifest test data turned into sqlite by opm's `initializer` (served by `opm registry serve`) and
//! served by us from the package-manifest folder itself.
//!
//! `cargo test --workspace --test opm_diff -- --nocapture` prints the calls compared per method.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests may unwrap: a panic is a test failure"
)]

mod opm_support;

use opm_support::*;
use registry::client::RegistryClient;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Differences accepted: (corpus tag, method, what differs, a text every differing request contains, reason).
/// An entry excuses a difference only when every request showing it contains that text.
const KNOWN: &[(&str, &str, &str, &str, &str)] = &[
    // opm's sqlite backend (the deprecated `opm registry serve`) against the package-manifest folder.
    (
        "sqlite",
        "GetBundleForChannel",
        "*",
        "",
        "opm's sqlite GetBundleForChannel answers the CSV only (csvName, csvJson); olm-rs answers the whole bundle, \
      as opm's FBC backend does",
    ),
    (
        "sqlite",
        "*",
        "field providedApis",
        "",
        "the sqlite database keeps each CRD's plural; opm's FBC backend, which olm-rs follows, leaves it empty \
      (olm.gvk properties carry none), and OLM matches APIs by group, version and kind",
    ),
    (
        "sqlite",
        "*",
        "field requiredApis",
        "",
        "as providedApis: the plural",
    ),
    (
        "sqlite",
        "*",
        "field properties",
        "",
        "olm-rs lists a bundle's required APIs as olm.gvk.required properties too, as `opm render` does; the \
      sqlite database keeps them in its dependencies only",
    ),
    (
        "sqlite",
        "*",
        "field object",
        "strimzi",
        "opm's legacy loader puts every CRD of a flat package folder into every bundle of it; olm-rs gives a \
      bundle the CRDs its CSV owns",
    ),
    (
        "sqlite",
        "*",
        "",
        "KafkaBridge",
        "the same: the loader makes strimzi v0.11.x provide KafkaBridge, which their CSVs do not own",
    ),
];

type Answer = Result<Value, tonic::Code>;

const SKIP_ENTRIES: &str = "GetChannelEntriesThatReplace: an entry for a bundle that skips the name says it replaces that \
     name (opm's FBC backend sends the bundle's own replaces; olm-rs sends what the sqlite backend sends)";
const SEVERAL_REPLACE: &str = "GetBundleThatReplaces: several bundles replace or skip the name; opm answers one of them \
     in Go map order, olm-rs the highest version";

fn code(e: &registry::client::ClientError) -> tonic::Code {
    e.status()
        .map(|s| s.code())
        .unwrap_or(tonic::Code::Unavailable)
}

#[derive(Default)]
struct Diff {
    /// Calls compared per method.
    calls: BTreeMap<&'static str, usize>,
    /// Answers made equal by a documented olm-rs choice (`registry/src/query.rs`), by that choice.
    deliberate: BTreeMap<&'static str, usize>,
    /// (method, what differs) → first request that showed it, with the values, and every request that did.
    differing: BTreeMap<(&'static str, String), (String, Vec<String>)>,
}

impl Diff {
    fn compare(&mut self, rpc: &'static str, request: &str, opm: Answer, ours: Answer) {
        *self.calls.entry(rpc).or_default() += 1;
        let whats: Vec<(String, String)> = match (&opm, &ours) {
            (Ok(a), Ok(b)) if a == b => return,
            (Ok(Value::Object(a)), Ok(Value::Object(b))) => a
                .keys()
                .chain(b.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| {
                    let field = |m: &serde_json::Map<String, Value>| {
                        short(&Ok(m.get(k).cloned().unwrap_or(Value::Null)))
                    };
                    let null = Value::Null;
                    let at =
                        first_difference(a.get(k).unwrap_or(&null), b.get(k).unwrap_or(&null), k);
                    (
                        format!("field {k}"),
                        format!(
                            "first difference at {at}\n      opm: {}\n      olm-rs: {}",
                            field(a),
                            field(b)
                        ),
                    )
                })
                .collect(),
            (Err(a), Err(b)) if a == b => return,
            (a, b) if a.is_ok() == b.is_ok() => vec![(
                "answer".into(),
                format!("opm: {}\n      olm-rs: {}", short(a), short(b)),
            )],
            (a, b) => vec![(
                format!("opm {} vs olm-rs {}", outcome(a), outcome(b)),
                format!("opm: {}\n      olm-rs: {}", short(a), short(b)),
            )],
        };
        for (what, values) in whats {
            let detail = format!("{request}\n      {values}");
            self.differing
                .entry((rpc, what))
                .or_insert((detail, Vec::new()))
                .1
                .push(request.to_string());
        }
    }
}

/// Where two JSON values first differ, with both values there.
fn first_difference(a: &Value, b: &Value, path: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()).collect::<BTreeSet<_>>() {
                let null = Value::Null;
                let (p, q) = (x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null));
                if p != q {
                    return first_difference(p, q, &format!("{path}.{k}"));
                }
            }
            path.to_string()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return first_difference(p, q, &format!("{path}[{i}]"));
                }
            }
            path.to_string()
        }
        _ => {
            let cut = |v: &Value| v.to_string().chars().take(200).collect::<String>();
            format!("{path}: opm {} / olm-rs {}", cut(a), cut(b))
        }
    }
}

fn outcome(a: &Answer) -> String {
    match a {
        Ok(_) => "OK".into(),
        Err(c) => format!("{c:?}"),
    }
}

fn short(a: &Answer) -> String {
    let s = match a {
        Ok(v) => v.to_string(),
        Err(c) => format!("error {c:?}"),
    };
    s.chars().take(600).collect()
}

async fn all_calls(opm: &RegistryClient, ours: &RegistryClient, diff: &mut Diff) {
    // ListPackages: the set of names.
    let names = |r: Result<Vec<String>, _>| -> Answer {
        r.map(|mut v: Vec<String>| {
            v.sort();
            serde_json::json!(v)
        })
        .map_err(|e| code(&e))
    };
    let packages_opm = opm.list_packages().await;
    let packages: Vec<String> = packages_opm.as_ref().cloned().unwrap_or_default();
    diff.compare(
        "ListPackages",
        "",
        names(packages_opm),
        names(ours.list_packages().await),
    );

    // GetPackage of each, and of one that does not exist.
    let mut channels: Vec<(String, String)> = Vec::new();
    for name in packages
        .iter()
        .map(String::as_str)
        .chain(["no-such-package"])
    {
        let a = opm.get_package(name).await;
        if let Ok(p) = &a {
            channels.extend(
                p.channels
                    .iter()
                    .map(|c| (name.to_string(), c.name.clone())),
            );
        }
        let b = ours.get_package(name).await;
        diff.compare(
            "GetPackage",
            name,
            a.as_ref().map(package).map_err(code),
            b.as_ref().map(package).map_err(code),
        );
    }

    // ListBundles: keyed by (package, channel, csv).
    let keyed =
        |r: Result<Vec<registry::api::Bundle>, _>| -> Result<BTreeMap<String, Value>, tonic::Code> {
            r.map(|v| {
                v.iter()
                    .map(|b| {
                        (
                            format!("{}/{}/{}", b.package_name, b.channel_name, b.csv_name),
                            bundle(b),
                        )
                    })
                    .collect()
            })
            .map_err(|e| code(&e))
        };
    let listed_opm = keyed(opm.list_bundles().await);
    let listed_ours = keyed(ours.list_bundles().await);
    let mut bundles: Vec<(String, String, String, String)> = Vec::new();
    // (package, channel, skipped name) → the bundle that skips it.
    let mut skipped: Vec<((String, String, String), String)> = Vec::new();
    match (&listed_opm, &listed_ours) {
        (Ok(a), Ok(b)) => {
            for key in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
                diff.compare(
                    "ListBundles",
                    key,
                    a.get(key).cloned().ok_or(tonic::Code::NotFound),
                    b.get(key).cloned().ok_or(tonic::Code::NotFound),
                );
            }
            for v in a.values() {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                bundles.push((
                    s("packageName"),
                    s("channelName"),
                    s("csvName"),
                    s("replaces"),
                ));
                let skips = v["skips"].as_array().into_iter().flatten();
                skipped.extend(skips.map(|k| {
                    let key = (
                        s("packageName"),
                        s("channelName"),
                        k.as_str().unwrap_or_default().to_string(),
                    );
                    (key, s("csvName"))
                }));
            }
        }
        (a, b) => diff.compare(
            "ListBundles",
            "(whole stream)",
            a.as_ref().map(|_| Value::Null).map_err(|c| *c),
            b.as_ref().map(|_| Value::Null).map_err(|c| *c),
        ),
    }

    // GetBundle of each listed bundle, and of a missing one.
    for (p, c, csv, _) in bundles
        .iter()
        .map(|(p, c, n, r)| (p.as_str(), c.as_str(), n.as_str(), r.as_str()))
        .chain([("no-such-package", "stable", "none.v0.0.1", "")])
    {
        let a = opm.get_bundle(p, c, csv).await;
        let b = ours.get_bundle(p, c, csv).await;
        diff.compare(
            "GetBundle",
            &format!("{p}/{c}/{csv}"),
            a.as_ref().map(bundle).map_err(code),
            b.as_ref().map(bundle).map_err(code),
        );
    }

    // GetBundleForChannel: each channel head.
    for (p, c) in &channels {
        let a = opm.get_bundle_for_channel(p, c).await;
        let b = ours.get_bundle_for_channel(p, c).await;
        diff.compare(
            "GetBundleForChannel",
            &format!("{p}/{c}"),
            a.as_ref().map(bundle).map_err(code),
            b.as_ref().map(bundle).map_err(code),
        );
    }

    // GetChannelEntriesThatReplace and GetBundleThatReplaces: for every bundle name (each is replaced by
    // something, or not), and every name a bundle replaces (which may not be in the catalog).
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (_, _, n, r) in &bundles {
        names.insert(n);
        if !r.is_empty() {
            names.insert(r);
        }
    }
    // A bundle's own `replaces`, by (package, channel, name).
    let replaces: BTreeMap<(&str, &str, &str), &str> = bundles
        .iter()
        .map(|(p, c, n, r)| ((p.as_str(), c.as_str(), n.as_str()), r.as_str()))
        .collect();
    for n in &names {
        let a = opm.get_channel_entries_that_replace(n).await;
        let mut b = ours.get_channel_entries_that_replace(n).await;
        // olm-rs's entry for a bundle that skips `n` says it replaces `n`; opm's says the bundle's own replaces.
        if let Ok(list) = &mut b {
            let raw = entries(list);
            for e in list.iter_mut() {
                let key = (
                    e.package_name.as_str(),
                    e.channel_name.as_str(),
                    e.bundle_name.as_str(),
                );
                if let Some(own) = replaces.get(&key) {
                    e.replaces = own.to_string();
                }
            }
            list.dedup_by(|x, y| x == y);
            if raw != entries(list) {
                *diff.deliberate.entry(SKIP_ENTRIES).or_default() += 1;
            }
        }
        diff.compare(
            "GetChannelEntriesThatReplace",
            n,
            a.as_deref().map(entries).map_err(code),
            b.as_deref().map(entries).map_err(code),
        );
    }
    for (p, c, n, _) in &bundles {
        let a = opm.get_bundle_that_replaces(n, p, c).await;
        let b = ours.get_bundle_that_replaces(n, p, c).await;
        let (mut a, b) = (
            a.as_ref().map(bundle).map_err(code),
            b.as_ref().map(bundle).map_err(code),
        );
        // Several bundles replace or skip `n`: opm answers one of them (Go map order), olm-rs the highest version.
        if let (Ok(x), Ok(y)) = (&a, &b) {
            let replacing = |v: &Value| {
                let name = v["csvName"].as_str().unwrap_or_default();
                replaces.get(&(p.as_str(), c.as_str(), name)) == Some(&n.as_str())
                    || skipped
                        .iter()
                        .any(|((sp, sc, sn), by)| sp == p && sc == c && sn == n && by == name)
            };
            if x["csvName"] != y["csvName"] && replacing(x) && replacing(y) {
                *diff.deliberate.entry(SEVERAL_REPLACE).or_default() += 1;
                a = b.clone();
            }
        }
        diff.compare("GetBundleThatReplaces", &format!("{p}/{c} after {n}"), a, b);
    }

    // The provider queries, for every provided API and one nobody provides.
    let mut apis: BTreeSet<(String, String, String)> = BTreeSet::new();
    if let Ok(listed) = &listed_opm {
        for v in listed.values() {
            for g in v["providedApis"].as_array().into_iter().flatten() {
                let parts: Vec<&str> = g.as_str().unwrap_or_default().split('/').collect();
                if parts.len() >= 3 {
                    apis.insert((parts[0].into(), parts[1].into(), parts[2].into()));
                }
            }
        }
    }
    apis.insert(("nobody.example.com".into(), "v1".into(), "Nothing".into()));
    for (g, v, k) in &apis {
        let request = format!("{g}/{v}/{k}");
        let a = opm.get_channel_entries_that_provide(g, v, k).await;
        let b = ours.get_channel_entries_that_provide(g, v, k).await;
        diff.compare(
            "GetChannelEntriesThatProvide",
            &request,
            a.as_deref().map(entries).map_err(code),
            b.as_deref().map(entries).map_err(code),
        );
        let a = opm.get_latest_channel_entries_that_provide(g, v, k).await;
        let b = ours.get_latest_channel_entries_that_provide(g, v, k).await;
        diff.compare(
            "GetLatestChannelEntriesThatProvide",
            &request,
            a.as_deref().map(entries).map_err(code),
            b.as_deref().map(entries).map_err(code),
        );
        let a = opm.get_default_bundle_that_provides(g, v, k).await;
        let b = ours.get_default_bundle_that_provides(g, v, k).await;
        diff.compare(
            "GetDefaultBundleThatProvides",
            &request,
            a.as_ref().map(bundle).map_err(code),
            b.as_ref().map(bundle).map_err(code),
        );
    }
}

fn verdict(corpus: &str, tag: &str, diff: &Diff) {
    let total: usize = diff.calls.values().sum();
    eprintln!("{corpus}: {total} calls compared");
    for (rpc, n) in &diff.calls {
        eprintln!("  {rpc}: {n}");
    }
    for (choice, n) in &diff.deliberate {
        eprintln!("  deliberate ({n} calls): {choice}");
    }
    let mut unexplained = Vec::new();
    for ((rpc, what), (example, requests)) in &diff.differing {
        let count = requests.len();
        let known = KNOWN.iter().find(|(t, r, w, within, _)| {
            *t == tag
                && (*r == "*" || r == rpc)
                && (*w == "*" || w.is_empty() || w == what)
                && requests.iter().all(|q| q.contains(within))
        });
        match known {
            Some((.., reason)) => eprintln!("  known: {rpc} {what} ({count} calls): {reason}"),
            None => unexplained.push(format!("{rpc}: {what} in {count} calls, e.g. {example}")),
        }
    }
    assert!(
        unexplained.is_empty(),
        "{corpus}: olm-rs answers differently from opm:\n{}",
        unexplained.join("\n")
    );
    assert!(total > 0, "{corpus}: nothing was compared");
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("olm-rs-opm-diff-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

async fn diff_served(corpus: &str, tag: &str, mut opm: Served, mut ours: Served) {
    let (a, b) = (client(&mut opm).await, client(&mut ours).await);
    let mut diff = Diff::default();
    all_calls(&a, &b, &mut diff).await;
    verdict(corpus, tag, &diff);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_serve_answers_as_opm_serve_on_the_community_fbc_catalog() {
    let catalog = shared_catalogs().join("community-operators-prod-fbc/catalogs/v4.21");
    let opm = opm_bin_dir();
    let dir = scratch("fbc");
    diff_served(
        "community FBC v4.21",
        "fbc",
        opm_serve(&opm, &catalog, &dir),
        ours_serve(&catalog, &dir),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_serve_answers_as_opm_registry_serve_on_sqlite_built_from_package_manifests() {
    let manifests = shared_catalogs().join("operator-registry-testdata/manifests");
    let opm = opm_bin_dir();
    let dir = scratch("sqlite");
    let db = dir.join("bundles.db");
    initializer(&opm, &manifests, &db);
    diff_served(
        "operator-registry testdata (sqlite / package manifests)",
        "sqlite",
        opm_serve_sqlite(&opm, &db, &dir),
        ours_serve(&manifests, &dir),
    )
    .await;
}

/// opm's `initializer`: a package-manifest folder into a sqlite database.
fn initializer(opm: &Path, manifests: &Path, db: &Path) {
    let out = std::process::Command::new(opm.join("initializer"))
        .arg("--manifests")
        .arg(manifests)
        .arg("--output")
        .arg(db)
        .output()
        .expect("run initializer");
    assert!(
        out.status.success(),
        "initializer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
