//! Table tests of `decide`: every phase × the facts it reads, each case named as a sentence, asserting the
//! phase, the reason, and the effects.

use super::*;
use crate::csv::facts::{Neighbour, OwnerConflict, Requirements};
use CsvPhase as P;
use CsvReason as R;
use rstest::rstest;

/// A CSV at `phase` with nothing wrong around it: the base every case changes (handover_tests.rs too).
pub(super) fn observed(phase: CsvPhase, reason: CsvReason) -> Observed {
    Observed {
        phase,
        reason,
        copied: false,
        since_transition: Some(Duration::from_secs(10)),
        cluster_changed: false,
        operator_condition_stale: false,
        not_upgradeable: None,
        spec: SpecCheck::Valid,
        group: GroupFit::Fits { annotate: None },
        requirements: Requirements::met(),
        owner_conflict: None,
        replaces: None,
        replaced_by: None,
        fail_forward: false,
        chain_head: None,
        older_not_handed_over: None,
        install: InstallStatus::Healthy,
        served: Default::default(),
    }
}

type Fact = fn(&mut Observed);

fn none(_: &mut Observed) {}
fn copied(o: &mut Observed) {
    o.copied = true;
}
fn no_group(o: &mut Observed) {
    o.group = GroupFit::NoOperatorGroup;
}
fn two_groups(o: &mut Observed) {
    o.group = GroupFit::TooManyOperatorGroups;
}
fn no_targets(o: &mut Observed) {
    o.group = GroupFit::NoTargetNamespaces;
}
fn unsupported_group(o: &mut Observed) {
    o.group = GroupFit::Unsupported(
        "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces"
            .into(),
    );
}
fn duplicate_modes(o: &mut Observed) {
    o.group = GroupFit::InvalidInstallModes(
        "install modes of the csv contain OwnNamespace more than once".into(),
    );
}
fn group_annotations_missing(o: &mut Observed) {
    o.group = GroupFit::Fits {
        annotate: Some(BTreeMap::from([("olm.operatorGroup".into(), "og".into())])),
    };
}
fn invalid_strategy(o: &mut Observed) {
    o.spec = SpecCheck::InvalidStrategy("unsupported install strategy \"helm\"".into());
}
fn bad_version(o: &mut Observed) {
    o.spec = SpecCheck::BadVersion("spec.version \"one\" is not a semantic version".into());
}
fn replaces_cycle(o: &mut Observed) {
    o.spec = SpecCheck::ReplacesCycle(vec!["a".into(), "b".into(), "a".into()]);
}
fn bad_crd_name(o: &mut Observed) {
    o.spec = SpecCheck::BadCrdName("widgets".into());
}
fn requirements_unmet(o: &mut Observed) {
    o.requirements = Requirements::unmet();
}
fn owner_conflict(o: &mut Observed) {
    o.owner_conflict = Some(OwnerConflict::Crd(
        "other also owns widgets.example.com".into(),
    ));
}
fn deployment_owned_elsewhere(o: &mut Observed) {
    o.owner_conflict = Some(OwnerConflict::Deployment {
        deployment: "op".into(),
        owner: "other.v3".into(),
    });
}
fn invalid_webhook(o: &mut Observed) {
    o.served.invalid = Some("CSV contains repeated WebhookDescription name".into());
}
fn api_service_owned_elsewhere(o: &mut Observed) {
    o.served.api_service_conflict = Some("v1.x.io".into());
}
fn certs_due(o: &mut Observed) {
    o.served.rotate_in = Some(Duration::ZERO);
}
fn certs_fresh(o: &mut Observed) {
    o.served.rotate_in = Some(Duration::from_secs(3600));
}
fn rotated_and_settled(o: &mut Observed) {
    o.served.settle_in = Some(Duration::ZERO);
}
fn rotated_just_now(o: &mut Observed) {
    o.served.settle_in = Some(Duration::from_secs(3));
}
fn rotated_but_still_rolling(o: &mut Observed) {
    o.served.settle_in = Some(Duration::ZERO);
    o.install = InstallStatus::Waiting("waiting for deployment op to become ready".into());
}
fn replaces_succeeded(o: &mut Observed) {
    o.replaces = Some(Neighbour::new("a.v1", P::Succeeded));
}
fn replaces_replacing(o: &mut Observed) {
    o.replaces = Some(Neighbour::new("a.v1", P::Replacing));
}
fn replaced_by_pending(o: &mut Observed) {
    o.replaced_by = Some(Neighbour::new("a.v3", P::Pending));
}
fn replaced_by_succeeded(o: &mut Observed) {
    o.replaced_by = Some(Neighbour::new("a.v3", P::Succeeded));
}
fn replaced_by_a_replacing_csv_whose_head_succeeded(o: &mut Observed) {
    o.replaced_by = Some(Neighbour::new("a.v2", P::Replacing));
    o.chain_head = Some(Neighbour::new("a.v3", P::Succeeded));
}
fn replaced_by_a_replacing_csv_whose_head_installs(o: &mut Observed) {
    o.replaced_by = Some(Neighbour::new("a.v2", P::Replacing));
    o.chain_head = Some(Neighbour::new("a.v3", P::Installing));
}
fn replaced_by_failed(o: &mut Observed) {
    o.replaced_by = Some(Neighbour::new("a.v3", P::Failed));
}
fn replaced_by_succeeded_but_still_replacing(o: &mut Observed) {
    o.replaced_by = Some(Neighbour::new("a.v3", P::Succeeded));
    o.replaces = Some(Neighbour::new("a.v1", P::Deleting));
}
fn deployment_missing(o: &mut Observed) {
    o.install = InstallStatus::Missing("deployment op not found".into());
}
fn missing_just_after_install(o: &mut Observed) {
    o.install = InstallStatus::Missing("deployment op not found".into());
    o.since_transition = Some(Duration::from_secs(1));
}
fn an_older_csv_of_the_chain_still_installing(o: &mut Observed) {
    o.replaces = Some(Neighbour::new("a.v2", P::Replacing));
    o.older_not_handed_over = Some(Neighbour::new("a.v1", P::Installing));
}
fn replaced_csv_not_upgradeable(o: &mut Observed) {
    o.replaces = Some(Neighbour::new("a.v1", P::Replacing));
    o.not_upgradeable = Some("migrating".into());
}
fn operator_condition_missing(o: &mut Observed) {
    o.operator_condition_stale = true;
}
fn cluster_changed(o: &mut Observed) {
    o.cluster_changed = true;
}
fn deployment_waiting(o: &mut Observed) {
    o.install = InstallStatus::Waiting("waiting for deployment op to become ready".into());
}
fn deployment_drifted(o: &mut Observed) {
    o.install = InstallStatus::Drifted("deployment op changed old hash=a, new hash=b".into());
}
fn deployment_deadline(o: &mut Observed) {
    o.install = InstallStatus::Unrecoverable("deployment op exceeded its progress deadline".into());
}
fn waiting_past_the_timeout(o: &mut Observed) {
    o.install = InstallStatus::Waiting("waiting for deployment op to become ready".into());
    o.since_transition = Some(INSTALL_TIMEOUT + Duration::from_secs(1));
}
fn drifted_past_the_timeout(o: &mut Observed) {
    o.install = InstallStatus::Drifted("deployment op changed old hash=a, new hash=b".into());
    o.since_transition = Some(INSTALL_TIMEOUT + Duration::from_secs(1));
}

use Effect::{
    AnnotateGroup, CountUpgrade, DeleteSelf, EnsureOperatorCondition, EnsureRbac, Install,
    SettleCaBundles,
};

#[rstest]
// Pre-phase checks.
#[case::a_copied_csv_is_never_transitioned(P::Pending, R::RequirementsUnknown, copied, None, &[])]
#[case::a_no_retry_failure_stays_failed(P::Failed, R::InstallComponentFailedNoRetry, none, None, &[])]
#[case::a_no_retry_failure_goes_back_to_pending_when_its_group_changed(P::Failed, R::InstallComponentFailedNoRetry, cluster_changed, Some((P::Pending, R::DetectedClusterChange)), &[])]
#[case::a_bad_crd_name_silently_stops_the_sync(P::Pending, R::RequirementsUnknown, bad_crd_name, None, &[])]
#[case::a_deleting_csv_deletes_itself_even_without_a_group(P::Deleting, R::Replaced, no_group, None, &[DeleteSelf])]
#[case::a_csv_without_operator_group_fails(P::None, R::None, no_group, Some((P::Failed, R::NoOperatorGroup)), &[])]
#[case::a_csv_beside_two_operator_groups_fails(P::Succeeded, R::InstallSucceeded, two_groups, Some((P::Failed, R::TooManyOperatorGroups)), &[])]
#[case::a_group_with_zero_targets_fails_the_csv(P::Pending, R::RequirementsUnknown, no_targets, Some((P::Failed, R::NoTargetNamespaces)), &[])]
#[case::an_unsupported_group_fails_the_csv(P::Installing, R::InstallWaiting, unsupported_group, Some((P::Failed, R::UnsupportedOperatorGroup)), &[])]
#[case::duplicated_install_modes_fail_the_csv(P::None, R::None, duplicate_modes, Some((P::Failed, R::InvalidInstallModes)), &[])]
#[case::a_csv_already_failed_for_its_group_is_not_rewritten(P::Failed, R::NoOperatorGroup, no_group, None, &[])]
// None.
#[case::a_new_csv_goes_pending_with_unknown_requirements(P::None, R::None, none, Some((P::Pending, R::RequirementsUnknown)), &[])]
#[case::a_new_csv_gets_its_group_annotations(P::None, R::None, group_annotations_missing, Some((P::Pending, R::RequirementsUnknown)), &[AnnotateGroup(BTreeMap::from([("olm.operatorGroup".into(), "og".into())]))])]
#[case::a_new_csv_with_an_invalid_strategy_first_goes_pending(P::None, R::None, invalid_strategy, Some((P::Pending, R::RequirementsUnknown)), &[])]
// Spec problems.
#[case::a_pending_csv_with_an_invalid_strategy_fails(P::Pending, R::RequirementsUnknown, invalid_strategy, Some((P::Failed, R::InvalidInstallStrategy)), &[])]
#[case::a_pending_csv_with_a_bad_version_fails(P::Pending, R::RequirementsUnknown, bad_version, Some((P::Failed, R::RequirementsNotMet)), &[])]
#[case::a_pending_csv_in_a_replaces_cycle_fails(P::Pending, R::RequirementsUnknown, replaces_cycle, Some((P::Failed, R::RequirementsNotMet)), &[])]
#[case::a_succeeded_csv_whose_strategy_became_invalid_fails(P::Succeeded, R::InstallSucceeded, invalid_strategy, Some((P::Failed, R::InvalidInstallStrategy)), &[])]
#[case::a_failed_csv_with_a_still_invalid_strategy_keeps_failing(P::Failed, R::InvalidInstallStrategy, invalid_strategy, Some((P::Failed, R::InvalidInstallStrategy)), &[])]
// Pending.
#[case::pending_with_all_requirements_met_becomes_install_ready(P::Pending, R::RequirementsUnknown, none, Some((P::InstallReady, R::AllRequirementsMet)), &[EnsureRbac])]
#[case::pending_replacing_a_csv_that_is_not_upgradeable_waits_with_olms_reason(P::Pending, R::RequirementsUnknown, replaced_csv_not_upgradeable, Some((P::Pending, R::OperatorConditionNotUpgradeable)), &[])]
#[case::a_missing_operator_condition_is_ensured_on_the_way(P::Pending, R::RequirementsUnknown, operator_condition_missing, Some((P::InstallReady, R::AllRequirementsMet)), &[EnsureOperatorCondition, EnsureRbac])]
#[case::pending_with_unmet_requirements_stays_pending(P::Pending, R::RequirementsUnknown, requirements_unmet, Some((P::Pending, R::RequirementsNotMet)), &[EnsureRbac])]
#[case::pending_with_a_crd_owned_by_an_unrelated_csv_fails(P::Pending, R::RequirementsUnknown, owner_conflict, Some((P::Failed, R::OwnerConflict)), &[EnsureRbac])]
#[case::pending_with_a_deployment_owned_by_an_unrelated_csv_fails(P::Pending, R::RequirementsUnknown, deployment_owned_elsewhere, Some((P::Failed, R::OwnerConflict)), &[EnsureRbac])]
#[case::pending_with_an_invalid_webhook_fails_before_installing(P::Pending, R::RequirementsUnknown, invalid_webhook, Some((P::Failed, R::InvalidWebhookDescription)), &[EnsureRbac])]
#[case::pending_with_an_api_service_owned_elsewhere_fails(P::Pending, R::RequirementsUnknown, api_service_owned_elsewhere, Some((P::Failed, R::OwnerConflict)), &[EnsureRbac])]
#[case::pending_replacing_a_csv_that_has_not_handed_over_waits(P::Pending, R::RequirementsUnknown, replaces_succeeded, None, &[EnsureRbac])]
#[case::pending_with_a_newer_csv_already_there_hands_over_without_installing(P::Pending, R::RequirementsUnknown, replaced_by_pending, Some((P::Replacing, R::BeingReplaced)), &[CountUpgrade])]
#[case::pending_with_a_failed_newer_csv_hands_over_as_olm_does(P::Pending, R::RequirementsUnknown, replaced_by_failed, Some((P::Replacing, R::BeingReplaced)), &[CountUpgrade])]
#[case::pending_waits_for_every_older_csv_of_the_chain_to_hand_over(P::Pending, R::RequirementsUnknown, an_older_csv_of_the_chain_still_installing, None, &[EnsureRbac])]
#[case::installing_with_a_newer_csv_hands_over_at_once(P::Installing, R::InstallWaiting, replaced_by_pending, Some((P::Replacing, R::BeingReplaced)), &[CountUpgrade])]
#[case::install_ready_with_a_newer_csv_hands_over_without_installing(P::InstallReady, R::AllRequirementsMet, replaced_by_pending, Some((P::Replacing, R::BeingReplaced)), &[CountUpgrade])]
#[case::pending_replacing_a_csv_that_is_replacing_proceeds(P::Pending, R::RequirementsUnknown, replaces_replacing, Some((P::InstallReady, R::AllRequirementsMet)), &[EnsureRbac])]
// InstallReady.
#[case::install_ready_installs_and_goes_installing(P::InstallReady, R::AllRequirementsMet, none, Some((P::Installing, R::InstallSucceeded)), &[Install])]
// Installing.
#[case::installing_with_healthy_deployments_succeeds(P::Installing, R::InstallSucceeded, none, Some((P::Succeeded, R::InstallSucceeded)), &[])]
#[case::installing_with_a_deployment_not_ready_waits(P::Installing, R::InstallSucceeded, deployment_waiting, Some((P::Installing, R::InstallWaiting)), &[])]
#[case::installing_with_a_deployment_deleted_since_fails_as_unhealthy(P::Installing, R::InstallSucceeded, deployment_missing, Some((P::Failed, R::ComponentUnhealthy)), &[])]
#[case::installing_with_a_deployment_missing_just_after_the_install_waits_for_the_store(P::Installing, R::InstallSucceeded, missing_just_after_install, None, &[])]
#[case::installing_with_a_drifted_deployment_reinstalls(P::Installing, R::InstallWaiting, deployment_drifted, Some((P::InstallReady, R::InstallWaiting)), &[])]
#[case::installing_past_the_progress_deadline_fails(P::Installing, R::InstallWaiting, deployment_deadline, Some((P::Failed, R::InstallCheckFailed)), &[])]
#[case::installing_past_the_install_timeout_fails(P::Installing, R::InstallWaiting, waiting_past_the_timeout, Some((P::Failed, R::InstallCheckFailed)), &[])]
#[case::installing_drift_past_the_timeout_still_reinstalls(P::Installing, R::InstallWaiting, drifted_past_the_timeout, Some((P::InstallReady, R::InstallWaiting)), &[])]
#[case::installing_a_rotation_rolled_out_drops_the_previous_ca(P::Installing, R::InstallSucceeded, rotated_and_settled, Some((P::Installing, R::InstallWaiting)), &[SettleCaBundles])]
#[case::installing_a_rotation_just_rolled_out_waits_to_drop_the_previous_ca(P::Installing, R::InstallSucceeded, rotated_just_now, Some((P::Installing, R::InstallWaiting)), &[])]
#[case::installing_a_rotation_still_rolling_keeps_both_cas(P::Installing, R::InstallSucceeded, rotated_but_still_rolling, Some((P::Installing, R::InstallWaiting)), &[])]
// Succeeded.
#[case::succeeded_with_a_previous_ca_left_in_the_bundles_drops_it(P::Succeeded, R::InstallSucceeded, rotated_and_settled, None, &[SettleCaBundles])]
#[case::succeeded_and_healthy_stays_succeeded(P::Succeeded, R::InstallSucceeded, none, Some((P::Succeeded, R::InstallSucceeded)), &[])]
#[case::succeeded_with_a_replacer_goes_replacing_and_counts_an_upgrade(P::Succeeded, R::InstallSucceeded, replaced_by_pending, Some((P::Replacing, R::BeingReplaced)), &[CountUpgrade])]
#[case::succeeded_with_requirements_gone_fails(P::Succeeded, R::InstallSucceeded, requirements_unmet, Some((P::Failed, R::RequirementsNotMet)), &[])]
#[case::succeeded_with_a_deleted_deployment_fails_as_unhealthy(P::Succeeded, R::InstallSucceeded, deployment_missing, Some((P::Failed, R::ComponentUnhealthy)), &[])]
#[case::succeeded_with_a_drifted_deployment_reinstalls(P::Succeeded, R::InstallSucceeded, deployment_drifted, Some((P::InstallReady, R::ComponentUnhealthy)), &[])]
#[case::succeeded_with_certificates_due_rotates_them(P::Succeeded, R::InstallSucceeded, certs_due, Some((P::Pending, R::NeedsCertRotation)), &[])]
#[case::succeeded_with_fresh_certificates_stays(P::Succeeded, R::InstallSucceeded, certs_fresh, Some((P::Succeeded, R::InstallSucceeded)), &[])]
// Failed.
#[case::failed_with_a_still_invalid_webhook_stays(P::Failed, R::InvalidWebhookDescription, invalid_webhook, None, &[])]
#[case::failed_with_a_standing_api_service_conflict_stays(P::Failed, R::OwnerConflict, api_service_owned_elsewhere, None, &[])]
#[case::failed_for_no_group_recovers_to_pending_once_a_group_fits(P::Failed, R::NoOperatorGroup, none, Some((P::Pending, R::RequirementsUnknown)), &[])]
#[case::failed_for_too_many_groups_recovers_to_pending(P::Failed, R::TooManyOperatorGroups, none, Some((P::Pending, R::RequirementsUnknown)), &[])]
#[case::failed_for_an_unsupported_group_recovers_to_pending(P::Failed, R::UnsupportedOperatorGroup, none, Some((P::Pending, R::RequirementsUnknown)), &[])]
#[case::failed_for_an_inter_group_conflict_recovers_to_pending(P::Failed, R::InterOperatorGroupOwnerConflict, none, Some((P::Pending, R::RequirementsUnknown)), &[])]
#[case::failed_for_a_static_group_recovers_to_pending(P::Failed, R::CannotModifyStaticOperatorGroupProvidedApis, none, Some((P::Pending, R::RequirementsUnknown)), &[])]
#[case::failed_with_unmet_requirements_goes_back_to_pending(P::Failed, R::RequirementsNotMet, requirements_unmet, Some((P::Pending, R::RequirementsNotMet)), &[])]
#[case::failed_with_a_standing_owner_conflict_stays_failed(P::Failed, R::OwnerConflict, owner_conflict, None, &[])]
#[case::failed_with_missing_deployments_needs_a_reinstall(P::Failed, R::InstallComponentFailed, deployment_missing, Some((P::Pending, R::NeedsReinstall)), &[])]
#[case::failed_with_healthy_deployments_succeeds_again(P::Failed, R::ComponentUnhealthy, none, Some((P::Succeeded, R::InstallSucceeded)), &[])]
#[case::failed_after_a_fixed_strategy_needs_a_reinstall(P::Failed, R::InvalidInstallStrategy, deployment_missing, Some((P::Pending, R::NeedsReinstall)), &[])]
// Replacing.
#[case::replacing_with_a_succeeded_replacer_goes_deleting(P::Replacing, R::BeingReplaced, replaced_by_succeeded, Some((P::Deleting, R::Replaced)), &[])]
#[case::replacing_when_the_newest_of_the_chain_succeeded_goes_deleting(P::Replacing, R::BeingReplaced, replaced_by_a_replacing_csv_whose_head_succeeded, Some((P::Deleting, R::Replaced)), &[])]
#[case::replacing_when_the_newest_of_the_chain_still_installs_waits(P::Replacing, R::BeingReplaced, replaced_by_a_replacing_csv_whose_head_installs, None, &[])]
#[case::replacing_with_a_replacer_still_installing_waits(P::Replacing, R::BeingReplaced, replaced_by_pending, None, &[])]
#[case::replacing_while_still_replacing_an_older_csv_waits(P::Replacing, R::BeingReplaced, replaced_by_succeeded_but_still_replacing, None, &[])]
#[case::replacing_without_a_replacer_stays(P::Replacing, R::BeingReplaced, none, None, &[])]
// Deleting.
#[case::deleting_deletes_the_csv(P::Deleting, R::Replaced, none, None, &[DeleteSelf])]
fn decide_follows_olms_phase_machine(
    #[case] phase: CsvPhase,
    #[case] reason: CsvReason,
    #[case] fact: Fact,
    #[case] expected: Option<(CsvPhase, CsvReason)>,
    #[case] effects: &[Effect],
) {
    let mut o = observed(phase, reason);
    fact(&mut o);
    let d = decide(&o);
    let got = match &d.step {
        Step::Stay => None,
        Step::To(t) => Some((t.phase.clone(), t.reason.clone())),
    };
    assert_eq!(got, expected, "step of {o:?}: {d:?}");
    assert_eq!(d.effects, effects, "effects of {o:?}");
}

#[rstest]
#[case::the_first_step(P::None, R::None, none, MSG_REQUIREMENTS_UNKNOWN)]
#[case::all_requirements_met(P::Pending, R::RequirementsUnknown, none, MSG_ALL_REQUIREMENTS_MET)]
#[case::waiting_for_components(P::InstallReady, R::AllRequirementsMet, none, MSG_INSTALL_WAITING)]
#[case::install_completed(P::Installing, R::InstallWaiting, none, MSG_INSTALL_SUCCEEDED)]
#[case::the_install_timeout(
    P::Installing,
    R::InstallWaiting,
    waiting_past_the_timeout,
    MSG_INSTALL_TIMEOUT
)]
#[case::being_replaced_names_the_replacer(
    P::Succeeded,
    R::InstallSucceeded,
    replaced_by_pending,
    "being replaced by csv: a.v3"
)]
#[case::replaced(P::Replacing, R::BeingReplaced, replaced_by_succeeded, MSG_REPLACED)]
#[case::a_deployment_conflict_names_the_owner(
    P::Pending,
    R::RequirementsUnknown,
    deployment_owned_elsewhere,
    "deployment op is owned by csv other.v3, which is not in this CSV's replacement chain"
)]
#[case::a_crd_conflict_is_olms_text(
    P::Pending,
    R::RequirementsUnknown,
    owner_conflict,
    MSG_OWNER_CONFLICT
)]
#[case::no_operator_group(P::Pending, R::RequirementsUnknown, no_group, MSG_NO_OPERATOR_GROUP)]
#[case::an_invalid_strategy_says_why(
    P::Pending,
    R::RequirementsUnknown,
    invalid_strategy,
    "install strategy invalid: unsupported install strategy \"helm\""
)]
#[case::a_cycle_names_its_members(
    P::Pending,
    R::RequirementsUnknown,
    replaces_cycle,
    "spec.replaces forms a cycle (a -> b -> a); point spec.replaces at an older CSV or remove it"
)]
#[case::waiting_installs_say_on_what(
    P::Installing,
    R::InstallWaiting,
    deployment_waiting,
    "installing: waiting for deployment op to become ready"
)]
#[case::an_unsupported_group_quotes_supports(
    P::Pending,
    R::RequirementsUnknown,
    unsupported_group,
    "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces"
)]
fn messages_are_olms_texts(
    #[case] phase: CsvPhase,
    #[case] reason: CsvReason,
    #[case] fact: Fact,
    #[case] message: &str,
) {
    let mut o = observed(phase, reason);
    fact(&mut o);
    let Step::To(t) = decide(&o).step else {
        panic!("a transition expected")
    };
    assert_eq!(t.message, message);
}

#[rstest]
#[case::unmet_requirements_retry_with_backoff(
    P::Pending,
    R::RequirementsUnknown,
    requirements_unmet,
    Next::Backoff
)]
#[case::a_group_failure_waits_for_a_group_change(
    P::Pending,
    R::RequirementsUnknown,
    no_group,
    Next::Idle
)]
#[case::a_healthy_succeeded_csv_idles(P::Succeeded, R::InstallSucceeded, none, Next::Idle)]
#[case::an_invalid_spec_waits_for_an_edit(
    P::Pending,
    R::RequirementsUnknown,
    invalid_strategy,
    Next::Idle
)]
#[case::installing_rechecks_before_the_timeout(
    P::Installing,
    R::InstallWaiting,
    deployment_waiting,
    Next::After(WAIT_RECHECK)
)]
fn the_next_reconcile_is_scheduled_by_the_decision(
    #[case] phase: CsvPhase,
    #[case] reason: CsvReason,
    #[case] fact: Fact,
    #[case] next: Next,
) {
    let mut o = observed(phase, reason);
    fact(&mut o);
    assert_eq!(decide(&o).next, next);
}

#[test]
fn installing_close_to_the_timeout_rechecks_when_it_expires() {
    let mut o = observed(P::Installing, R::InstallWaiting);
    o.install = InstallStatus::Waiting("w".into());
    o.since_transition = Some(INSTALL_TIMEOUT - Duration::from_secs(5));
    assert_eq!(decide(&o).next, Next::After(Duration::from_secs(5)));
}

#[rstest]
#[case::a_forbidden_create_never_retries(true, R::InstallComponentFailedNoRetry)]
#[case::a_transient_failure_is_retried(false, R::InstallComponentFailed)]
fn install_failures_fail_the_csv(#[case] unrecoverable: bool, #[case] reason: CsvReason) {
    let t = install_failed(unrecoverable, "deployments.apps is forbidden");
    assert_eq!((t.phase, t.reason), (P::Failed, reason));
    assert_eq!(
        t.message,
        "install strategy failed: deployments.apps is forbidden"
    );
}

#[test]
fn fresh_certificates_are_looked_at_again_when_due_and_the_messages_are_olms() {
    let mut o = observed(P::Succeeded, R::InstallSucceeded);
    certs_fresh(&mut o);
    assert_eq!(decide(&o).next, Next::After(Duration::from_secs(3600)));
    certs_due(&mut o);
    match decide(&o).step {
        Step::To(t) => assert_eq!(t.message, MSG_NEEDS_CERT_ROTATION),
        Step::Stay => panic!("due certificates must rotate"),
    }
    let mut o = observed(P::Pending, R::RequirementsUnknown);
    api_service_owned_elsewhere(&mut o);
    match decide(&o).step {
        Step::To(t) => assert_eq!(t.message, "unable to adopt APIService"),
        Step::Stay => panic!("a conflict must fail the CSV"),
    }
}
