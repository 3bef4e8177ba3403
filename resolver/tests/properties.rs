//! Properties over generated catalogs (random channels, skips, skip ranges, required APIs and packages):
//! each answer keeps every guarantee (no unprovided requirement, one operator per package, one provider
//! per API, no skipped entry installed), is deterministic and does not depend on input order. Each case
//! runs several rounds: resolve, apply the answer to the namespace, grow the catalogs, resolve again.

mod fixture;
mod invariants;

use fixture::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use resolver::{
    BundleEntry, CatalogSnapshot, InstalledOperator, Namespace, Options, Outcome, Resolution,
    requirement, resolve,
};
use serde_json::json;

const APIS: [&str; 6] = ["A", "B", "C", "D", "E", "F"];
const PACKAGES: [&str; 6] = ["p0", "p1", "p2", "p3", "p4", "p5"];

/// Append `n` new versions to channel `channel` of `package`, chained by `replaces`, sometimes skipping or
/// skip-ranging over older entries, with random provided/required APIs and package requirements.
fn grow(rng: &mut StdRng, bundles: &mut Vec<BundleEntry>, package: &str, channel: &str, n: usize) {
    for _ in 0..n {
        let prior: Vec<&BundleEntry> = bundles
            .iter()
            .filter(|b| b.package == package && b.channel == channel)
            .collect();
        let minor = prior.len() as u64;
        let name = format!("{package}.{channel}.v{minor}");
        let mut e = b(&name, package, channel, &format!("1.{minor}.0"));
        let heads: Vec<String> = {
            let entries: Vec<&BundleEntry> = prior.clone();
            let o = resolver::channel::order(&entries);
            o.order
                .first()
                .map(|&i| entries[i].name.clone())
                .into_iter()
                .collect()
        };
        if let Some(head) = heads.first() {
            e.replaces = Some(head.clone());
            if minor >= 2 && rng.random_bool(0.3) {
                // Skip the current head: the new entry replaces the one before it.
                let before = prior.iter().find(|p| {
                    Some(&p.name)
                        == prior
                            .iter()
                            .find(|q| &q.name == head)
                            .and_then(|h| h.replaces.as_ref())
                });
                if let Some(before) = before {
                    e.replaces = Some(before.name.clone());
                    e.skips = vec![head.clone()];
                }
            }
            if rng.random_bool(0.3) {
                e.skip_range = Some(format!(">=1.0.0 <1.{minor}.0"));
            }
        }
        // p4 and p5 provide the same APIs as p0 and p1, so providers compete.
        let own = APIS[PACKAGES.iter().position(|p| *p == package).unwrap_or(0) % 4];
        if !rng.random_bool(0.15) {
            e = e.provides(own);
        }
        if rng.random_bool(0.35) {
            let other = APIS[rng.random_range(0..APIS.len())];
            if other != own {
                e = e.requires(other);
            }
        }
        if rng.random_bool(0.15) {
            let pkg = PACKAGES[rng.random_range(0..PACKAGES.len())];
            if pkg != package {
                let range = if rng.random_bool(0.5) {
                    ">=1.0.0"
                } else {
                    "<1.2.0"
                };
                e = e.prop(
                    "olm.package.required",
                    json!({"packageName": pkg, "versionRange": range}),
                );
            }
        }
        bundles.push(e);
    }
}

fn catalogs(rng: &mut StdRng) -> Vec<CatalogSnapshot> {
    let count = rng.random_range(1..=3);
    (0..count)
        .map(|c| {
            let mut bundles = Vec::new();
            for package in PACKAGES.iter() {
                if !rng.random_bool(0.7) {
                    continue;
                }
                for channel in ["stable", "fast"].iter().take(rng.random_range(1..=2)) {
                    let n = rng.random_range(1..=4);
                    grow(rng, &mut bundles, package, channel, n);
                }
            }
            let ns_name = if rng.random_bool(0.5) { NS } else { "olm" };
            cat(&format!("cat{c}"), ns_name, rng.random_range(0..3), bundles)
        })
        .collect()
}

/// Make the namespace look as it would after the answer is installed.
fn apply(n: &mut Namespace, r: &Resolution) {
    for s in &r.subscriptions {
        let Some(spec) = n.subscriptions.iter_mut().find(|x| x.name == s.name) else {
            continue;
        };
        match &s.outcome {
            Outcome::Install { csv } | Outcome::Upgrade { to: csv, .. } => {
                spec.installed_csv = Some(csv.clone());
                spec.current_csv = Some(csv.clone());
            }
            Outcome::UpToDate { .. } | Outcome::Failed { .. } => {}
        }
        if let Outcome::Upgrade { from, .. } = &s.outcome {
            n.installed.retain(|c| &c.name != from);
        }
    }
    for step in &r.steps {
        let Some(e) = n
            .catalogs
            .iter()
            .find(|c| c.key == step.catalog)
            .and_then(|c| {
                c.bundles
                    .iter()
                    .find(|b| b.name == step.name && b.channel == step.channel)
            })
        else {
            continue;
        };
        n.installed.push(InstalledOperator {
            name: e.name.clone(),
            package: Some(e.package.clone()),
            version: e.version.clone(),
            provided_apis: requirement::provided_apis(&e.provided_apis, &e.properties),
            required_apis: e.required_apis.clone(),
            properties: e
                .properties
                .iter()
                .filter(|p| p.type_ != "olm.gvk")
                .cloned()
                .collect(),
            replaces: step.replaces.clone(),
            phase: resolver::CsvPhase::Succeeded,
        });
    }
    for new in &r.new_subscriptions {
        let mut s = sub(&new.name, &new.package, &new.channel, &new.source)
            .source_ns(&new.source_namespace);
        s.installed_csv = Some(new.starting_csv.clone());
        s.current_csv = Some(new.starting_csv.clone());
        n.subscriptions.push(s);
    }
}

fn shuffled(rng: &mut StdRng, n: &Namespace) -> Namespace {
    let mut m = n.clone();
    m.subscriptions.shuffle(rng);
    m.installed.shuffle(rng);
    m.catalogs.shuffle(rng);
    for c in &mut m.catalogs {
        c.bundles.shuffle(rng);
    }
    m
}

#[test]
fn generated_namespaces_keep_every_guarantee_over_several_rounds() {
    let cases = std::env::var("RESOLVER_PROPERTY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300u64);
    let mut resolved = 0;
    let mut failed = 0;
    for seed in 0..cases {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut n = ns(vec![], vec![], catalogs(&mut rng));
        for i in 0..rng.random_range(1..=4) {
            let c = &n.catalogs[rng.random_range(0..n.catalogs.len())];
            let Some(e) = c.bundles.get(rng.random_range(0..c.bundles.len().max(1))) else {
                continue;
            };
            let mut s = sub(&format!("s{i}"), &e.package, &e.channel, &c.key.name)
                .source_ns(&c.key.namespace);
            if rng.random_bool(0.2) {
                s.starting_csv = Some(e.name.clone());
            }
            n.subscriptions.push(s);
        }
        for round in 0..3 {
            let r = resolve(&n, &Options::default());
            let bad = invariants::violations(&n, &r);
            assert!(
                bad.is_empty(),
                "seed {seed} round {round}: {bad:#?}\n{n:#?}\n{r:#?}"
            );
            assert_eq!(
                r,
                resolve(&n, &Options::default()),
                "seed {seed} round {round}: same input, same answer"
            );
            let other = shuffled(&mut rng, &n);
            assert_eq!(
                r,
                resolve(&other, &Options::default()),
                "seed {seed} round {round}: input order does not matter"
            );
            resolved += r
                .subscriptions
                .iter()
                .filter(|s| !matches!(s.outcome, Outcome::Failed { .. }))
                .count();
            failed += r.failed().count();
            apply(&mut n, &r);
            // New releases arrive between rounds.
            for c in 0..n.catalogs.len() {
                let keys: Vec<(String, String)> = n.catalogs[c]
                    .bundles
                    .iter()
                    .map(|b| (b.package.clone(), b.channel.clone()))
                    .collect();
                if let Some((p, ch)) = keys.get(rng.random_range(0..keys.len().max(1))).cloned() {
                    grow(&mut rng, &mut n.catalogs[c].bundles, &p, &ch, 1);
                }
            }
        }
    }
    println!(
        "{cases} generated namespaces x 3 rounds: {resolved} subscription outcomes resolved, {failed} failed with an explanation"
    );
    assert!(
        resolved > failed,
        "the generator produces mostly satisfiable namespaces"
    );
}
