//! Table tests of `plan_namespace`: a namespace as observed (one OperatorGroup, catalog `cat` loaded, the
//! Subscriptions and plans of each case, the resolver's answer) and the bundles the prefetch stage holds, each case
//! named as a sentence, asserting what the run creates, fetches, collects and decides.

use super::*;
use crate::bundle_content::Source;
use crate::bundle_image::{Filled, NotYet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use messages::crd::install_plan::InstallPlanPhase;
use registry::api;
use resolver::{CatalogKey, Explanation, SubscriptionOutcome};
use rstest::rstest;
use serde_json::json;

fn sub(name: &str, manual: bool) -> Arc<Subscription> {
    let mut spec =
        json!({"name": "pkg", "source": "cat", "sourceNamespace": "ns", "channel": "stable"});
    if manual {
        spec["installPlanApproval"] = json!("Manual");
    }
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": spec
        }))
        .expect("subscription"),
    )
}

fn plan_object(
    name: &str,
    csv: &str,
    owner: &str,
    generation: i64,
    phase: Option<InstallPlanPhase>,
) -> Arc<InstallPlan> {
    let mut p: InstallPlan = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                "name": owner, "uid": format!("uid-{owner}")}]},
        "spec": {"clusterServiceVersionNames": [csv], "approval": "Automatic", "approved": true,
            "generation": generation}
    }))
    .expect("plan");
    p.status = phase.map(|phase| InstallPlanStatus {
        phase,
        ..Default::default()
    });
    Arc::new(p)
}

fn step(csv: &str, owner: &str) -> BundleStep {
    BundleStep {
        name: csv.into(),
        package: "pkg".into(),
        channel: "stable".into(),
        version: "1.0.0".into(),
        catalog: CatalogKey::new("cat", "ns"),
        bundle_path: String::new(),
        replaces: None,
        subscription: owner.into(),
    }
}

fn install(sub: &str, csv: &str) -> SubscriptionOutcome {
    SubscriptionOutcome {
        name: sub.into(),
        outcome: resolver::Outcome::Install { csv: csv.into() },
    }
}

/// A bundle with its objects inline, ready to be planned.
fn ready(csv: &str) -> Fetch {
    let manifest = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": csv}, "spec": {"install": {"strategy": "deployment", "spec": {"deployments": []}}}});
    let bundle = api::Bundle {
        csv_name: csv.into(),
        csv_json: manifest.to_string(),
        object: vec![manifest.to_string()],
        ..Default::default()
    };
    Fetch::Ready(Arc::new(Filled {
        bundle,
        source: Source::default(),
        lookup: None,
    }))
}

/// One Subscription `sub` in namespace `ns` with its OperatorGroup, catalog `cat` loaded and healthy, resolved to
/// install `a.v1` for it; nothing else.
fn observed() -> Observed {
    Observed {
        namespace: "ns".into(),
        now: Time(Timestamp::from_second(1_000).expect("time")),
        subs: vec![sub("sub", false)],
        plans: Vec::new(),
        csvs: Vec::new(),
        csv_names: BTreeSet::new(),
        replaced_by: BTreeMap::new(),
        packages: BTreeMap::new(),
        groups: 1,
        fail_forward: false,
        visible: vec!["ns".into()],
        health: vec![crate::catalog_health::CatalogHealth {
            key: CatalogKey::new("cat", "ns"),
            uid: "uid-cat".into(),
            healthy: true,
            loading: false,
        }],
        loading: Vec::new(),
        notices: BTreeMap::new(),
        trace: BTreeMap::new(),
        resolution: Some(Resolution {
            subscriptions: vec![install("sub", "a.v1")],
            steps: vec![step("a.v1", "sub")],
            ..Default::default()
        }),
        confirmed_csvs: BTreeSet::new(),
        orphans: BTreeSet::new(),
    }
}

type Fact = fn(&mut Observed, &mut BTreeMap<BundleId, Fetch>);

fn nothing_fetched(_: &mut Observed, _: &mut BTreeMap<BundleId, Fetch>) {}
fn fetched(_: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    f.insert(BundleId::of(&step("a.v1", "sub")), ready("a.v1"));
}
fn catalog_refused(_: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    f.insert(
        BundleId::of(&step("a.v1", "sub")),
        Fetch::Failed("catalog ns/cat is not serving".into()),
    );
}
fn image_pulling(_: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    let pending = NotYet::Pending {
        image: "quay.io/a:1".into(),
    };
    f.insert(BundleId::of(&step("a.v1", "sub")), Fetch::NotYet(pending));
}
fn manual(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    o.subs = vec![sub("sub", true)];
    fetched(o, f);
}
fn two_groups(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    o.groups = 2;
    fetched(o, f);
}
fn catalog_loading(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    o.loading = vec!["ns/cat".into()];
    o.resolution = None;
    fetched(o, f);
}
fn unsatisfiable(o: &mut Observed, _: &mut BTreeMap<BundleId, Fetch>) {
    o.resolution = Some(Resolution {
        subscriptions: vec![SubscriptionOutcome {
            name: "sub".into(),
            outcome: resolver::Outcome::Failed {
                explanation: Box::new(Explanation {
                    subscription: "sub".into(),
                    package: "pkg".into(),
                    channel: "stable".into(),
                    catalog: CatalogKey::new("cat", "ns"),
                    no_candidates: None,
                    candidates: Vec::new(),
                    message: "no operators found in package pkg".into(),
                }),
            },
        }],
        ..Default::default()
    });
}
fn plan_being_carried_out(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    o.plans = vec![plan_object(
        "install-old",
        "a.v1",
        "sub",
        1,
        Some(InstallPlanPhase::Installing),
    )];
    fetched(o, f);
}
fn plan_left_without_status(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    o.plans = vec![plan_object("install-old", "a.v1", "sub", 1, None)];
    fetched(o, f);
}
/// The Subscription already points at its plan, which has no status: `orphan` says whether this process holds
/// the plan's first status to write (no: its creator died between the two writes, e.g. a leader that lost its
/// Lease).
fn pointed_at_a_plan_without_status(
    o: &mut Observed,
    f: &mut BTreeMap<BundleId, Fetch>,
    orphan: bool,
) {
    plan_left_without_status(o, f);
    let mut s = (*sub("sub", false)).clone();
    s.status = Some(SubscriptionStatus {
        state: SubscriptionState::UpgradePending,
        current_csv: "a.v1".into(),
        install_plan_ref: Some(k8s_openapi::api::core::v1::ObjectReference {
            name: Some("install-old".into()),
            ..Default::default()
        }),
        install_plan: Some(messages::crd::subscription::InstallPlanReference {
            name: "install-old".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    o.subs = vec![Arc::new(s)];
    if orphan {
        o.orphans.insert("install-old".into());
    }
}
fn pointed_at_an_orphan(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    pointed_at_a_plan_without_status(o, f, true);
}
fn pointed_at_a_plan_being_handed_over(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    pointed_at_a_plan_without_status(o, f, false);
}
fn six_old_plans(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    o.plans = (1..=6)
        .map(|g| {
            plan_object(
                &format!("install-{g}"),
                &format!("old.v{g}"),
                "gone",
                g,
                Some(InstallPlanPhase::Complete),
            )
        })
        .collect();
    fetched(o, f);
}
fn no_subscriptions(o: &mut Observed, f: &mut BTreeMap<BundleId, Fetch>) {
    six_old_plans(o, f);
    o.subs.clear();
}

/// What a case expects: plans made (create or finish), bundles fetched, plans collected, the Subscription's
/// state and the reason of its failing condition, and the requeue.
#[derive(Debug, PartialEq)]
struct Expect {
    make: &'static [(&'static str, bool)],
    fetch: &'static [&'static str],
    gc: &'static [&'static str],
    state: &'static str,
    condition: Option<&'static str>,
    requeue: Option<Duration>,
}

const NONE: &[&str] = &[];

/// (plans made with whether created, bundles fetched, plans collected, state, condition reason, requeue).
type Summary = (
    Vec<(String, bool)>,
    Vec<String>,
    Vec<String>,
    String,
    Option<String>,
    Option<Duration>,
);

fn summary(plan: &NamespacePlan) -> Summary {
    let make = plan
        .plans
        .iter()
        .map(|p| {
            (
                p.plan.spec.cluster_service_version_names.join(","),
                p.create,
            )
        })
        .collect();
    let fetch = plan.fetch.iter().map(|b| b.name.clone()).collect();
    let st = plan
        .statuses
        .first()
        .map(|s| s.new.clone())
        .unwrap_or_default();
    let condition = st
        .conditions
        .iter()
        .find(|c| {
            c.status == "True" && c.type_ != SubscriptionConditionType::CatalogSourcesUnhealthy
        })
        .map(|c| c.reason.as_str().to_string());
    (
        make,
        fetch,
        plan.gc.clone(),
        st.state.as_str().to_string(),
        condition,
        plan.requeue,
    )
}

#[rstest]
#[case::a_new_subscription_first_fetches_its_bundle(nothing_fetched, Expect { make: &[], fetch: &["a.v1"], gc: NONE, state: "", condition: None, requeue: None })]
#[case::a_fetched_bundle_becomes_an_automatic_plan(fetched, Expect { make: &[("a.v1", true)], fetch: NONE, gc: NONE, state: "", condition: None, requeue: None })]
#[case::a_manual_subscription_gets_a_manual_plan(manual, Expect { make: &[("a.v1", true)], fetch: NONE, gc: NONE, state: "", condition: None, requeue: None })]
#[case::a_bundle_its_catalog_refused_fails_the_subscription_and_retries(catalog_refused, Expect { make: &[], fetch: NONE, gc: NONE, state: "", condition: Some("ErrorPreventedResolution"), requeue: Some(BUNDLE_RETRY) })]
#[case::an_image_still_pulling_shows_unpacking(image_pulling, Expect { make: &[], fetch: NONE, gc: NONE, state: "", condition: Some("UnpackingInProgress"), requeue: Some(Duration::from_secs(5)) })]
#[case::two_operator_groups_prevent_resolution(two_groups, Expect { make: &[], fetch: NONE, gc: NONE, state: "", condition: Some("ErrorPreventedResolution"), requeue: None })]
#[case::a_loading_catalog_holds_resolution_back(catalog_loading, Expect { make: &[], fetch: NONE, gc: NONE, state: "", condition: None, requeue: None })]
#[case::an_unsatisfiable_subscription_fails_without_a_plan(unsatisfiable, Expect { make: &[], fetch: NONE, gc: NONE, state: "", condition: Some("ConstraintsNotSatisfiable"), requeue: None })]
#[case::a_plan_being_carried_out_for_the_step_is_reused(plan_being_carried_out, Expect { make: &[], fetch: NONE, gc: NONE, state: "UpgradePending", condition: Some("Installing"), requeue: None })]
#[case::a_plan_left_without_status_is_finished_not_duplicated(plan_left_without_status, Expect { make: &[("a.v1", false)], fetch: NONE, gc: NONE, state: "", condition: None, requeue: None })]
#[case::an_orphan_the_subscription_points_at_is_finished_by_the_next_leader(pointed_at_an_orphan, Expect { make: &[("a.v1", false)], fetch: NONE, gc: NONE, state: "UpgradePending", condition: Some("InstallPlanNotYetReconciled"), requeue: None })]
#[case::a_plan_whose_first_status_this_process_hands_over_is_left_to_its_actor(pointed_at_a_plan_being_handed_over, Expect { make: &[], fetch: NONE, gc: NONE, state: "UpgradePending", condition: Some("InstallPlanNotYetReconciled"), requeue: None })]
#[case::plans_beyond_five_are_collected_oldest_first(six_old_plans, Expect { make: &[("a.v1", true)], fetch: NONE, gc: &["install-1"], state: "", condition: None, requeue: None })]
#[case::a_namespace_without_subscriptions_only_collects(no_subscriptions, Expect { make: &[], fetch: NONE, gc: &["install-1"], state: "", condition: None, requeue: None })]
fn plan_namespace_table(#[case] fact: Fact, #[case] expect: Expect) {
    let mut o = observed();
    let mut f = BTreeMap::new();
    fact(&mut o, &mut f);
    let got = summary(&plan_namespace(&o, &f));
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let want = (
        expect
            .make
            .iter()
            .map(|(c, create)| (c.to_string(), *create))
            .collect::<Vec<_>>(),
        owned(expect.fetch),
        owned(expect.gc),
        expect.state.to_string(),
        expect.condition.map(str::to_string),
        expect.requeue,
    );
    assert_eq!(got, want);
}

#[test]
fn a_new_plan_is_owned_by_its_subscription_and_carries_its_first_status() {
    let mut o = observed();
    let mut f = BTreeMap::new();
    manual(&mut o, &mut f);
    let plan = plan_namespace(&o, &f);
    let new = plan.plans.first().expect("a plan");
    assert_eq!(new.members, [("sub".to_string(), "a.v1".to_string())]);
    assert!(new.plan.spec.approval.is_manual() && !new.plan.spec.approved);
    assert_eq!(new.plan.spec.generation, Some(1));
    let owners: Vec<&str> = new
        .plan
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.uid.as_str())
        .collect();
    assert_eq!(owners, ["uid-sub"]);
    assert_eq!(new.status.phase, InstallPlanPhase::RequiresApproval);
    assert_eq!(new.status.plan.len(), 1, "the CSV's step");
    assert!(new.plan.status.is_none(), "its actor writes the status");
    assert_eq!(
        plan.consumed,
        BTreeSet::from([BundleId::of(&step("a.v1", "sub"))])
    );
}

#[test]
fn a_subscription_waiting_on_its_plan_is_not_resolved_again() {
    let mut o = observed();
    o.plans = vec![plan_object(
        "install-old",
        "a.v1",
        "sub",
        1,
        Some(InstallPlanPhase::Installing),
    )];
    let mut s = (*sub("sub", false)).clone();
    s.status = Some(SubscriptionStatus {
        state: SubscriptionState::UpgradePending,
        current_csv: "a.v1".into(),
        install_plan_ref: Some(Default::default()),
        install_plan: Some(messages::crd::subscription::InstallPlanReference {
            name: "install-old".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    o.subs = vec![Arc::new(s)];
    let before = before(&o);
    assert!(!wants_resolution(&o, &before));
}

/// Two bundles in one plan: the one fetched is kept (not fetched again) while the other is fetched, and an image
/// still pulling is read once both are here.
#[test]
fn a_step_of_two_bundles_waits_for_both_without_using_up_the_first() {
    let mut o = observed();
    o.subs = vec![sub("sub", false), sub("other", false)];
    o.resolution = Some(Resolution {
        subscriptions: vec![install("sub", "a.v1"), install("other", "b.v1")],
        steps: vec![step("a.v1", "sub"), step("b.v1", "other")],
        ..Default::default()
    });
    let mut f = BTreeMap::new();
    image_pulling(&mut o, &mut f);
    let plan = plan_namespace(&o, &f);
    let fetch: Vec<&str> = plan.fetch.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(fetch, ["b.v1"]);
    assert!(plan.consumed.is_empty(), "{:?}", plan.consumed);
    assert_eq!(
        plan.waiting,
        BTreeSet::from(["other".to_string(), "sub".to_string()])
    );
    f.insert(BundleId::of(&step("b.v1", "other")), ready("b.v1"));
    let plan = plan_namespace(&o, &f);
    assert!(plan.fetch.is_empty());
    let both = [
        BundleId::of(&step("a.v1", "sub")),
        BundleId::of(&step("b.v1", "other")),
    ];
    assert_eq!(
        plan.consumed,
        BTreeSet::from(both),
        "the pulling one read, the other made into a plan"
    );
    let made: Vec<String> = plan
        .plans
        .iter()
        .map(|p| p.plan.spec.cluster_service_version_names.join(","))
        .collect();
    assert_eq!(
        made,
        ["b.v1"],
        "the other Subscription goes on without the pulling one"
    );
}

/// The resolver reads a Subscription waiting on its plan as installed at its current CSV once that CSV exists
/// (else it offers the same bundle beside it and reports a package conflict); before that, as it was.
#[rstest]
#[case::its_csv_in_the_namespace("", &["a.v1"], "a.v1")]
#[case::before_its_csv_is_made("", &[], "")]
#[case::an_upgrade_whose_csv_exists("a.v0", &["a.v0", "a.v1"], "a.v1")]
#[case::an_upgrade_before_its_csv_is_made("a.v0", &["a.v0"], "a.v0")]
fn the_resolver_reads_a_pending_subscription_as_installed_once_its_csv_exists(
    #[case] installed_before: &str,
    #[case] csvs: &[&str],
    #[case] read_as_installed: &str,
) {
    let mut o = observed();
    o.csv_names = csvs.iter().map(|c| c.to_string()).collect();
    o.plans = vec![plan_object(
        "install-new",
        "a.v1",
        "sub",
        1,
        Some(InstallPlanPhase::Installing),
    )];
    let mut s = (*sub("sub", false)).clone();
    s.status = Some(SubscriptionStatus {
        state: SubscriptionState::UpgradePending,
        current_csv: "a.v1".into(),
        installed_csv: installed_before.into(),
        install_plan_ref: Some(k8s_openapi::api::core::v1::ObjectReference {
            name: Some("install-new".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    o.subs = vec![Arc::new(s)];
    let before = before(&o);
    let input = resolver_input(&o, &before);
    let read = input[0].status.as_ref().expect("status");
    assert_eq!(read.installed_csv, read_as_installed);
    // The Subscription itself still waits on its plan, its installed CSV unchanged.
    assert_eq!(before[0].1.state, SubscriptionState::UpgradePending);
    assert_eq!(before[0].1.installed_csv, installed_before);
}
