//! Resolve a fresh Subscription to every channel of every package in the shared catalogs
//! (`../shared/catalogs`; the test fails when they are absent), checking the guarantees on each answer.

mod invariants;
mod shared_catalogs;

use resolver::{Namespace, Options, Outcome, SubscriptionSpec, resolve};

#[test]
fn every_channel_of_every_shared_catalog_resolves_from_nothing_or_explains_why_not() {
    let Some(root) = shared_catalogs::catalogs_dir() else {
        panic!(
            "the shared catalogs (../shared/catalogs beside the clone, or $OLM_RS_SHARED/catalogs) are this test's input and are missing"
        );
    };
    let mut totals = (0usize, 0usize, 0usize, 0usize);
    let mut community_heads = 0;
    for loaded in shared_catalogs::load_all(&root) {
        let snap = match loaded.snapshot {
            Ok(s) => s,
            Err(e) => {
                println!("{}: not loadable ({e})", loaded.label);
                continue;
            }
        };
        let mut channels: Vec<(String, String)> = snap
            .bundles
            .iter()
            .map(|b| (b.package.clone(), b.channel.clone()))
            .collect();
        channels.sort();
        channels.dedup();
        let (mut head, mut older, mut failed) = (0, 0, 0);
        let mut examples = Vec::new();
        for (package, channel) in &channels {
            let ns = Namespace {
                name: "ns".into(),
                subscriptions: vec![SubscriptionSpec {
                    name: format!("{package}-sub"),
                    package: package.clone(),
                    channel: channel.clone(),
                    source: snap.key.name.clone(),
                    source_namespace: snap.key.namespace.clone(),
                    starting_csv: None,
                    installed_csv: None,
                    current_csv: None,
                }],
                installed: vec![],
                catalogs: vec![snap.clone()],
                fail_forward: false,
            };
            let r = resolve(&ns, &Options::default());
            let bad = invariants::violations(&ns, &r);
            assert!(
                bad.is_empty(),
                "{} {package}/{channel}: {bad:?}",
                loaded.label
            );
            assert_eq!(
                r,
                resolve(&ns, &Options::default()),
                "resolution is deterministic"
            );
            match &r.subscriptions[0].outcome {
                Outcome::Install { csv } => {
                    let heads = channel_heads(&snap, package, channel);
                    assert!(
                        snap.bundles
                            .iter()
                            .any(|b| &b.name == csv && &b.channel == channel),
                        "{csv} is in {channel}"
                    );
                    if heads.contains(csv) {
                        head += 1;
                    } else {
                        older += 1;
                    }
                }
                Outcome::Failed { explanation } => {
                    failed += 1;
                    assert!(
                        explanation
                            .message
                            .starts_with(&format!("Subscription {package}-sub "))
                    );
                    if examples.len() < 3 {
                        examples.push(explanation.message.clone());
                    }
                }
                other => panic!("fresh subscription gave {other:?}"),
            }
        }
        println!(
            "{}: {} channels: {head} resolved to the head, {older} to an older entry, {failed} failed",
            loaded.label,
            channels.len()
        );
        for e in examples {
            println!("    e.g. {e}");
        }
        if loaded.label.contains("community-operators-prod-fbc") {
            community_heads = head;
        }
        totals = (
            totals.0 + channels.len(),
            totals.1 + head,
            totals.2 + older,
            totals.3 + failed,
        );
    }
    println!(
        "total: {} channels, {} head, {} older, {} failed",
        totals.0, totals.1, totals.2, totals.3
    );
    assert!(
        community_heads > 0,
        "the community FBC catalog resolves at least one channel head"
    );
}

/// Entries of the channel that no other (non-skipped) entry replaces.
fn channel_heads(snap: &resolver::CatalogSnapshot, package: &str, channel: &str) -> Vec<String> {
    let entries: Vec<&resolver::BundleEntry> = snap
        .bundles
        .iter()
        .filter(|b| b.package == package && b.channel == channel)
        .collect();
    let o = resolver::channel::order(&entries);
    o.order
        .first()
        .map(|&i| vec![entries[i].name.clone()])
        .unwrap_or_default()
}
