//! Table tests of the Subscription status logic (scenarios 26, 27, 33, 34 of spec §8).

use super::*;
use k8s_openapi::jiff::Timestamp;
use rstest::rstest;

fn now() -> Time {
    Time(Timestamp::from_second(1_000).expect("ts"))
}

fn healthy(name: &str) -> CatalogHealth {
    CatalogHealth {
        key: CatalogKey::new(name, "ns"),
        uid: format!("uid-{name}"),
        healthy: true,
        loading: false,
    }
}

/// A catalog still loading its content for the first time.
fn loading(name: &str) -> CatalogHealth {
    CatalogHealth {
        healthy: false,
        loading: true,
        ..healthy(name)
    }
}

fn unhealthy(name: &str) -> CatalogHealth {
    CatalogHealth {
        healthy: false,
        ..healthy(name)
    }
}

fn facts(catalogs: Vec<CatalogHealth>, plan: PlanFacts, current_csv_exists: bool) -> Facts {
    Facts {
        target: CatalogKey::new("cat", "ns"),
        catalogs,
        generated_by: None,
        starting_csv: None,
        plan,
        current_csv_exists,
        installed_csv_exists: true,
        successor: None,
        fail_forward: false,
    }
}

fn found(phase: InstallPlanPhase) -> PlanFacts {
    found_for(phase, &["a.v1"])
}

fn found_for(phase: InstallPlanPhase, csvs: &[&str]) -> PlanFacts {
    PlanFacts::Found {
        phase,
        installed_reason: InstallPlanConditionReason::None,
        message: String::new(),
        csvs: csvs.iter().map(|c| c.to_string()).collect(),
    }
}

fn pending(current: &str) -> SubscriptionStatus {
    let (r, ip) = plan_reference(&PlanRef {
        name: "install-x".into(),
        namespace: "ns".into(),
        uid: "u".into(),
        generation: 1,
    });
    SubscriptionStatus {
        current_csv: current.into(),
        install_plan_ref: Some(r),
        install_plan: Some(ip),
        state: SubscriptionState::UpgradePending,
        ..Default::default()
    }
}

fn cond(s: &SubscriptionStatus, t: T) -> Option<(String, R, String)> {
    s.condition(&t)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[rstest]
#[case::no_catalog_at_all(vec![], ("True", R::NoCatalogSourcesFound, "dependency resolution requires at least one catalogsource"))]
#[case::the_targeted_catalog_is_missing(vec![healthy("other")], ("True", R::UnhealthyCatalogSourceFound, "targeted catalogsource ns/cat missing"))]
#[case::the_targeted_catalog_is_unhealthy(vec![unhealthy("cat")], ("True", R::UnhealthyCatalogSourceFound, "targeted catalogsource ns/cat unhealthy"))]
#[case::another_catalog_is_unhealthy(vec![healthy("cat"), unhealthy("b")], ("True", R::UnhealthyCatalogSourceFound, "unhealthy catalogsources: ns/b"))]
#[case::every_catalog_is_healthy(vec![healthy("cat"), healthy("b")], ("False", R::AllCatalogSourcesHealthy, "all available catalogsources are healthy"))]
#[case::another_catalog_still_loading_is_not_reported(vec![healthy("cat"), loading("b")], ("False", R::AllCatalogSourcesHealthy, "all available catalogsources are healthy"))]
#[case::the_targeted_catalog_still_loading_is_reported(vec![loading("cat")], ("True", R::UnhealthyCatalogSourceFound, "targeted catalogsource ns/cat unhealthy"))]
fn catalog_health_becomes_the_catalog_sources_unhealthy_condition(
    #[case] catalogs: Vec<CatalogHealth>,
    #[case] want: (&str, R, &str),
) {
    let n = catalogs
        .iter()
        .filter(|c| !c.loading || c.key.name == "cat")
        .count();
    let s = before_resolution(
        &SubscriptionStatus::default(),
        &facts(catalogs, PlanFacts::NoRef, false),
        &now(),
    );
    assert_eq!(
        cond(&s, T::CatalogSourcesUnhealthy),
        Some((want.0.to_string(), want.1, want.2.to_string()))
    );
    assert_eq!(s.catalog_health.len(), n);
}

#[rstest]
#[case::a_plan_awaiting_approval_is_pending_with_reason_requires_approval(
    found(InstallPlanPhase::RequiresApproval),
    T::InstallPlanPending,
    R::RequiresApproval
)]
#[case::an_installing_plan_is_pending(
    found(InstallPlanPhase::Installing),
    T::InstallPlanPending,
    R::Installing
)]
#[case::an_unreconciled_plan_is_pending_not_yet_reconciled(
    found(InstallPlanPhase::None),
    T::InstallPlanPending,
    R::InstallPlanNotYetReconciled
)]
#[case::a_failed_plan_reports_the_component_failure(PlanFacts::Found { phase: InstallPlanPhase::Failed, installed_reason: InstallPlanConditionReason::InstallComponentFailed, message: "boom".into(), csvs: vec!["a.v1".into()] }, T::InstallPlanFailed, R::InstallComponentFailed)]
fn the_referenced_plan_shows_on_the_subscription(
    #[case] plan: PlanFacts,
    #[case] t: T,
    #[case] reason: R,
) {
    let s = before_resolution(
        &pending("a.v1"),
        &facts(vec![healthy("cat")], plan, false),
        &now(),
    );
    assert_eq!(
        cond(&s, t).map(|c| (c.0, c.1)),
        Some(("True".to_string(), reason))
    );
    assert_eq!(s.state, SubscriptionState::UpgradePending);
}

/// Scenario 36 (OLM `ensureSubscriptionCSVState`): a failed plan holds the Subscription `UpgradePending` unless
/// the group fails forward; then it is `UpgradeFailed` (resolution runs again), or `AtLatestKnown` on the CSV
/// the plan made.
#[rstest]
#[case::default_a_failed_plan_without_its_csv_holds(
    false,
    InstallPlanPhase::Failed,
    false,
    SubscriptionState::UpgradePending,
    "a.v1"
)]
#[case::default_a_failed_plan_with_its_csv_holds(
    false,
    InstallPlanPhase::Failed,
    true,
    SubscriptionState::UpgradePending,
    "a.v1"
)]
#[case::fail_forward_a_failed_plan_without_its_csv_is_upgrade_failed(
    true,
    InstallPlanPhase::Failed,
    false,
    SubscriptionState::UpgradeFailed,
    "a.v1"
)]
#[case::fail_forward_a_failed_plan_with_its_csv_installed_it(
    true,
    InstallPlanPhase::Failed,
    true,
    SubscriptionState::AtLatestKnown,
    "a.v2"
)]
#[case::fail_forward_an_installing_plan_still_holds(
    true,
    InstallPlanPhase::Installing,
    true,
    SubscriptionState::UpgradePending,
    "a.v1"
)]
fn a_failed_plan_holds_the_subscription_unless_failing_forward(
    #[case] fail_forward: bool,
    #[case] phase: InstallPlanPhase,
    #[case] csv_exists: bool,
    #[case] state: SubscriptionState,
    #[case] installed: &str,
) {
    let mut old = pending("a.v2");
    old.installed_csv = "a.v1".into();
    let f = Facts {
        fail_forward,
        ..facts(vec![healthy("cat")], found(phase), csv_exists)
    };
    let s = before_resolution(&old, &f, &now());
    assert_eq!(
        (s.state.clone(), s.installed_csv.as_str()),
        (state, installed)
    );
}

#[test]
fn a_complete_plan_with_its_csv_present_makes_the_subscription_at_latest_known() {
    let s = before_resolution(
        &pending("a.v1"),
        &facts(
            vec![healthy("cat")],
            found(InstallPlanPhase::Complete),
            true,
        ),
        &now(),
    );
    assert_eq!(
        (s.state.clone(), s.installed_csv.as_str()),
        (SubscriptionState::AtLatestKnown, "a.v1")
    );
    assert!(s.condition(&T::InstallPlanPending).is_none());
}

#[test]
fn a_csv_whose_plan_is_still_installing_keeps_the_subscription_pending() {
    let s = before_resolution(
        &pending("a.v1"),
        &facts(
            vec![healthy("cat")],
            found(InstallPlanPhase::Installing),
            true,
        ),
        &now(),
    );
    assert_eq!(
        (s.state.clone(), s.installed_csv.as_str()),
        (SubscriptionState::UpgradePending, "")
    );
}

#[test]
fn a_failed_plan_leaves_the_subscription_pending_even_if_its_csv_was_created() {
    let s = before_resolution(
        &pending("a.v2"),
        &facts(vec![healthy("cat")], found(InstallPlanPhase::Failed), true),
        &now(),
    );
    assert_eq!(
        (s.state.clone(), s.installed_csv.as_str()),
        (SubscriptionState::UpgradePending, "")
    );
}

#[test]
fn a_deleted_plan_of_a_pending_subscription_resets_it_for_a_fresh_resolution() {
    let s = before_resolution(
        &pending("a.v1"),
        &facts(vec![healthy("cat")], PlanFacts::Missing, false),
        &now(),
    );
    assert_eq!(
        (
            s.state.clone(),
            s.current_csv.as_str(),
            s.install_plan_ref.is_none()
        ),
        (SubscriptionState::None, "", true)
    );
}

#[test]
fn a_deleted_plan_of_an_installed_subscription_is_reported_missing() {
    let mut old = pending("a.v1");
    old.state = SubscriptionState::AtLatestKnown;
    let s = before_resolution(
        &old,
        &facts(vec![healthy("cat")], PlanFacts::Missing, true),
        &now(),
    );
    assert_eq!(
        cond(&s, T::InstallPlanMissing).map(|c| c.1),
        Some(R::ReferencedInstallPlanNotFound)
    );
}

#[test]
fn a_generated_subscription_adopts_the_plan_that_created_it() {
    let mut f = facts(vec![healthy("cat")], PlanFacts::NoRef, false);
    f.generated_by = Some(PlanRef {
        name: "install-a".into(),
        namespace: "ns".into(),
        uid: "u".into(),
        generation: 3,
    });
    f.starting_csv = Some("b.v1".into());
    let s = before_resolution(&SubscriptionStatus::default(), &f, &now());
    assert_eq!(
        (
            s.state.clone(),
            s.current_csv.as_str(),
            s.install_plan_generation
        ),
        (SubscriptionState::UpgradePending, "b.v1", Some(3))
    );
}

#[test]
fn a_resolution_failure_is_explained_and_cleared_when_resolution_succeeds() {
    let mut s = SubscriptionStatus::default();
    after_resolution(
        &mut s,
        &Decided::Failed {
            reason: R::ConstraintsNotSatisfiable,
            message: "no operators found in package a".into(),
        },
        &now(),
    );
    assert_eq!(
        cond(&s, T::ResolutionFailed),
        Some((
            "True".into(),
            R::ConstraintsNotSatisfiable,
            "no operators found in package a".into()
        ))
    );
    after_resolution(&mut s, &Decided::Unchanged, &now());
    assert!(s.condition(&T::ResolutionFailed).is_none());
}

#[test]
fn a_planned_subscription_points_at_its_plan_and_waits() {
    let mut s = SubscriptionStatus::default();
    let plan = PlanRef {
        name: "install-b".into(),
        namespace: "ns".into(),
        uid: "u2".into(),
        generation: 2,
    };
    after_resolution(
        &mut s,
        &Decided::Planned {
            csv: "a.v2".into(),
            plan,
        },
        &now(),
    );
    assert_eq!(
        (
            s.state.clone(),
            s.current_csv.as_str(),
            s.install_plan.as_ref().map(|p| p.name.as_str())
        ),
        (SubscriptionState::UpgradePending, "a.v2", Some("install-b"))
    );
}

#[test]
fn timestamps_alone_do_not_count_as_a_change() {
    let a = before_resolution(
        &SubscriptionStatus::default(),
        &facts(vec![healthy("cat")], PlanFacts::NoRef, false),
        &now(),
    );
    let b = before_resolution(
        &SubscriptionStatus::default(),
        &facts(vec![healthy("cat")], PlanFacts::NoRef, false),
        &Time(Timestamp::from_second(2_000).expect("ts")),
    );
    assert!(same(&a, &b));
}

#[rstest]
#[case::a_complete_plan_that_never_named_the_current_csv_goes_back_to_the_installed_one(
    found_for(InstallPlanPhase::Complete, &["a.v1"]), "a.v2", "a.v1", false, "a.v1", SubscriptionState::AtLatestKnown
)]
#[case::with_nothing_installed_it_starts_over(
    found_for(InstallPlanPhase::Complete, &["a.v1"]), "a.v2", "", false, "", SubscriptionState::None
)]
#[case::a_complete_plan_naming_the_current_csv_waits_for_it_to_show(
    found_for(InstallPlanPhase::Complete, &["a.v2"]), "a.v2", "a.v1", false, "a.v2", SubscriptionState::UpgradePending
)]
#[case::a_plan_in_flight_is_waited_for(
    found_for(InstallPlanPhase::Installing, &["a.v1"]), "a.v2", "a.v1", false, "a.v2", SubscriptionState::UpgradePending
)]
fn a_current_csv_no_plan_will_make_is_not_waited_for(
    #[case] plan: PlanFacts,
    #[case] current: &str,
    #[case] installed: &str,
    #[case] current_exists: bool,
    #[case] want_current: &str,
    #[case] want_state: SubscriptionState,
) {
    let mut old = pending(current);
    old.installed_csv = installed.into();
    // The installed CSV exists (when there is one); the current one as the case says.
    let mut f = facts(vec![healthy("cat")], plan, current_exists);
    f.installed_csv_exists = !installed.is_empty();
    let s = before_resolution(&old, &f, &now());
    assert_eq!(s.current_csv, want_current);
    assert_eq!(s.state, want_state);
}

#[rstest]
#[case::the_current_csv_replaced_by_a_lost_decisions_csv_is_followed(
    Some("a.v3"),
    "a.v3",
    SubscriptionState::AtLatestKnown
)]
#[case::without_a_successor_a_complete_plan_naming_it_waits(
    None,
    "a.v1",
    SubscriptionState::UpgradePending
)]
fn a_subscription_follows_the_chain_past_a_gone_current_csv(
    #[case] successor: Option<&str>,
    #[case] want_current: &str,
    #[case] want_state: SubscriptionState,
) {
    let mut old = pending("a.v1");
    old.installed_csv = "a.v1".into();
    let mut f = facts(
        vec![healthy("cat")],
        found_for(InstallPlanPhase::Complete, &["a.v1"]),
        false,
    );
    f.installed_csv_exists = false;
    f.successor = successor.map(str::to_string);
    let s = before_resolution(&old, &f, &now());
    assert_eq!(s.current_csv, want_current);
    assert_eq!(s.state, want_state);
    if want_state == SubscriptionState::AtLatestKnown {
        assert_eq!(s.installed_csv, want_current);
    }
}

#[rstest]
#[case::no_one_replaces_it(&[], None)]
#[case::one_step(&[("a.v1", "a.v2")], Some("a.v2"))]
#[case::to_the_end_of_the_chain(&[("a.v1", "a.v2"), ("a.v2", "a.v3")], Some("a.v3"))]
#[case::a_cycle_gives_none(&[("a.v1", "a.v2"), ("a.v2", "a.v1")], None)]
fn the_successor_is_the_end_of_the_replaces_chain(
    #[case] edges: &[(&str, &str)],
    #[case] want: Option<&str>,
) {
    let replaced_by: std::collections::BTreeMap<String, String> = edges
        .iter()
        .map(|(from, to)| (from.to_string(), to.to_string()))
        .collect();
    assert_eq!(successor("a.v1", &replaced_by).as_deref(), want);
}

#[rstest]
#[case::a_catalog_turning_unhealthy(vec![healthy("cat"), unhealthy("b")], None, true)]
#[case::a_catalog_added(vec![healthy("cat"), healthy("b"), healthy("c")], None, true)]
#[case::a_new_current_csv(vec![healthy("cat"), healthy("b")], Some("pkg.v2"), false)]
fn only_catalog_health_changes_are_health_only_writes(
    #[case] catalogs: Vec<CatalogHealth>,
    #[case] current: Option<&str>,
    #[case] want: bool,
) {
    let old = before_resolution(
        &pending("pkg.v1"),
        &facts(
            vec![healthy("cat"), healthy("b")],
            found(InstallPlanPhase::Installing),
            false,
        ),
        &now(),
    );
    let mut new = before_resolution(
        &old,
        &facts(catalogs, found(InstallPlanPhase::Installing), false),
        &now(),
    );
    if let Some(csv) = current {
        new.current_csv = csv.into();
    }
    assert!(!same(&old, &new), "the case must change something");
    assert_eq!(health_only(&old, &new), want);
}
