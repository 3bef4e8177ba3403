//! Dependency scenarios: OLM spec §8 scenarios 23-24, the seed 004 examples (deprecating a dependent API,
//! version deadlock), required packages/GVKs/constraints, and isolation of unsatisfiable Subscriptions.

mod fixture;

use fixture::*;
use resolver::{Namespace, NewSubscription, Options, Outcome, resolve};
use rstest::rstest;
use serde_json::json;

#[derive(Debug)]
enum Want {
    UpToDate(&'static str),
    Install(&'static str),
    Upgrade(&'static str, &'static str),
    Failed(&'static str),
}

/// Assert every Subscription's outcome and the steps as (bundle, owning subscription), in order.
fn check(n: &Namespace, want: &[(&str, Want)], steps: &[(&str, &str)]) {
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
    let got: Vec<(&str, &str)> = r
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.subscription.as_str()))
        .collect();
    assert_eq!(got, steps, "steps");
}

#[rstest]
// Scenario 23: SingleNewSubscription/ResolveOne.
#[case::a_new_subscription_pulls_in_the_provider_of_its_required_api(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X"), b("b.v1", "b", "beta", "1.0.0").provides("X")])]),
    vec![("s", Want::Install("a.v1"))], vec![("b.v1", "b-beta-cat-ns"), ("a.v1", "s")])]
// Scenario 23: InstalledSub/UpdateFound/UpdateRequires/ResolveOne.
#[case::an_upgrade_that_requires_a_new_api_pulls_in_its_provider(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "1.0.0")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1").requires("X"),
            b("b.v1", "b", "beta", "1.0.0").provides("X")])]),
    vec![("s", Want::Upgrade("a.v1", "a.v2"))], vec![("b.v1", "b-beta-cat-ns"), ("a.v2", "s")])]
#[case::an_api_already_provided_in_the_namespace_needs_no_new_bundle(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![csv("b.v1", "b", "1.0.0").provides("X")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X"), b("b.v2", "b", "beta", "2.0.0").provides("X")])]),
    vec![("s", Want::Install("a.v1"))], vec![("a.v1", "s")])]
#[case::a_head_whose_api_nobody_provides_gives_way_to_an_older_entry(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1").requires("X")])]),
    vec![("s", Want::Install("a.v1"))], vec![("a.v1", "s")])]
#[case::an_upgrade_whose_api_nobody_provides_is_not_taken(
    ns(vec![sub("s", "a", "alpha", "cat").installed("a.v1")], vec![csv("a.v1", "a", "1.0.0")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1").requires("X")])]),
    vec![("s", Want::UpToDate("a.v1"))], vec![])]
#[case::a_required_package_range_picks_a_matching_version(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.package.required", json!({"packageName": "b", "versionRange": "<2.0.0"})),
           b("b.v1", "b", "stable", "1.5.0"), b("b.v2", "b", "stable", "2.0.0").replaces("b.v1")])]),
    vec![("s", Want::Install("a.v1"))], vec![("b.v1", "b-stable-cat-ns"), ("a.v1", "s")])]
#[case::a_required_gvk_property_is_a_dependency(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.gvk.required", json!({"group": "example.com", "version": "v1", "kind": "X"})),
           b("b.v1", "b", "stable", "1.0.0").prop("olm.gvk", json!({"group": "example.com", "version": "v1", "kind": "X"}))])]),
    vec![("s", Want::Install("a.v1"))], vec![("b.v1", "b-stable-cat-ns"), ("a.v1", "s")])]
#[case::an_any_constraint_takes_the_first_alternative_available(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({"failureMessage": "needs a binder", "any": {"constraints": [
               {"package": {"packageName": "missing", "versionRange": ">=1.0.0"}},
               {"package": {"packageName": "c", "versionRange": ">=1.0.0"}}]}})),
           b("c.v1", "c", "stable", "1.0.0")])]),
    vec![("s", Want::Install("a.v1"))], vec![("c.v1", "c-stable-cat-ns"), ("a.v1", "s")])]
#[case::an_any_constraint_with_no_alternative_quotes_its_failure_message(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({"failureMessage": "needs a binder", "any": {"constraints": [
               {"package": {"packageName": "missing", "versionRange": ">=1.0.0"}}]}}))])]),
    vec![("s", Want::Failed("it requires any of [package missing with version in `>=1.0.0`] (\"needs a binder\"), and no bundle in the visible catalogs or the namespace satisfies it"))], vec![])]
#[case::a_required_label_is_met_by_a_bundle_carrying_it(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.label.required", json!({"label": "lts"})),
           b("b.v1", "b", "stable", "1.0.0"),
           b("c.v1", "c", "stable", "1.0.0").prop("olm.label", json!({"label": "lts"}))])]),
    vec![("s", Want::Install("a.v1"))], vec![("c.v1", "c-stable-cat-ns"), ("a.v1", "s")])]
#[case::a_required_label_nobody_carries_is_explained(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.label.required", json!({"label": "lts"})),
           b("c.v1", "c", "stable", "1.0.0").prop("olm.label", json!({"label": "beta"}))])]),
    vec![("s", Want::Failed("it requires a bundle with label `lts`, and no bundle in the visible catalogs or the namespace satisfies it"))], vec![])]
#[case::a_cel_constraint_picks_the_bundle_whose_properties_satisfy_it(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({"failureMessage": "needs a certified store",
               "cel": {"rule": "properties.exists(p, p.type == 'certified' && p.value == 'true')"}})),
           b("b.v1", "b", "stable", "1.0.0").prop("certified", json!("false")),
           b("c.v1", "c", "stable", "1.0.0").prop("certified", json!("true"))])]),
    vec![("s", Want::Install("a.v1"))], vec![("c.v1", "c-stable-cat-ns"), ("a.v1", "s")])]
#[case::a_cel_constraint_nobody_satisfies_quotes_its_failure_message(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({"failureMessage": "needs a certified store",
               "cel": {"rule": "properties.exists(p, p.type == 'certified' && p.value == 'true')"}})),
           b("b.v1", "b", "stable", "1.0.0").prop("certified", json!("false"))])]),
    vec![("s", Want::Failed("it requires a bundle whose properties satisfy `properties.exists(p, p.type == 'certified' && p.value == 'true')` (\"needs a certified store\"), and no bundle in the visible catalogs or the namespace satisfies it"))], vec![])]
#[case::a_cel_constraint_sees_a_provided_api_as_an_olm_gvk_property(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({"failureMessage": "needs a Store API",
               "cel": {"rule": "properties.exists(p, p.type == 'olm.gvk' && p.value.kind == 'Store')"}})),
           b("c.v1", "c", "stable", "1.0.0").provides("Store")])]),
    vec![("s", Want::Install("a.v1"))], vec![("c.v1", "c-stable-cat-ns"), ("a.v1", "s")])]
#[case::a_cel_constraint_with_semver_compare(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({
               "cel": {"rule": "properties.exists(p, p.type == 'olm.package' && p.value.packageName == 'c' && semver_compare(p.value.version, '1.5.0') >= 0)"}})),
           b("c.v1", "c", "stable", "1.0.0").prop("olm.package", json!({"packageName": "c", "version": "1.0.0"})),
           b("c.v2", "c", "stable", "2.0.0").replaces("c.v1").prop("olm.package", json!({"packageName": "c", "version": "2.0.0"}))])]),
    vec![("s", Want::Install("a.v1"))], vec![("c.v2", "c-stable-cat-ns"), ("a.v1", "s")])]
#[case::a_not_constraint_keeps_a_forbidden_package_out(
    ns(vec![sub("a", "a", "alpha", "cat"), sub("c", "c", "stable", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").prop("olm.constraint", json!({"not": {"constraints": [{"package": {"packageName": "c", "versionRange": ">=0.0.0"}}]}})),
           b("c.v1", "c", "stable", "1.0.0")])]),
    vec![("a", Want::Install("a.v1")), ("c", Want::Failed("the constraint none of [package c with version in `>=0.0.0`] of a.v1"))],
    vec![("a.v1", "a")])]
#[case::a_bundle_with_an_unreadable_range_is_passed_over(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0"),
            b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1").prop("olm.package.required", json!({"packageName": "b", "versionRange": "latest"}))])]),
    vec![("s", Want::Install("a.v1"))], vec![("a.v1", "s")])]
#[case::two_providers_of_one_api_cannot_share_a_namespace(
    ns(vec![sub("s", "b", "beta", "cat")], vec![csv("c.v1", "c", "1.0.0").provides("X")],
       vec![cat("cat", NS, 0, vec![b("b.v1", "b", "beta", "1.0.0").provides("X")])]),
    vec![("s", Want::Failed("it provides API X (example.com/v1), which installed c.v1 (version 1.0.0) already provides"))], vec![])]
// Seed 004: "deprecating dependent APIs": B's provider may not drop B while A needs it.
#[case::an_upgrade_that_drops_an_api_a_dependent_needs_is_held_back(
    ns(vec![sub("a", "a", "alpha", "cat").installed("a.v1"), sub("b", "b", "alpha", "cat").installed("b.v1")],
       vec![csv("a.v1", "a", "1.0.0").provides("A").requires("B"), csv("b.v1", "b", "1.0.0").provides("B")],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").provides("A").requires("B"),
            b("b.v1", "b", "alpha", "1.0.0").provides("B"), b("b.v2", "b", "alpha", "2.0.0").replaces("b.v1").provides("C")])]),
    vec![("a", Want::UpToDate("a.v1")), ("b", Want::UpToDate("b.v1"))], vec![])]
#[case::an_upgrade_that_drops_an_api_an_unsubscribed_operator_needs_is_held_back(
    ns(vec![sub("b", "b", "alpha", "cat").installed("b.v1")],
       vec![csv("a.v1", "a", "1.0.0").provides("A").requires("B"), csv("b.v1", "b", "1.0.0").provides("B")],
       vec![cat("cat", NS, 0, vec![b("b.v1", "b", "alpha", "1.0.0").provides("B"), b("b.v2", "b", "alpha", "2.0.0").replaces("b.v1").provides("C")])]),
    vec![("b", Want::UpToDate("b.v1"))], vec![])]
// Seed 004: "version deadlock": both providers move to the new APIs together.
#[case::two_operators_that_need_each_others_new_apis_upgrade_together(
    ns(vec![sub("a", "a", "alpha", "cat").installed("a.v1"), sub("b", "b", "alpha", "cat").installed("b.v1")],
       vec![csv("a.v1", "a", "1.0.0").provides("A").requires("B"), csv("b.v1", "b", "1.0.0").provides("B").requires("A")],
       vec![cat("cat", NS, 0, vec![
           b("a.v1", "a", "alpha", "1.0.0").provides("A").requires("B"), b("a.v2", "a", "alpha", "2.0.0").replaces("a.v1").provides("A2").requires("B2"),
           b("b.v1", "b", "alpha", "1.0.0").provides("B").requires("A"), b("b.v2", "b", "alpha", "2.0.0").replaces("b.v1").provides("B2").requires("A2")])]),
    vec![("a", Want::Upgrade("a.v1", "a.v2")), ("b", Want::Upgrade("b.v1", "b.v2"))], vec![("b.v2", "b"), ("a.v2", "a")])]
// Scenario 24: catalog preference for dependencies.
#[case::a_higher_priority_catalog_provides_the_dependency(
    ns(vec![sub("s", "a", "alpha", "home")], vec![],
       vec![cat("home", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X")]),
            cat("low", NS, 0, vec![b("low.v1", "low", "stable", "1.0.0").provides("X")]),
            cat("high", NS, 10, vec![b("high.v1", "high", "stable", "1.0.0").provides("X")])]),
    vec![("s", Want::Install("a.v1"))], vec![("high.v1", "high-stable-high-ns"), ("a.v1", "s")])]
#[case::the_dependents_own_catalog_beats_a_higher_priority_one(
    ns(vec![sub("s", "a", "alpha", "home")], vec![],
       vec![cat("home", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X"), b("own.v1", "own", "stable", "1.0.0").provides("X")]),
            cat("high", NS, 10, vec![b("high.v1", "high", "stable", "1.0.0").provides("X")])]),
    vec![("s", Want::Install("a.v1"))], vec![("own.v1", "own-stable-home-ns"), ("a.v1", "s")])]
#[case::a_catalog_in_the_namespace_beats_a_global_one_of_equal_priority(
    ns(vec![sub("s", "a", "alpha", "home")], vec![],
       vec![cat("home", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X")]),
            cat("aaa-global", "olm", 0, vec![b("g.v1", "g", "stable", "1.0.0").provides("X")]),
            cat("zzz-local", NS, 0, vec![b("l.v1", "l", "stable", "1.0.0").provides("X")])]),
    vec![("s", Want::Install("a.v1"))], vec![("l.v1", "l-stable-zzz-local-ns"), ("a.v1", "s")])]
#[case::the_default_channel_of_a_provider_is_preferred(
    ns(vec![sub("s", "a", "alpha", "cat")], vec![],
       vec![with_default(cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X"),
            b("p.alpha", "p", "alpha", "1.1.0").provides("X"), b("p.stable", "p", "stable", "1.0.0").provides("X")]), "p", "stable")]),
    vec![("s", Want::Install("a.v1"))], vec![("p.stable", "p-stable-cat-ns"), ("a.v1", "s")])]
// Isolation: an unsatisfiable Subscription does not block an independent one.
#[case::an_unsatisfiable_subscription_does_not_block_an_independent_one(
    ns(vec![sub("broken", "a", "alpha", "cat"), sub("fine", "c", "stable", "cat")], vec![],
       vec![cat("cat", NS, 0, vec![b("a.v1", "a", "alpha", "1.0.0").requires("X"), b("c.v1", "c", "stable", "1.0.0")])]),
    vec![("broken", Want::Failed("it requires API X (example.com/v1), and no bundle")), ("fine", Want::Install("c.v1"))],
    vec![("c.v1", "fine")])]
#[case::a_failing_subscription_keeps_its_installed_csv_so_others_must_fit_around_it(
    ns(vec![sub("a-new", "n", "stable", "cat"), sub("z-old", "z", "stable", "cat").installed("z.v1")],
       vec![csv("z.v1", "z", "1.0.0").provides("X").requires("Y")],
       vec![cat("cat", NS, 0, vec![b("n.v1", "n", "stable", "1.0.0").provides("X"), b("z.v1", "z", "stable", "1.0.0").provides("X").requires("Y")])]),
    vec![("a-new", Want::Failed("it provides API X (example.com/v1), which installed z.v1 (version 1.0.0) already provides")),
         ("z-old", Want::Failed("installed z.v1 (version 1.0.0) was rejected because it requires API Y (example.com/v1)"))],
    vec![])]
#[case::a_subscription_that_clashed_with_a_later_failure_is_retried_and_its_dependency_is_kept(
    ns(vec![sub("a-new", "n", "stable", "cat"), sub("m-p", "p", "stable", "cat").installed("p.v1"), sub("z-q", "q", "stable", "cat").installed("q.v1")],
       vec![csv("p.v1", "p", "1.0.0"), csv("q.v1", "q", "1.0.0").provides("Q")
            .prop_required_package("p", "<2.0.0")],
       vec![cat("cat", NS, 0, vec![b("n.v1", "n", "stable", "1.0.0").provides("Q"),
            b("p.v1", "p", "stable", "1.0.0"), b("p.v2", "p", "stable", "2.0.0").replaces("p.v1"),
            b("q.v1", "q", "stable", "1.0.0").provides("Q")])]),
    vec![("a-new", Want::Failed("it provides API Q (example.com/v1), which installed q.v1 (version 1.0.0) already provides")),
         ("m-p", Want::UpToDate("p.v1")), ("z-q", Want::UpToDate("q.v1"))],
    vec![])]
#[case::installed_operators_that_are_already_broken_do_not_block_an_independent_subscription(
    ns(vec![sub("fine", "c", "stable", "cat")], vec![csv("z.v1", "z", "1.0.0").requires("Gone")],
       vec![cat("cat", NS, 0, vec![b("c.v1", "c", "stable", "1.0.0")])]),
    vec![("fine", Want::Install("c.v1"))], vec![("c.v1", "fine")])]
fn dependencies_resolve_as_olm_does(
    #[case] n: Namespace,
    #[case] want: Vec<(&str, Want)>,
    #[case] steps: Vec<(&str, &str)>,
) {
    check(&n, &want, &steps);
}

#[test]
fn a_dependency_gets_a_subscription_named_as_olm_names_it() {
    let n = ns(
        vec![sub("s", "a", "alpha", "cat")],
        vec![],
        vec![cat(
            "cat",
            NS,
            0,
            vec![
                b("a.v1", "a", "alpha", "1.0.0").requires("X"),
                b("b.v1", "b", "beta", "1.0.0").provides("X"),
            ],
        )],
    );
    let r = resolve(&n, &Options::default());
    assert_eq!(
        r.new_subscriptions,
        vec![NewSubscription {
            name: "b-beta-cat-ns".into(),
            package: "b".into(),
            channel: "beta".into(),
            source: "cat".into(),
            source_namespace: NS.into(),
            starting_csv: "b.v1".into(),
        }]
    );
}

#[test]
fn an_unsatisfiable_subscription_is_explained_in_sentences_and_in_data() {
    let n = ns(
        vec![sub("s", "a", "alpha", "cat")],
        vec![],
        vec![cat(
            "cat",
            NS,
            0,
            vec![
                b("a.v1", "a", "alpha", "1.0.0").requires("X"),
                b("a.v2", "a", "alpha", "2.0.0")
                    .replaces("a.v1")
                    .requires("Y"),
                b("y.v1", "y", "stable", "1.0.0")
                    .provides("Y")
                    .requires("Z"),
            ],
        )],
    );
    let r = resolve(&n, &Options::default());
    let Some(Outcome::Failed { explanation }) = r.outcome("s") else {
        panic!("{r:#?}")
    };
    assert_eq!(
        explanation.message,
        "Subscription s (package a, channel alpha, catalog ns/cat) cannot be resolved. 2 candidate(s) were considered: \
         a.v2 (version 2.0.0, channel alpha, catalog ns/cat) was rejected because it requires API Y (example.com/v1), and all 1 \
         bundle(s) that could satisfy it were rejected: y.v1 (version 1.0.0, channel stable, catalog ns/cat) because \
         it requires API Z (example.com/v1), and no bundle in the visible \
         catalogs or the namespace satisfies it. a.v1 (version 1.0.0, channel alpha, catalog ns/cat) was rejected because it \
         requires API X (example.com/v1), and no bundle in the visible catalogs or the namespace satisfies it."
    );
    let data = serde_json::to_value(explanation).expect("an explanation serializes");
    assert_eq!(data["candidates"][1]["rejected"]["reason"], "unmet");
    assert_eq!(
        data["candidates"][1]["rejected"]["requirement"],
        "API X (example.com/v1)"
    );
    assert_eq!(
        data["candidates"][0]["rejected"]["candidates"][0]["bundle"]["name"],
        "y.v1"
    );
    let back: resolver::Explanation =
        serde_json::from_value(data).expect("an explanation deserializes");
    assert_eq!(&back, explanation.as_ref());
}

#[test]
fn already_broken_installed_operators_are_reported_as_a_warning() {
    let n = ns(
        vec![sub("fine", "c", "stable", "cat")],
        vec![csv("z.v1", "z", "1.0.0").requires("Gone")],
        vec![cat("cat", NS, 0, vec![b("c.v1", "c", "stable", "1.0.0")])],
    );
    let r = resolve(&n, &Options::default());
    assert_eq!(
        r.warnings,
        vec![
            "the installed operators are already inconsistent (it requires keeping installed z.v1 (version 1.0.0), and all 1 bundle(s) \
              that could satisfy it were rejected: installed z.v1 (version 1.0.0) because it requires API Gone (example.com/v1), and no \
              bundle in the visible catalogs or the namespace satisfies it); they are kept as they are"
        ]
    );
}
