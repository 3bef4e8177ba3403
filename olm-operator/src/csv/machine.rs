//! The CSV phase machine (spec §2.2-2.3), pure: `decide(&Observed) -> Decision`. No kube client, actix,
//! tokio or clock here; the actor gathers the facts (`observe.rs`) and performs the effects (`effects.rs`).

use super::facts::{
    GroupFit, INSTALL_TIMEOUT, InstallStatus, Neighbour, Observed, OwnerConflict, SpecCheck,
};
use messages::crd::csv::{CsvPhase, CsvReason};
use olm_runtime::outcome::Next;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::transition::Transition;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Stay,
    To(Transition),
}

/// I/O the actor performs for a decision, in this order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Write the OperatorGroup annotations on the CSV (`olm.operatorGroup`, `olm.operatorNamespace`, `olm.targetNamespaces`).
    AnnotateGroup(BTreeMap<String, String>),
    /// Create/update the service accounts, Roles/ClusterRoles and bindings of the install strategy.
    EnsureRbac,
    /// Create/update the strategy's deployments (and RBAC), deleting CSV-owned deployments no longer in it.
    Install,
    /// Count one upgrade (`csv_upgrade_count`).
    CountUpgrade,
    /// Delete the CSV object itself (phase Deleting).
    DeleteSelf,
    /// Ask the OperatorGroup's actor to change its `olm.providedAPIs` (it alone applies unions and differences).
    ChangeProvidedApis(messages::msg::ApiChange, std::collections::BTreeSet<String>),
    /// Delete the CSV's deployments (after an OperatorGroup provided-API failure).
    CleanupDeployments,
    /// Create the CSV's OperatorCondition and its Role/RoleBinding, or refresh its lists (spec §5).
    EnsureOperatorCondition,
    /// Rewrite the CA bundles with the current CA only, dropping a rotation's previous one (`served/bundle.rs`).
    SettleCaBundles,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub step: Step,
    pub effects: Vec<Effect>,
    pub next: Next,
}

/// Safety net for waits that a watch normally ends (deployments becoming ready, a neighbour changing phase).
pub const WAIT_RECHECK: Duration = Duration::from_secs(30);
/// How long after entering Installing a missing deployment is taken for the store lagging our own create.
pub const STORE_LAG_GRACE: Duration = Duration::from_secs(5);

// Messages (OLM's exact texts).
pub const MSG_REQUIREMENTS_UNKNOWN: &str = "requirements not yet checked";
pub const MSG_REQUIREMENTS_NOT_MET: &str = "one or more requirements couldn't be found";
pub const MSG_ALL_REQUIREMENTS_MET: &str = "all requirements found, attempting install";
pub const MSG_INSTALL_WAITING: &str = "waiting for install components to report healthy";
pub const MSG_INSTALL_SUCCEEDED: &str = "install strategy completed with no errors";
pub const MSG_INSTALL_TIMEOUT: &str = "install timeout";
pub const MSG_OWNER_CONFLICT: &str = "conflicting CRD owner in namespace";
/// An APIService another CSV owns (OLM's `unable to adopt APIService`).
pub const MSG_API_SERVICE_OWNER_CONFLICT: &str = "unable to adopt APIService";
pub const MSG_NO_OPERATOR_GROUP: &str = "csv in namespace with no operatorgroups";
pub const MSG_TOO_MANY_OPERATOR_GROUPS: &str =
    "csv created in namespace with multiple operatorgroups, can't pick one automatically";
pub const MSG_NO_TARGET_NAMESPACES: &str =
    "no targetNamespaces are matched operatorgroups namespace selection";
pub const MSG_GROUP_NOW_SUPPORTED: &str = "InstallModes now support target namespaces";
pub const MSG_NO_LONGER_INTERSECTING: &str =
    "OperatorGroup no longer intersecting with conflicting owner";
pub const MSG_STATIC_NOW_SUPPORTED: &str =
    "static OperatorGroup and intersecting groups now support providedAPIs";
pub const MSG_REQUIREMENTS_NO_LONGER_MET: &str = "requirements no longer met";
pub const MSG_FAILED_REQUIREMENTS_NOT_MET: &str = "requirements not met";
pub const MSG_CLUSTER_CHANGED: &str = "Cluster resources changed state";
pub const MSG_NEEDS_CERT_ROTATION: &str = "CSV owns resources that require a cert refresh";
/// Ours (OLM has no such step): a rotation's rollout is done, the previous CA leaves the CA bundles.
pub const MSG_SETTLING_CA: &str =
    "certificates rotated: the CA bundles drop the previous CA once the rolled deployments settle";
pub const MSG_REPLACED: &str =
    "has been replaced by a newer ClusterServiceVersion that has successfully installed.";

/// Decide the next step of one CSV from its classified facts.
pub fn decide(o: &Observed) -> Decision {
    if o.copied {
        return stay(Next::Idle);
    }
    // OLM `checkReplacementsAndUpdateStatus`, before anything else: whatever its phase (but Replacing or
    // Deleting), a CSV that a newer one replaces hands over at once. Only then is the handover of a chain
    // serial: a CSV still Installing when its replacer appears would otherwise keep writing the Deployment
    // beside the chain's newest CSV (issue 17: v2 Installing and v4 Installing on one Deployment).
    // A Failed CSV hands over too, with OLM's fail-forward message when its group fails forward. (OLM v0
    // leaves a Failed CSV Failed under the Default strategy and its replacement Pending for good; here a CSV
    // can fail transiently while its chain arrives out of order, and must still hand over. What Default
    // blocks is the resolution of an upgrade past a failed one: see catalog-operator `namespace::fail_forward`.)
    if let Some(new) = &o.replaced_by
        && !matches!(o.phase, CsvPhase::Replacing | CsvPhase::Deleting)
    {
        if o.phase == CsvPhase::Failed && o.fail_forward {
            return failing_forward(new);
        }
        return being_replaced(new);
    }
    // Only a cluster change (the group's targets or service account) moves a CSV out of NoRetry.
    if o.phase == CsvPhase::Failed && o.reason == CsvReason::InstallComponentFailedNoRetry {
        if o.cluster_changed {
            return with(
                Vec::new(),
                to(
                    CsvPhase::Pending,
                    CsvReason::DetectedClusterChange,
                    MSG_CLUSTER_CHANGED,
                ),
                Next::Idle,
            );
        }
        return stay(Next::Idle);
    }
    if o.phase == CsvPhase::Deleting {
        return Decision {
            step: Step::Stay,
            effects: vec![Effect::DeleteSelf],
            next: Next::Idle,
        };
    }
    if let SpecCheck::BadCrdName(_) = o.spec {
        return stay(Next::Idle);
    }
    let mut effects = Vec::new();
    if o.operator_condition_stale {
        effects.push(Effect::EnsureOperatorCondition);
    }
    match &o.group {
        GroupFit::Fits { annotate } => {
            if let Some(annotations) = annotate {
                effects.push(Effect::AnnotateGroup(annotations.clone()));
            }
        }
        GroupFit::NoOperatorGroup => {
            return group_failure(o, CsvReason::NoOperatorGroup, MSG_NO_OPERATOR_GROUP);
        }
        GroupFit::TooManyOperatorGroups => {
            return group_failure(
                o,
                CsvReason::TooManyOperatorGroups,
                MSG_TOO_MANY_OPERATOR_GROUPS,
            );
        }
        GroupFit::NoTargetNamespaces => {
            return group_failure(o, CsvReason::NoTargetNamespaces, MSG_NO_TARGET_NAMESPACES);
        }
        GroupFit::InvalidInstallModes(message) => {
            return group_failure(o, CsvReason::InvalidInstallModes, message);
        }
        GroupFit::Unsupported(message) => {
            return group_failure(o, CsvReason::UnsupportedOperatorGroup, message);
        }
        GroupFit::ChangeProvidedApis(change, apis) => {
            // OLM requeues and stops. The group's actor answers with the set it wrote and requeues us on the
            // version carrying it (a CSV providing its APIs, `operator_group::plan`): no recheck.
            return Decision {
                step: Step::Stay,
                effects: vec![Effect::ChangeProvidedApis(*change, apis.clone())],
                next: Next::Idle,
            };
        }
        GroupFit::ApiFailure {
            reason,
            message,
            write,
        } => {
            let step = if *write {
                to(CsvPhase::Failed, reason.clone(), message.clone())
            } else {
                Step::Stay
            };
            // Every group requeues the CSVs providing its APIs, before and after, on each version it is sent
            // (the store shows that version first), and when it is deleted (`operator_group::notify`).
            return Decision {
                step,
                effects: vec![Effect::CleanupDeployments],
                next: Next::Idle,
            };
        }
    }
    if o.phase == CsvPhase::None {
        return with(
            effects,
            to(
                CsvPhase::Pending,
                CsvReason::RequirementsUnknown,
                MSG_REQUIREMENTS_UNKNOWN,
            ),
            Next::Idle,
        );
    }
    if let Some(failure) = spec_failure(&o.spec) {
        // Written only if phase, reason or message changed (`status.rs`), like every step.
        return Decision {
            step: Step::To(failure),
            effects,
            next: Next::Idle,
        };
    }
    let mut decision = match o.phase {
        CsvPhase::Pending => pending(o),
        CsvPhase::InstallReady => install_ready(),
        CsvPhase::Installing => installing(o),
        CsvPhase::Succeeded => succeeded(o),
        CsvPhase::Failed => failed(o),
        CsvPhase::Replacing => replacing(o),
        // Handled above; listed so the match stays exhaustive over OLM's phases.
        CsvPhase::None | CsvPhase::Deleting => stay(Next::Idle),
        CsvPhase::Unknown | CsvPhase::Other(_) => stay(Next::Idle),
    };
    effects.append(&mut decision.effects);
    decision.effects = effects;
    decision
}

/// A newer CSV replaces this one: go `Replacing` and count an upgrade (OLM's `BeingReplaced`).
fn being_replaced(new: &Neighbour) -> Decision {
    with(
        vec![Effect::CountUpgrade],
        to(
            CsvPhase::Replacing,
            CsvReason::BeingReplaced,
            format!("being replaced by csv: {}", new.name),
        ),
        Next::Idle,
    )
}

/// A Failed CSV with a replacement, its group failing forward: `Replacing` with OLM's message.
fn failing_forward(new: &Neighbour) -> Decision {
    with(
        vec![Effect::CountUpgrade],
        to(
            CsvPhase::Replacing,
            CsvReason::BeingReplaced,
            format!(
                "Fail Forward is enabled, allowing Failed csv to be replaced by csv: {}",
                new.name
            ),
        ),
        Next::Idle,
    )
}

/// The status to write when the `Install` effect failed (OLM's InstallReady branch): permission and
/// invalid-object errors do not heal by retrying.
pub fn install_failed(unrecoverable: bool, error: &str) -> Transition {
    if unrecoverable {
        Transition::new(
            CsvPhase::Failed,
            CsvReason::InstallComponentFailedNoRetry,
            format!("install strategy failed: {error}"),
        )
    } else {
        Transition::new(
            CsvPhase::Failed,
            CsvReason::InstallComponentFailed,
            format!("install strategy failed: {error}"),
        )
    }
}

fn pending(o: &Observed) -> Decision {
    if let Some(why) = &o.not_upgradeable {
        // The CSV we replace says it may not be upgraded now; its OperatorCondition's change requeues us.
        return with(
            Vec::new(),
            to(
                CsvPhase::Pending,
                CsvReason::OperatorConditionNotUpgradeable,
                crate::operator_condition::not_upgradeable_message(why),
            ),
            Next::Idle,
        );
    }
    if !o.requirements.met
        && let Some(left) = super::rbac_grace::left(o.since_transition)
    {
        return stay(Next::After(left));
    }
    let effects = vec![Effect::EnsureRbac];
    if !o.requirements.met {
        return with(
            effects,
            to(
                CsvPhase::Pending,
                CsvReason::RequirementsNotMet,
                MSG_REQUIREMENTS_NOT_MET,
            ),
            Next::Backoff,
        );
    }
    if let Some(why) = &o.served.invalid {
        return with(
            effects,
            to(
                CsvPhase::Failed,
                CsvReason::InvalidWebhookDescription,
                why.clone(),
            ),
            Next::Idle,
        );
    }
    if let Some(conflict) = o.owner_conflict.as_ref().or(o
        .served
        .api_service_conflict
        .as_ref()
        .map(|_| &OwnerConflict::ApiService))
    {
        let message = match conflict {
            OwnerConflict::Crd(_) => MSG_OWNER_CONFLICT.to_string(),
            OwnerConflict::ApiService => MSG_API_SERVICE_OWNER_CONFLICT.to_string(),
            OwnerConflict::Deployment { deployment, owner } => format!(
                "deployment {deployment} is owned by csv {owner}, which is not in this CSV's replacement chain"
            ),
        };
        return with(
            effects,
            to(CsvPhase::Failed, CsvReason::OwnerConflict, message),
            Next::Idle,
        );
    }
    let not_handed_over = o
        .replaces
        .as_ref()
        .filter(|old| old.phase != CsvPhase::Replacing)
        .or(o.older_not_handed_over.as_ref());
    if not_handed_over.is_some() {
        // Wait for every older CSV of the chain to hand over (each goes Replacing as soon as it sees the CSV
        // replacing it; its phase change requeues us): then at most one CSV of a chain writes the Deployment.
        return Decision {
            step: Step::Stay,
            effects,
            next: Next::After(WAIT_RECHECK),
        };
    }
    with(
        effects,
        to(
            CsvPhase::InstallReady,
            CsvReason::AllRequirementsMet,
            MSG_ALL_REQUIREMENTS_MET,
        ),
        Next::Idle,
    )
}

fn install_ready() -> Decision {
    with(
        vec![Effect::Install],
        to(
            CsvPhase::Installing,
            CsvReason::InstallSucceeded,
            MSG_INSTALL_WAITING,
        ),
        Next::After(WAIT_RECHECK),
    )
}

fn installing(o: &Observed) -> Decision {
    if let InstallStatus::Missing(why) = &o.install {
        // Just after our own create the deployment may not be in the store yet: wait for its watch event.
        // Past that, it was deleted (e.g. a foreground delete that outlived our update): OLM's
        // `updateInstallStatus` default branch, Failed/ComponentUnhealthy, whose recovery reinstalls it.
        let elapsed = o.since_transition.unwrap_or_default();
        if elapsed < STORE_LAG_GRACE {
            return stay(Next::After(
                STORE_LAG_GRACE
                    .saturating_sub(elapsed)
                    .max(Duration::from_secs(1)),
            ));
        }
        return with(
            Vec::new(),
            to(
                CsvPhase::Failed,
                CsvReason::ComponentUnhealthy,
                format!("installing: {why}"),
            ),
            Next::Backoff,
        );
    }
    let settling = to(
        CsvPhase::Installing,
        CsvReason::InstallWaiting,
        MSG_SETTLING_CA,
    );
    if let Some(d) = settle_ca_bundles(o, settling) {
        return d;
    }
    let (transition, healthy) =
        install_outcome(&o.install, CsvPhase::Installing, CsvReason::InstallWaiting);
    let still_installing = transition.phase == CsvPhase::Installing;
    if !healthy && still_installing {
        match o.since_transition {
            Some(elapsed) if elapsed >= INSTALL_TIMEOUT => {
                return with(
                    Vec::new(),
                    to(
                        CsvPhase::Failed,
                        CsvReason::InstallCheckFailed,
                        MSG_INSTALL_TIMEOUT,
                    ),
                    Next::Backoff,
                );
            }
            Some(elapsed) => {
                let left = INSTALL_TIMEOUT.saturating_sub(elapsed).min(WAIT_RECHECK);
                return with(
                    Vec::new(),
                    Step::To(transition),
                    Next::After(left.max(Duration::from_secs(1))),
                );
            }
            None => return with(Vec::new(), Step::To(transition), Next::After(WAIT_RECHECK)),
        }
    }
    let next = if healthy {
        Next::Idle
    } else {
        Next::After(WAIT_RECHECK)
    };
    with(Vec::new(), Step::To(transition), next)
}

fn succeeded(o: &Observed) -> Decision {
    if !o.requirements.met {
        return with(
            Vec::new(),
            to(
                CsvPhase::Failed,
                CsvReason::RequirementsNotMet,
                MSG_REQUIREMENTS_NO_LONGER_MET,
            ),
            Next::Backoff,
        );
    }
    if o.served.rotate_in == Some(Duration::ZERO) {
        return with(
            Vec::new(),
            to(
                CsvPhase::Pending,
                CsvReason::NeedsCertRotation,
                MSG_NEEDS_CERT_ROTATION,
            ),
            Next::Idle,
        );
    }
    if let Some(d) = settle_ca_bundles(o, Step::Stay) {
        return d;
    }
    let (transition, healthy) =
        install_outcome(&o.install, CsvPhase::Failed, CsvReason::ComponentUnhealthy);
    let next = match (healthy, o.served.rotate_in) {
        (true, Some(left)) => Next::After(left.max(Duration::from_secs(1))),
        (true, None) => Next::Idle,
        (false, _) => Next::Backoff,
    };
    with(Vec::new(), Step::To(transition), next)
}

/// A healthy install (every deployment rolled out and serving with the newest CA) whose CA bundles still
/// trust a rotation's previous CA: drop it once the rollout settled, else look again then.
fn settle_ca_bundles(o: &Observed, step: Step) -> Option<Decision> {
    if o.install != InstallStatus::Healthy {
        return None;
    }
    let left = o.served.settle_in?;
    Some(if left.is_zero() {
        with(
            vec![Effect::SettleCaBundles],
            step,
            Next::After(Duration::from_secs(1)),
        )
    } else {
        with(Vec::new(), step, Next::After(left))
    })
}

fn failed(o: &Observed) -> Decision {
    match o.reason {
        CsvReason::NoTargetNamespaces
        | CsvReason::NoOperatorGroup
        | CsvReason::TooManyOperatorGroups
        | CsvReason::UnsupportedOperatorGroup
        | CsvReason::InvalidInstallModes => {
            return with(
                Vec::new(),
                to(
                    CsvPhase::Pending,
                    CsvReason::RequirementsUnknown,
                    MSG_GROUP_NOW_SUPPORTED,
                ),
                Next::Idle,
            );
        }
        CsvReason::InterOperatorGroupOwnerConflict => {
            return with(
                Vec::new(),
                to(
                    CsvPhase::Pending,
                    CsvReason::RequirementsUnknown,
                    MSG_NO_LONGER_INTERSECTING,
                ),
                Next::Idle,
            );
        }
        CsvReason::CannotModifyStaticOperatorGroupProvidedApis => {
            return with(
                Vec::new(),
                to(
                    CsvPhase::Pending,
                    CsvReason::RequirementsUnknown,
                    MSG_STATIC_NOW_SUPPORTED,
                ),
                Next::Idle,
            );
        }
        // A conflict that is still there stays (OLM would flap through Pending and back with an Event each time).
        CsvReason::OwnerConflict
            if o.owner_conflict.is_some() || o.served.api_service_conflict.is_some() =>
        {
            return stay(Next::Idle);
        }
        // Still invalid: stays (an edit of the CSV requeues it).
        CsvReason::InvalidWebhookDescription if o.served.invalid.is_some() => {
            return stay(Next::Idle);
        }
        _ => {}
    }
    if !o.requirements.met {
        return with(
            Vec::new(),
            to(
                CsvPhase::Pending,
                CsvReason::RequirementsNotMet,
                MSG_FAILED_REQUIREMENTS_NOT_MET,
            ),
            Next::Backoff,
        );
    }
    let (transition, healthy) =
        install_outcome(&o.install, CsvPhase::Pending, CsvReason::NeedsReinstall);
    let next = if healthy { Next::Idle } else { Next::Backoff };
    with(Vec::new(), Step::To(transition), next)
}

fn replacing(o: &Observed) -> Decision {
    if o.replaces.is_some() {
        // Still replacing an older CSV itself: that one must go first.
        return stay(Next::After(WAIT_RECHECK));
    }
    // The direct replacer, or (when it is itself being replaced) the newest CSV of the chain, must have
    // succeeded.
    let succeeded =
        |n: &Option<Neighbour>| n.as_ref().is_some_and(|n| n.phase == CsvPhase::Succeeded);
    if succeeded(&o.replaced_by) || succeeded(&o.chain_head) {
        return with(
            Vec::new(),
            to(CsvPhase::Deleting, CsvReason::Replaced, MSG_REPLACED),
            Next::Idle,
        );
    }
    match &o.replaced_by {
        Some(_) => stay(Next::After(WAIT_RECHECK)),
        None => stay(Next::Idle),
    }
}

/// OLM's `updateInstallStatus(requeuePhase, requeueReason)`: the transition and whether all is healthy.
fn install_outcome(
    install: &InstallStatus,
    requeue_phase: CsvPhase,
    requeue_reason: CsvReason,
) -> (Transition, bool) {
    match install {
        InstallStatus::Healthy => (
            Transition::new(
                CsvPhase::Succeeded,
                CsvReason::InstallSucceeded,
                MSG_INSTALL_SUCCEEDED,
            ),
            true,
        ),
        InstallStatus::Unrecoverable(why) => (
            Transition::new(
                CsvPhase::Failed,
                CsvReason::InstallCheckFailed,
                format!("install failed: {why}"),
            ),
            false,
        ),
        InstallStatus::Drifted(why) => (
            Transition::new(
                CsvPhase::InstallReady,
                requeue_reason,
                format!("installing: {why}"),
            ),
            false,
        ),
        InstallStatus::Missing(why) | InstallStatus::Waiting(why) => (
            Transition::new(requeue_phase, requeue_reason, format!("installing: {why}")),
            false,
        ),
    }
}

fn spec_failure(spec: &SpecCheck) -> Option<Transition> {
    match spec {
        SpecCheck::Valid | SpecCheck::BadCrdName(_) => None,
        SpecCheck::InvalidStrategy(why) => Some(Transition::new(
            CsvPhase::Failed,
            CsvReason::InvalidInstallStrategy,
            format!("install strategy invalid: {why}"),
        )),
        SpecCheck::BadVersion(why) => Some(Transition::new(
            CsvPhase::Failed,
            CsvReason::RequirementsNotMet,
            why.clone(),
        )),
        SpecCheck::ReplacesCycle(names) => Some(Transition::new(
            CsvPhase::Failed,
            CsvReason::RequirementsNotMet,
            format!(
                "spec.replaces forms a cycle ({}); point spec.replaces at an older CSV or remove it",
                names.join(" -> ")
            ),
        )),
    }
}

/// OperatorGroup failures are written only when the reason differs (OLM). No recheck: a group created,
/// changed or deleted requeues the CSVs of its namespace.
fn group_failure(o: &Observed, reason: CsvReason, message: &str) -> Decision {
    let step = if o.phase == CsvPhase::Failed && o.reason == reason {
        Step::Stay
    } else {
        to(CsvPhase::Failed, reason, message)
    };
    Decision {
        step,
        effects: Vec::new(),
        next: Next::Idle,
    }
}

fn to(phase: CsvPhase, reason: CsvReason, message: impl Into<String>) -> Step {
    Step::To(Transition::new(phase, reason, message))
}

fn stay(next: Next) -> Decision {
    Decision {
        step: Step::Stay,
        effects: Vec::new(),
        next,
    }
}

fn with(effects: Vec<Effect>, step: Step, next: Next) -> Decision {
    Decision {
        step,
        effects,
        next,
    }
}

#[cfg(test)]
mod handover_tests;
#[cfg(test)]
mod tests;
