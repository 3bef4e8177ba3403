//! Pure Subscription status logic (spec §4.1 step 3, §4.5): catalog health, the referenced InstallPlan's
//! state, `currentCSV`/`installedCSV`/`state`, and the outcome of resolution.

use crate::catalog_health::CatalogHealth;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::install_plan::{
    InstallPlanConditionReason, InstallPlanConditionType, InstallPlanPhase,
};
use messages::crd::subscription::{
    InstallPlanReference, SubscriptionCondition, SubscriptionConditionType as T,
    SubscriptionReason as R, SubscriptionState, SubscriptionStatus,
};
use resolver::CatalogKey;

/// What the Subscription's `installPlanRef` points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanFacts {
    NoRef,
    Missing,
    Found {
        phase: InstallPlanPhase,
        installed_reason: InstallPlanConditionReason,
        message: String,
        /// The plan's `spec.clusterServiceVersionNames`.
        csvs: Vec<String>,
    },
}

/// An InstallPlan reference to record on a Subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRef {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub generation: i64,
}

/// Everything observed about one Subscription before resolution.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub target: CatalogKey,
    pub catalogs: Vec<CatalogHealth>,
    /// The plan named by the `olm.generated-by` annotation, when the Subscription has no reference yet.
    pub generated_by: Option<PlanRef>,
    pub starting_csv: Option<String>,
    pub plan: PlanFacts,
    /// The CSV named by `status.currentCSV` exists in the namespace.
    pub current_csv_exists: bool,
    /// The CSV named by `status.installedCSV` exists in the namespace.
    pub installed_csv_exists: bool,
    /// When the current CSV does not exist: the newest CSV of the namespace that replaces it (following
    /// `spec.replaces`), see [`successor`].
    pub successor: Option<String>,
    /// The namespace's OperatorGroup asks for fail-forward upgrades (`super::fail_forward`).
    pub fail_forward: bool,
}

/// The end of the `replaces` chain that starts at `current` among the namespace's CSVs (`replaced_by`:
/// replaces → the CSV that names it), if any CSV replaces it. A cycle gives none.
pub fn successor(
    current: &str,
    replaced_by: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let mut at = replaced_by.get(current)?;
    let mut seen = std::collections::BTreeSet::from([current]);
    while let Some(next) = replaced_by.get(at.as_str()) {
        if !seen.insert(at.as_str()) {
            return None;
        }
        at = next;
    }
    Some(at.clone())
}

pub fn condition(
    type_: T,
    status: bool,
    reason: R,
    message: impl Into<String>,
    now: &Time,
) -> SubscriptionCondition {
    SubscriptionCondition {
        type_,
        status: if status { "True" } else { "False" }.to_string(),
        reason,
        message: message.into(),
        last_heartbeat_time: None,
        last_transition_time: Some(now.clone()),
    }
}

/// Set a condition, keeping its transition time when nothing but the time changed.
pub fn set(status: &mut SubscriptionStatus, mut c: SubscriptionCondition) {
    if let Some(old) = status.condition(&c.type_) {
        if old.same_as(&c) {
            return;
        }
        if old.status == c.status {
            c.last_transition_time = old.last_transition_time.clone();
        }
    }
    status.set_condition(c);
}

pub fn plan_reference(p: &PlanRef) -> (ObjectReference, InstallPlanReference) {
    let r = ObjectReference {
        api_version: Some("operators.coreos.com/v1alpha1".into()),
        kind: Some("InstallPlan".into()),
        name: Some(p.name.clone()),
        namespace: Some(p.namespace.clone()),
        uid: Some(p.uid.clone()),
        ..Default::default()
    };
    let ip = InstallPlanReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "InstallPlan".into(),
        name: p.name.clone(),
        uuid: p.uid.clone(),
    };
    (r, ip)
}

fn health_condition(
    target: &CatalogKey,
    catalogs: &[CatalogHealth],
    now: &Time,
) -> SubscriptionCondition {
    if catalogs.is_empty() {
        return condition(
            T::CatalogSourcesUnhealthy,
            true,
            R::NoCatalogSourcesFound,
            "dependency resolution requires at least one catalogsource",
            now,
        );
    }
    match catalogs.iter().find(|c| &c.key == target) {
        None => {
            return condition(
                T::CatalogSourcesUnhealthy,
                true,
                R::UnhealthyCatalogSourceFound,
                format!("targeted catalogsource {target} missing"),
                now,
            );
        }
        Some(c) if !c.healthy => {
            return condition(
                T::CatalogSourcesUnhealthy,
                true,
                R::UnhealthyCatalogSourceFound,
                format!("targeted catalogsource {target} unhealthy"),
                now,
            );
        }
        Some(_) => {}
    }
    let unhealthy: Vec<String> = catalogs
        .iter()
        .filter(|c| !c.healthy)
        .map(|c| c.key.to_string())
        .collect();
    if unhealthy.is_empty() {
        condition(
            T::CatalogSourcesUnhealthy,
            false,
            R::AllCatalogSourcesHealthy,
            "all available catalogsources are healthy",
            now,
        )
    } else {
        condition(
            T::CatalogSourcesUnhealthy,
            true,
            R::UnhealthyCatalogSourceFound,
            format!("unhealthy catalogsources: {}", unhealthy.join(", ")),
            now,
        )
    }
}

/// The Subscription's status before resolution.
pub fn before_resolution(old: &SubscriptionStatus, f: &Facts, now: &Time) -> SubscriptionStatus {
    let mut s = old.clone();
    // §4.1 step 3: adopt the plan that created this Subscription.
    if s.install_plan_ref.is_none()
        && let Some(p) = &f.generated_by
    {
        let (r, ip) = plan_reference(p);
        s.install_plan_ref = Some(r);
        s.install_plan = Some(ip);
        s.install_plan_generation = Some(p.generation);
        s.state = SubscriptionState::UpgradePending;
        if let Some(start) = &f.starting_csv {
            s.current_csv = start.clone();
        }
    }
    // §4.5: the referenced plan's state.
    match &f.plan {
        PlanFacts::NoRef => s.remove_conditions(&[
            T::InstallPlanPending,
            T::InstallPlanFailed,
            T::InstallPlanMissing,
        ]),
        PlanFacts::Missing if s.state == SubscriptionState::UpgradePending => {
            s.install_plan_ref = None;
            s.install_plan = None;
            s.current_csv.clear();
            s.state = SubscriptionState::None;
            s.remove_conditions(&[T::InstallPlanPending, T::InstallPlanFailed]);
        }
        PlanFacts::Missing => {
            s.remove_conditions(&[T::InstallPlanPending, T::InstallPlanFailed]);
            set(
                &mut s,
                condition(
                    T::InstallPlanMissing,
                    true,
                    R::ReferencedInstallPlanNotFound,
                    "",
                    now,
                ),
            );
        }
        PlanFacts::Found {
            phase,
            installed_reason,
            message,
            ..
        } => {
            s.remove_conditions(&[T::InstallPlanMissing]);
            match phase {
                InstallPlanPhase::Complete => {
                    s.remove_conditions(&[T::InstallPlanPending, T::InstallPlanFailed])
                }
                InstallPlanPhase::Failed => {
                    s.remove_conditions(&[T::InstallPlanPending]);
                    let reason = match installed_reason {
                        InstallPlanConditionReason::None => R::InstallPlanFailed,
                        other => R::from_wire(other.as_str()),
                    };
                    set(
                        &mut s,
                        condition(T::InstallPlanFailed, true, reason, message.clone(), now),
                    );
                }
                InstallPlanPhase::None
                | InstallPlanPhase::Planning
                | InstallPlanPhase::RequiresApproval
                | InstallPlanPhase::Installing
                | InstallPlanPhase::Other(_) => {
                    s.remove_conditions(&[T::InstallPlanFailed]);
                    let reason = match phase {
                        InstallPlanPhase::None => R::InstallPlanNotYetReconciled,
                        other => R::from_wire(other.as_str()),
                    };
                    set(
                        &mut s,
                        condition(T::InstallPlanPending, true, reason, message.clone(), now),
                    );
                }
            }
        }
    }
    // A lost decision's trace: the referenced plan completed, yet neither made the current CSV nor names it (the
    // current CSV was decided with another plan that never reached this Subscription). Waiting on it would wait
    // forever (the plan is done), and resolution would see no change to make (it proposes that same CSV): go
    // back to the CSV installed, so resolution plans the step again (chaos defect 2).
    let mut current_exists = f.current_csv_exists;
    // A lost decision's other trace: the plan it made ran, and its CSV replaced the current one, which is gone.
    // The Subscription follows the chain to that CSV, as if the decision had reached it.
    if !s.current_csv.is_empty()
        && !f.current_csv_exists
        && let Some(next) = &f.successor
    {
        s.current_csv = next.clone();
        current_exists = true;
    }
    if let PlanFacts::Found {
        phase: InstallPlanPhase::Complete,
        csvs,
        ..
    } = &f.plan
        && !s.current_csv.is_empty()
        && !current_exists
        && !csvs.contains(&s.current_csv)
    {
        s.current_csv = s.installed_csv.clone();
        current_exists = f.installed_csv_exists;
        if s.current_csv.is_empty() {
            s.state = SubscriptionState::None;
        }
    }
    // §4.1 step 3: the current CSV's presence decides the state. OLM says AtLatestKnown as soon as the CSV exists;
    // we also wait for its plan to complete, so the next upgrade step never runs beside an unfinished plan, and a
    // failed plan leaves the Subscription UpgradePending (spec §9) even though its CSV step ran.
    // With fail-forward (OLM `ensureSubscriptionCSVState`), a failed plan does not hold the Subscription: its
    // CSV, if the plan made it, is the installed one, else the Subscription is `UpgradeFailed` and resolves
    // again (the next bundle may replace the failed one).
    let plan_in_flight =
        matches!(&f.plan, PlanFacts::Found { phase, .. } if *phase != InstallPlanPhase::Complete);
    let failing_forward = f.fail_forward
        && matches!(&f.plan, PlanFacts::Found { phase, .. } if *phase == InstallPlanPhase::Failed);
    if !s.current_csv.is_empty() {
        if current_exists && (!plan_in_flight || failing_forward) {
            s.state = SubscriptionState::AtLatestKnown;
            s.installed_csv = s.current_csv.clone();
        } else if failing_forward {
            s.state = SubscriptionState::UpgradeFailed;
        } else if s.state != SubscriptionState::UpgradeFailed {
            s.state = SubscriptionState::UpgradePending;
        }
    }
    let reported: Vec<CatalogHealth> = crate::catalog_health::reported(&f.catalogs, &f.target)
        .cloned()
        .collect();
    set(&mut s, health_condition(&f.target, &reported, now));
    s.catalog_health = crate::catalog_health::entries(&reported, old, now);
    s.catalog_health_summary = None;
    s
}

/// What resolution decided for one Subscription.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// Resolution failed: `ConstraintsNotSatisfiable` when the resolver found no installable set, else (a bundle
    /// refused, a catalog that cannot serve it) `ErrorPreventedResolution`, as OLM tells them apart.
    Failed { reason: R, message: String },
    /// Nothing to install for it (up to date, or already on its way).
    Unchanged,
    /// A new plan installs `csv` for it.
    Planned { csv: String, plan: PlanRef },
    /// A bundle image of its plan is being pulled (OLM: `BundleUnpacking`, `UnpackingInProgress`).
    Unpacking { message: String },
    /// A bundle image of its plan failed to unpack (OLM: `BundleUnpackFailed`); retried with backoff.
    UnpackFailed { message: String },
}

pub fn after_resolution(s: &mut SubscriptionStatus, d: &Decided, now: &Time) {
    match d {
        Decided::Failed { reason, message } => set(
            s,
            condition(
                T::ResolutionFailed,
                true,
                reason.clone(),
                message.clone(),
                now,
            ),
        ),
        Decided::Unpacking { message } => {
            s.remove_conditions(&[T::BundleUnpackFailed]);
            set(
                s,
                condition(
                    T::BundleUnpacking,
                    true,
                    R::UnpackingInProgress,
                    message.clone(),
                    now,
                ),
            );
        }
        Decided::UnpackFailed { message } => {
            s.remove_conditions(&[T::BundleUnpacking]);
            set(
                s,
                condition(
                    T::BundleUnpackFailed,
                    true,
                    R::BundleUnpackFailed,
                    message.clone(),
                    now,
                ),
            );
        }
        Decided::Unchanged => s.remove_conditions(&[
            T::ResolutionFailed,
            T::BundleUnpacking,
            T::BundleUnpackFailed,
        ]),
        Decided::Planned { csv, plan } => {
            s.remove_conditions(&[
                T::ResolutionFailed,
                T::BundleUnpacking,
                T::BundleUnpackFailed,
            ]);
            let (r, ip) = plan_reference(plan);
            s.install_plan_ref = Some(r);
            s.install_plan = Some(ip);
            s.install_plan_generation = Some(plan.generation);
            s.current_csv = csv.clone();
            s.state = SubscriptionState::UpgradePending;
            set(
                s,
                condition(
                    T::InstallPlanPending,
                    true,
                    R::InstallPlanNotYetReconciled,
                    "",
                    now,
                ),
            );
        }
    }
}

/// `Decided::Planned` for a plan whose phase resolution knows (it handed the first status over, or found the plan
/// under way): the `InstallPlanPending` reason says that phase at once, as the next resolution would.
pub fn planned(
    s: &mut SubscriptionStatus,
    csv: &str,
    plan: &PlanRef,
    phase: &InstallPlanPhase,
    now: &Time,
) {
    let decided = Decided::Planned {
        csv: csv.to_string(),
        plan: plan.clone(),
    };
    after_resolution(s, &decided, now);
    if let InstallPlanPhase::Planning
    | InstallPlanPhase::RequiresApproval
    | InstallPlanPhase::Installing = phase
    {
        set(
            s,
            condition(
                T::InstallPlanPending,
                true,
                R::from_wire(phase.as_str()),
                "",
                now,
            ),
        );
    }
}

/// Whether `b` differs from `a` in catalog health only (`catalogHealth` and the `CatalogSourcesUnhealthy`
/// condition, times aside): the writes of a global catalog's fan-out, which yield to an install's.
pub fn health_only(a: &SubscriptionStatus, b: &SubscriptionStatus) -> bool {
    let strip = |s: &SubscriptionStatus| {
        let mut s = s.clone();
        s.catalog_health = Vec::new();
        s.catalog_health_summary = None;
        s.conditions
            .retain(|c| c.type_ != T::CatalogSourcesUnhealthy);
        s
    };
    same(&strip(a), &strip(b))
}

/// Equal for the purpose of writing (timestamps aside).
pub fn same(a: &SubscriptionStatus, b: &SubscriptionStatus) -> bool {
    let strip = |s: &SubscriptionStatus| {
        let mut s = s.clone();
        s.last_updated = None;
        for c in &mut s.conditions {
            c.last_transition_time = None;
            c.last_heartbeat_time = None;
        }
        s.catalog_health = Vec::new();
        s.catalog_health_summary = None;
        s
    };
    crate::catalog_health::identity(a) == crate::catalog_health::identity(b) && strip(a) == strip(b)
}

/// The IP's `Installed` condition reason and message.
pub fn installed_condition(
    status: Option<&messages::crd::install_plan::InstallPlanStatus>,
) -> (InstallPlanConditionReason, String) {
    status
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == InstallPlanConditionType::Installed)
        })
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or((InstallPlanConditionReason::None, String::new()))
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
