//! Upgrade scenarios: OLM spec §8 scenarios 20-22, 25-26 and 36, and the seeds' upgrade/skip examples.

mod fixture;

use fixture::*;
use resolver::{CsvPhase, Namespace, Options, Outcome, resolve};
use rstest::rstest;

/// What a test expects for one Subscription.
#[derive(Debug)]
enum Want {
    UpToDate(&'static str),
    Install(&'static str),
    Upgrade(&'static str, &'static str),
    /// Failed, and the message contains this text.
    Failed(&'static str),
}

fn check(n: &Namespace, want: &[(&str, Want)], steps: &[(&str, Option<&str>, &str)]) {
    let r = resolve(n, &Options::default());
    assert_eq!(r.subscriptions.len(), want.len(), "{r:#?}");
    for (name, w) in want {
        let got = r
            .outcome(name)
            .unwrap_or_else(|| panic!("no outcome for {name}"));
        match (w, got) {
            (Want::UpToDate(c), Outcome::UpToDate { csv }) => assert_eq!(csv, c),
            (Want::Install(c), Outcome::Install { csv }) => assert_eq!(csv, c),
            (Want::Upgrade(f, t), Outcome::Upgrade { from, to }) => {
                assert_eq!((from.as_str(), to.as_str()), (*f, *t))
            }
            (Want::Failed(text), Outcome::Failed { explanation }) => {
                assert!(
                    explanation.message.contains(text),
                    "message {:?} lacks {text:?}",
                    explanation.message
                )
            }
            (w, got) => panic!("{name}: wanted {w:?}, got {got:#?}"),
        }
    }
    let got: Vec<(&str, Option<&str>, &str)> = r
        .steps
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.replaces.as_deref(),
                s.subscription.as_str(),
            )
        })
        .collect();
    assert_eq!(got, steps, "steps");
}

fn chain3() -> Vec<resolver::BundleEntry> {
    vec![
        b("a.v1", "a", "alpha", "1.0.0"),
        b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1"),
        b("a.v3", "a", "alpha", "3.0.0").replaces("a.v2"),
    ]
}

#[rstest]
#[case::a_new_subscription_installs_the_channel_head(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Install("a.v3"))], vec![("a.v3", None, "s")])]
#[case::an_installed_operator_moves_one_hop_along_replaces(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "1.0.0")], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Upgrade("a.v1", "a.v2"))], vec![("a.v2", Some("a.v1"), "s")])]
#[case::an_operator_at_the_head_is_up_to_date(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v3")], vec![csv("a.v3", "a", "3.0.0")], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::UpToDate("a.v3"))], vec![])]
// Scenario 20: InstalledSub/UpdateInHead/SkipRange.
#[case::a_head_whose_skip_range_covers_the_installed_version_is_taken_directly(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "0.0.0")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "0.0.0"), b("a.v2", "a", "alpha", "0.1.0").replaces("a.v1"),
            b("a.v3", "a", "alpha", "0.2.0").replaces("a.v2").skip_range("< 1.0.0")])]),
    vec![("s", Want::Upgrade("a.v1", "a.v3"))], vec![("a.v3", Some("a.v1"), "s")])]
// Scenario 20: InstalledSub/UpdatesAvailable/SkipRangeNotInHead.
#[case::a_skip_range_below_the_head_is_used_when_the_head_excludes_the_version(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "0.0.0")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "0.0.0"), b("a.v2", "a", "alpha", "0.1.0").replaces("a.v1"),
            b("a.v3", "a", "alpha", "0.2.0").replaces("a.v2").skip_range("< 1.0.0"),
            b("a.v4", "a", "alpha", "1.1.0").replaces("a.v3").skip_range(">= 1.0.0 < 1.1.0")])]),
    vec![("s", Want::Upgrade("a.v1", "a.v3"))], vec![("a.v3", Some("a.v1"), "s")])]
// Scenario 21: InstalledSub/UpdatesAvailable/SpecifiedSkips.
#[case::a_bundle_that_skips_the_installed_one_is_an_upgrade(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "1.0.0")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1"),
            b("a.v3", "a", "alpha", "3.0.0").replaces("a.v2").skips(&["a.v1"])])]),
    vec![("s", Want::Upgrade("a.v1", "a.v3"))], vec![("a.v3", Some("a.v1"), "s")])]
// Seed 002: a skipped (bad) release is never installed, whether or not the cluster saw it.
#[case::a_skipped_release_is_never_chosen_as_the_next_step(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v0")], vec![csv("a.v0", "a", "0.9.0")],
       vec![cat("cat", NS, 0, vec![b("a.v0", "a", "alpha", "0.9.0"), b("a.v1", "a", "alpha", "0.9.1").replaces("a.v0"),
            b("a.v2", "a", "alpha", "0.9.2").replaces("a.v0").skips(&["a.v1"])])]),
    vec![("s", Want::Upgrade("a.v0", "a.v2"))], vec![("a.v2", Some("a.v0"), "s")])]
#[case::a_cluster_that_already_runs_the_skipped_release_moves_past_it(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "0.9.1")],
       vec![cat("cat", NS, 0, vec![b("a.v0", "a", "alpha", "0.9.0"), b("a.v1", "a", "alpha", "0.9.1").replaces("a.v0"),
            b("a.v2", "a", "alpha", "0.9.2").replaces("a.v0").skips(&["a.v1"])])]),
    vec![("s", Want::Upgrade("a.v1", "a.v2"))], vec![("a.v2", Some("a.v1"), "s")])]
// Seed 003: z-stream: a skipRange head replaces every older z-stream release.
#[case::every_z_stream_release_updates_to_the_latest_z_stream(
    ns(vec![sub("s", "es", "4.1", "cat").installed("es.v4.1.0")], vec![csv("es.v4.1.0", "es", "4.1.0")],
       vec![cat("cat", NS, 0, vec![b("es.v4.1.0", "es", "4.1", "4.1.0"), b("es.v4.1.1", "es", "4.1", "4.1.1").replaces("es.v4.1.0"),
            b("es.v4.1.2", "es", "4.1", "4.1.2").replaces("es.v4.1.1").skip_range(">=4.1.0 <4.1.2")])]),
    vec![("s", Want::Upgrade("es.v4.1.0", "es.v4.1.2"))], vec![("es.v4.1.2", Some("es.v4.1.0"), "s")])]
// Seed 002 precedence: head in own source, then replacement in own source, then other sources.
#[case::the_subscriptions_own_source_is_preferred_over_a_higher_priority_one(
    ns(vec![sub("s", "a", "alpha", "own").installed("a.v1")], vec![csv("a.v1", "a", "1.0.0")],
       vec![cat("own", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1")]),
            cat("other", NS, 10, vec![b("a.v9", "a", "alpha", "9.0.0").skip_range("<9.0.0")])]),
    vec![("s", Want::Upgrade("a.v1", "a.v2"))], vec![("a.v2", Some("a.v1"), "s")])]
#[case::another_visible_source_is_used_when_the_own_source_has_no_upgrade(
    ns(vec![sub("s", "a", "alpha", "own").installed("a.v1")], vec![csv("a.v1", "a", "1.0.0")],
       vec![cat("own", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0")]),
            cat("other", "olm", 0, vec![b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1")])]),
    vec![("s", Want::Upgrade("a.v1", "a.v2"))], vec![("a.v2", Some("a.v1"), "s")])]
// Scenario 22: NewSub/StartingCSV, then the next resolution upgrades.
#[case::starting_csv_installs_that_version_first(
    ns(vec![sub("s", "a", "alpha", "cat").starting("a.v2")], vec![], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Install("a.v2"))], vec![("a.v2", None, "s")])]
#[case::after_the_starting_csv_the_next_resolution_upgrades(
    ns(vec![sub("s", "a", "alpha", "cat").starting("a.v2").installed("a.v2")], vec![csv("a.v2", "a", "2.0.0")], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Upgrade("a.v2", "a.v3"))], vec![("a.v3", Some("a.v2"), "s")])]
#[case::a_starting_csv_that_is_skipped_is_explained(
    ns(vec![sub("s", "a", "alpha", "cat").starting("a.v2")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1"),
            b("a.v3", "a", "alpha", "3.0.0").replaces("a.v1").skips(&["a.v2"])])]),
    vec![("s", Want::Failed("No operators found with name a.v2 in channel alpha of package a in catalog ns/cat (another entry of the channel skips it"))], vec![])]
// Scenario 25: ConflictingSubscriptionsToSamePackage / SatisfiableSubscriptionsToSamePackage.
#[case::two_subscriptions_to_one_package_on_different_channels_cannot_both_resolve(
    ns(vec![sub("a-alpha", "a", "alpha", "cat"), sub("a-beta", "a", "beta", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "beta", "2.0.0")])]),
    vec![("a-alpha", Want::Install("a.v1")),
         ("a-beta", Want::Failed("a.v2 (version 2.0.0, channel beta, catalog ns/cat) was rejected because package a is already provided by a.v1"))],
    vec![("a.v1", None, "a-alpha")])]
#[case::two_subscriptions_to_one_channel_share_one_bundle(
    ns(vec![sub("s1", "a", "alpha", "cat"), sub("s2", "a", "alpha", "cat")], vec![], vec![cat("cat", NS, 0, chain3())]),
    vec![("s1", Want::Install("a.v3")), ("s2", Want::Install("a.v3"))], vec![("a.v3", None, "s1")])]
// Scenario 26: SubscriptionWithNoCandidatesInChannel.
#[case::a_channel_without_entries_is_explained(
    ns(vec![sub("s", "a", "gamma", "cat")], vec![], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Failed("No operators found in channel gamma of package a in catalog ns/cat."))], vec![])]
#[case::a_missing_package_is_explained(
    ns(vec![sub("s", "zzz", "alpha", "cat")], vec![], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Failed("No operators found in package zzz in catalog ns/cat."))], vec![])]
#[case::a_missing_catalog_is_explained(
    ns(vec![sub("s", "a", "alpha", "nope")], vec![], vec![cat("cat", NS, 0, chain3())]),
    vec![("s", Want::Failed("No operators found from catalog ns/nope: it is not visible to this namespace."))], vec![])]
#[case::a_channel_with_two_heads_is_explained(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1"), b("a.v2b", "a", "alpha", "2.0.1").replaces("a.v1")])]),
    vec![("s", Want::Failed("Its update graph is invalid: channel alpha of package a has 2 heads (a.v2b, a.v2)"))], vec![])]
#[case::an_empty_channel_means_the_default_channel_first(
    ns(vec![sub("s", "a", "", "cat")], vec![],
       vec![with_default(cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v9", "a", "beta", "9.0.0")]), "a", "alpha")]),
    vec![("s", Want::Install("a.v1"))], vec![("a.v1", None, "s")])]
#[case::a_deprecated_head_is_passed_over_for_the_next_entry(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1").deprecated()])]),
    vec![("s", Want::Install("a.v1"))], vec![("a.v1", None, "s")])]
fn upgrades_follow_olm(
    #[case] n: Namespace,
    #[case] want: Vec<(&str, Want)>,
    #[case] steps: Vec<(&str, Option<&str>, &str)>,
) {
    check(&n, &want, &steps);
}

/// Scenario 36: a Replacing CSV whose replacement Failed blocks the package unless fail-forward is on.
#[rstest]
#[case::fail_forward_enabled_lets_the_failed_replacement_be_upgraded(true, Want::Upgrade("a.v2", "a.v3"), vec![("a.v3", Some("a.v2"), "s")])]
#[case::fail_forward_disabled_leaves_the_chain_unsatisfiable(false, Want::Failed("package a is already provided by installed a.v1"), vec![])]
fn fail_forward_decides_whether_a_failed_upgrade_can_be_replaced(
    #[case] fail_forward: bool,
    #[case] want: Want,
    #[case] steps: Vec<(&str, Option<&str>, &str)>,
) {
    let mut n = ns(
        vec![sub("s", "a", "alpha", "cat").installed("a.v2")],
        vec![
            csv("a.v1", "a", "1.0.0").phase(CsvPhase::Replacing),
            csv("a.v2", "a", "2.0.0")
                .replaces("a.v1")
                .phase(CsvPhase::Failed),
        ],
        vec![cat(
            "cat",
            NS,
            0,
            vec![
                b("a.v1", "a", "alpha", "1.0.0"),
                b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1"),
                b("a.v3", "a", "alpha", "3.0.0")
                    .replaces("a.v2")
                    .skips(&["a.v1"]),
            ],
        )],
    );
    n.fail_forward = fail_forward;
    check(&n, &[("s", want)], &steps);
}

#[test]
fn an_unparseable_skip_range_is_ignored_with_a_warning_naming_the_bundle() {
    let n = ns(
        vec![sub("s", "a", "alpha", "cat").installed("a.v1")],
        vec![csv("a.v1", "a", "1.0.0")],
        vec![cat(
            "cat",
            NS,
            0,
            vec![
                b("a.v1", "a", "alpha", "1.0.0"),
                b("a.v2", "a", "alpha", "2.0.0").skip_range("banana"),
            ],
        )],
    );
    let r = resolve(&n, &Options::default());
    assert_eq!(
        r.outcome("s"),
        Some(&Outcome::UpToDate { csv: "a.v1".into() })
    );
    assert_eq!(
        r.warnings,
        vec![
            "bundle a.v2 in catalog ns/cat has an unparseable olm.skipRange `banana` (`banana` is not a version: `banana` is not a number); it is ignored, as OLM does"
        ]
    );
}
