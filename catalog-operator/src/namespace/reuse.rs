//! Whether resolution's next InstallPlan already exists (OLM's `ensureInstallPlan` reuses a plan that creates
//! the same resources instead of writing a second one). A run decides a plan, creates it and tells its
//! Subscriptions; when that decision is lost (the namespace actor dies before the Subscription writes it, or the
//! message is dropped), the next run sees the Subscription as before and plans the same step again. Without this
//! the namespace ends with two plans for one CSV (the chaos run's duplicate). Pure.

use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The plan to reuse for `csvs` (the plan's CSV names) serving `owners` (Subscription names) with `manual`
/// approval: one owned by each of them that installs those CSVs ([`covers`]: perhaps with dependencies beside
/// them), with the same approval, whose status shows it is being or was carried out (a plan with no status yet
/// may never get one: its creator died between its two writes), and, when Complete, whose wanted CSVs all
/// exist (a Complete plan whose CSV is gone would install nothing again). The newest such plan by generation.
pub fn reusable<'a>(
    plans: impl IntoIterator<Item = &'a InstallPlan>,
    csvs: &[String],
    owners: &[&str],
    manual: bool,
    existing_csvs: &BTreeSet<String>,
) -> Option<&'a InstallPlan> {
    let wanted: BTreeSet<&str> = csvs.iter().map(String::as_str).collect();
    plans
        .into_iter()
        .filter(|p| {
            let usable = match p.status.as_ref().map(|s| &s.phase) {
                Some(InstallPlanPhase::RequiresApproval | InstallPlanPhase::Installing) => true,
                Some(InstallPlanPhase::Complete) => {
                    wanted.iter().all(|c| existing_csvs.contains(*c))
                }
                _ => false,
            };
            usable && covers(p, &wanted, owners, manual)
        })
        .max_by_key(|p| p.spec.generation.unwrap_or(0))
}

/// Whether plan `p` installs the CSVs `wanted` (not none), perhaps beside others, is owned by each of `owners`
/// and has `manual` approval. The others are dependencies it brought in: once its dependency's CSV or
/// Subscription exists, resolution plans the Subscription's step without it, and that plan must not be written
/// again beside the first (chaos defect 15: a Complete plan for `dep` + `app` and a second Complete plan for
/// `app` alone, after `app`'s Subscription lost its decision while the first plan was carried out).
fn covers(p: &InstallPlan, wanted: &BTreeSet<&str>, owners: &[&str], manual: bool) -> bool {
    !wanted.is_empty()
        && wanted.is_subset(&csv_names(p))
        && owned_by_all(p, owners)
        && p.spec.approval.is_manual() == manual
}

fn csv_names(p: &InstallPlan) -> BTreeSet<&str> {
    p.spec
        .cluster_service_version_names
        .iter()
        .map(String::as_str)
        .collect()
}

fn owned_by_all(p: &InstallPlan, owners: &[&str]) -> bool {
    let owned_by: BTreeSet<&str> = p
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.kind == "Subscription")
        .map(|o| o.name.as_str())
        .collect();
    owners.iter().all(|o| owned_by.contains(o))
}

/// Whether plan `p` installs exactly the CSVs `wanted` (not none), is owned by each of `owners` (Subscription
/// names) and has `manual` approval: the same step, whatever its status. (Exact, unlike [`covers`]: a plan
/// without status is given the status of this run's steps.)
fn same_work(p: &InstallPlan, wanted: &BTreeSet<&str>, owners: &[&str], manual: bool) -> bool {
    !wanted.is_empty()
        && csv_names(p) == *wanted
        && owned_by_all(p, owners)
        && p.spec.approval.is_manual() == manual
}

/// A plan for `csvs` serving `owners` with `manual` approval that was created but never got its status (its
/// creator's second write failed: a 5xx, a conflict, a dropped connection, or the process died between the two).
/// No one carries out a plan without status, and [`reusable`] skips it, so resolution would create a second
/// plan for the same step beside it (the API fault proxy's duplicate): resolution writes the status of this one
/// instead of creating another. The newest such plan by generation.
pub fn unfinished<'a>(
    plans: impl IntoIterator<Item = &'a InstallPlan>,
    csvs: &[String],
    owners: &[&str],
    manual: bool,
) -> Option<&'a InstallPlan> {
    let wanted: BTreeSet<&str> = csvs.iter().map(String::as_str).collect();
    plans
        .into_iter()
        .filter(|p| p.status.is_none() && p.metadata.deletion_timestamp.is_none())
        .filter(|p| same_work(p, &wanted, owners, manual))
        .max_by_key(|p| p.spec.generation.unwrap_or(0))
}

/// The CSVs of `csvs` that a Complete plan of the same work made but `existing_csvs` (the CSV store) does not
/// show. [`reusable`] passes over such a plan (its CSV may have been deleted since), so resolution reads these
/// from the API before planning the step again: a store lagging behind cut watches made a second Complete plan
/// for one CSV, one generation higher (chaos defect 11, seed 58).
pub fn unconfirmed_csvs<'a>(
    plans: impl IntoIterator<Item = &'a InstallPlan>,
    csvs: &[String],
    owners: &[&str],
    manual: bool,
    existing_csvs: &BTreeSet<String>,
) -> BTreeSet<String> {
    let wanted: BTreeSet<&str> = csvs.iter().map(String::as_str).collect();
    plans
        .into_iter()
        .filter(|p| p.status.as_ref().map(|s| &s.phase) == Some(&InstallPlanPhase::Complete))
        .filter(|p| covers(p, &wanted, owners, manual))
        .flat_map(|_| wanted.iter().copied())
        .filter(|c| !existing_csvs.contains(*c))
        .map(str::to_string)
        .collect()
}

/// [`reusable`] over the store's plans and the ones this actor created.
pub fn reusable_in<'a>(
    stored: &'a [Arc<InstallPlan>],
    created: &'a [InstallPlan],
    csvs: &[String],
    owners: &[&str],
    manual: bool,
    existing_csvs: &BTreeSet<String>,
) -> Option<&'a InstallPlan> {
    reusable(
        stored.iter().map(|p| p.as_ref()).chain(created.iter()),
        csvs,
        owners,
        manual,
        existing_csvs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::subscription::Approval;
    use messages::testing::Ip;
    use rstest::rstest;

    fn plan(
        csvs: &[&str],
        owners: &[&str],
        manual: bool,
        phase: Option<InstallPlanPhase>,
        generation: i64,
    ) -> InstallPlan {
        let approval = if manual {
            Approval::Manual
        } else {
            Approval::Automatic
        };
        let mut p = Ip::named(&format!("install-{generation}"))
            .in_ns("ns")
            .csvs(csvs)
            .approval(approval, !manual)
            .generation(generation);
        for owner in owners {
            p = p.owned_by_subscription(owner);
        }
        if let Some(phase) = phase {
            p = p.phase(phase);
        }
        p.build()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[rstest]
    #[case::an_installing_plan_for_the_same_csv_is_reused(plan(&["a.v2"], &["sub"], false, Some(InstallPlanPhase::Installing), 3), &[], Some(3))]
    #[case::a_complete_plan_whose_csv_exists_is_reused(plan(&["a.v2"], &["sub"], false, Some(InstallPlanPhase::Complete), 3), &["a.v2"], Some(3))]
    #[case::a_complete_plan_whose_csv_is_gone_is_not(plan(&["a.v2"], &["sub"], false, Some(InstallPlanPhase::Complete), 3), &[], None)]
    #[case::a_failed_plan_is_not(plan(&["a.v2"], &["sub"], false, Some(InstallPlanPhase::Failed), 3), &["a.v2"], None)]
    #[case::a_plan_without_status_is_not(plan(&["a.v2"], &["sub"], false, None, 3), &[], None)]
    #[case::another_csv_is_not(plan(&["a.v1"], &["sub"], false, Some(InstallPlanPhase::Installing), 3), &[], None)]
    #[case::another_subscriptions_plan_is_not(plan(&["a.v2"], &["other"], false, Some(InstallPlanPhase::Installing), 3), &[], None)]
    #[case::another_approval_is_not(plan(&["a.v2"], &["sub"], true, Some(InstallPlanPhase::RequiresApproval), 3), &[], None)]
    #[case::a_complete_plan_that_also_installed_a_dependency_is_reused(plan(&["dep.v1", "a.v2"], &["sub"], false, Some(InstallPlanPhase::Complete), 3), &["a.v2", "dep.v1"], Some(3))]
    #[case::an_installing_plan_that_also_installs_a_dependency_is_reused(plan(&["dep.v1", "a.v2"], &["sub"], false, Some(InstallPlanPhase::Installing), 3), &[], Some(3))]
    #[case::a_plan_with_a_dependency_but_another_csv_is_not(plan(&["dep.v1", "a.v1"], &["sub"], false, Some(InstallPlanPhase::Complete), 3), &["a.v1", "dep.v1"], None)]
    fn a_plan_is_reused_only_when_it_does_the_same_work(
        #[case] existing: InstallPlan,
        #[case] existing_csvs: &[&str],
        #[case] want_generation: Option<i64>,
    ) {
        let existing_csvs: BTreeSet<String> = names(existing_csvs).into_iter().collect();
        let got = reusable(
            [&existing],
            &names(&["a.v2"]),
            &["sub"],
            false,
            &existing_csvs,
        );
        assert_eq!(got.and_then(|p| p.spec.generation), want_generation);
    }

    #[rstest]
    #[case::a_plan_without_status_for_the_same_step(plan(&["a.v2"], &["sub"], false, None, 3), Some(3))]
    #[case::a_plan_with_status_is_not(plan(&["a.v2"], &["sub"], false, Some(InstallPlanPhase::Installing), 3), None)]
    #[case::another_csv_is_not(plan(&["a.v1"], &["sub"], false, None, 3), None)]
    #[case::another_subscriptions_plan_is_not(plan(&["a.v2"], &["other"], false, None, 3), None)]
    #[case::another_approval_is_not(plan(&["a.v2"], &["sub"], true, None, 3), None)]
    #[case::one_with_a_dependency_beside_is_not(plan(&["dep.v1", "a.v2"], &["sub"], false, None, 3), None)]
    fn a_plan_left_without_status_is_finished_not_duplicated(
        #[case] existing: InstallPlan,
        #[case] want_generation: Option<i64>,
    ) {
        let got = unfinished([&existing], &names(&["a.v2"]), &["sub"], false);
        assert_eq!(got.and_then(|p| p.spec.generation), want_generation);
    }

    #[test]
    fn the_newest_of_several_is_reused_and_a_shared_plan_serves_each_owner() {
        let older = plan(
            &["a.v2", "b.v1"],
            &["sub", "dep"],
            false,
            Some(InstallPlanPhase::Installing),
            2,
        );
        let newer = plan(
            &["b.v1", "a.v2"],
            &["dep", "sub"],
            false,
            Some(InstallPlanPhase::Installing),
            5,
        );
        let none = BTreeSet::new();
        let got = reusable(
            [&older, &newer],
            &names(&["a.v2", "b.v1"]),
            &["sub"],
            false,
            &none,
        );
        assert_eq!(got.and_then(|p| p.spec.generation), Some(5));
        // The step for `a.v2` alone (its dependency `b.v1` provided since) is done by the shared plan too.
        let alone = reusable([&older], &names(&["a.v2"]), &["sub"], false, &none);
        assert_eq!(alone.and_then(|p| p.spec.generation), Some(2));
        assert!(reusable([&older], &names(&["a.v3"]), &["sub"], false, &none).is_none());
    }

    #[rstest]
    #[case::a_complete_plan_whose_csv_the_store_lacks(Some(InstallPlanPhase::Complete), &[], &["a.v1"])]
    #[case::a_complete_plan_whose_csv_the_store_shows(Some(InstallPlanPhase::Complete), &["a.v1"], &[])]
    #[case::a_plan_being_carried_out(Some(InstallPlanPhase::Installing), &[], &[])]
    #[case::a_failed_plan(Some(InstallPlanPhase::Failed), &[], &[])]
    #[case::a_plan_without_status(None, &[], &[])]
    fn csvs_to_read_before_planning_again(
        #[case] phase: Option<InstallPlanPhase>,
        #[case] stored: &[&str],
        #[case] want: &[&str],
    ) {
        let p = plan(&["a.v1"], &["sub"], false, phase, 1);
        let existing: BTreeSet<String> = stored.iter().map(|c| c.to_string()).collect();
        let got = unconfirmed_csvs([&p], &["a.v1".to_string()], &["sub"], false, &existing);
        let want: BTreeSet<String> = want.iter().map(|c| c.to_string()).collect();
        assert_eq!(got, want);
    }
}
