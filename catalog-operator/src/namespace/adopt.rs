//! A Subscription whose decisions were all lost after its plan ran: it has no `installPlanRef` and no
//! `currentCSV`, yet a Complete InstallPlan it owns made a CSV of its package. Resolution would read it as a
//! fresh Subscription and propose its starting bundle beside the CSV its own plan installed, which the resolver
//! rejects (one package, two bundles): the Subscription ends `ResolutionFailed` with an empty state forever.
//! This happens when every status write of the Subscription is lost while its plans run (its actor failing or
//! panicking, the catalog-operator killed), and the decisions kept in memory die with the process (chaos run,
//! seed 1 under heavy load: "a Subscription's status never written after the restart").
//!
//! The Subscription adopts that plan as if its decision had reached it, as it adopts the plan named by its
//! `olm.generated-by` annotation: the newest Complete plan it owns (same name and, when both are known, same
//! uid: a Subscription deleted and created again owns nothing yet) that names a CSV of its package. Pure.

use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use messages::crd::subscription::Subscription;
use std::sync::Arc;

/// The plan to adopt for `sub` (which must have neither reference nor current CSV) and the CSV of its package
/// that plan made. `package_of` names the package of a CSV of the namespace (or of the CSV that replaced it).
pub fn lost_plan<'a>(
    sub: &Subscription,
    plans: &'a [Arc<InstallPlan>],
    package_of: impl Fn(&str) -> Option<String>,
) -> Option<(&'a InstallPlan, String)> {
    let name = sub.metadata.name.as_deref()?;
    let uid = sub.metadata.uid.as_deref().unwrap_or_default();
    let mut owned: Vec<&InstallPlan> = plans
        .iter()
        .map(Arc::as_ref)
        .filter(|p| {
            p.metadata.owner_references.iter().flatten().any(|o| {
                o.kind == "Subscription"
                    && o.name == name
                    && (uid.is_empty() || o.uid.is_empty() || o.uid == uid)
            })
        })
        .filter(|p| p.phase() == InstallPlanPhase::Complete)
        .collect();
    owned.sort_by_key(|p| std::cmp::Reverse(p.spec.generation.unwrap_or(0)));
    owned.into_iter().find_map(|p| {
        p.spec
            .cluster_service_version_names
            .iter()
            .find(|c| package_of(c).as_deref() == Some(sub.spec.package.as_str()))
            .map(|c| (p, c.clone()))
    })
}

/// Chaos defect 12: a Subscription whose current and installed CSVs are both gone while a CSV its own Complete
/// plan made lives on, with no `replaces` chain left between them (the CSVs in between are gone too, e.g.
/// v1.0.0 → v1.1.0 → v1.2.0 with only v1.2.0 left after its decisions were lost). The Subscription follows to
/// that CSV as if the decisions had reached it; else it waited `UpgradePending` on a CSV that never comes back.
/// `exists` tells whether a CSV is in the namespace. Pure.
pub fn surviving_csv(
    sub: &Subscription,
    plans: &[Arc<InstallPlan>],
    package_of: impl Fn(&str) -> Option<String>,
    exists: impl Fn(&str) -> bool,
) -> Option<String> {
    let st = sub.status.as_ref()?;
    if st.current_csv.is_empty() || exists(&st.current_csv) || exists(&st.installed_csv) {
        return None;
    }
    lost_plan(sub, plans, package_of)
        .map(|(_, csv)| csv)
        .filter(|csv| exists(csv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use messages::crd::install_plan::{InstallPlanSpec, InstallPlanStatus};
    use rstest::rstest;

    fn sub(uid: &str) -> Subscription {
        let mut s: Subscription = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "chain", "namespace": "ns", "uid": uid},
            "spec": {"name": "chain", "source": "cat", "sourceNamespace": "ns"}
        }))
        .expect("subscription");
        s.status = None;
        s
    }

    fn plan(
        name: &str,
        owner: (&str, &str),
        generation: i64,
        phase: InstallPlanPhase,
        csvs: &[&str],
    ) -> Arc<InstallPlan> {
        Arc::new(InstallPlan {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "operators.coreos.com/v1alpha1".into(),
                    kind: "Subscription".into(),
                    name: owner.0.into(),
                    uid: owner.1.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            spec: InstallPlanSpec {
                cluster_service_version_names: csvs.iter().map(|c| c.to_string()).collect(),
                generation: Some(generation),
                source: None,
                source_namespace: None,
                approval: messages::crd::subscription::Approval::Automatic,
                approved: true,
            },
            status: Some(InstallPlanStatus {
                phase,
                ..Default::default()
            }),
        })
    }

    /// `chain.*` CSVs are of package `chain`, `dep.*` of `dep`; `gone.*` are unknown (no CSV, no successor).
    fn package_of(csv: &str) -> Option<String> {
        csv.split_once('.')
            .map(|(p, _)| p.to_string())
            .filter(|p| p != "gone")
    }

    use InstallPlanPhase::{Complete, Installing};

    #[rstest]
    #[case::its_only_complete_plan(vec![plan("ip1", ("chain", "u1"), 1, Complete, &["chain.v1"])], Some(("ip1", "chain.v1")))]
    #[case::the_newest_complete_plan(
        vec![plan("ip1", ("chain", "u1"), 1, Complete, &["chain.v1"]),
             plan("ip3", ("chain", "u1"), 3, Complete, &["chain.v3"]),
             plan("ip2", ("chain", "u1"), 2, Complete, &["chain.v2"])],
        Some(("ip3", "chain.v3")))]
    #[case::a_plan_in_flight_is_left_to_resolution_s_reuse(
        vec![plan("ip1", ("chain", "u1"), 1, Complete, &["chain.v1"]),
             plan("ip2", ("chain", "u1"), 2, Installing, &["chain.v2"])],
        Some(("ip1", "chain.v1")))]
    #[case::the_csv_of_its_package_beside_a_dependency(
        vec![plan("ip1", ("chain", "u1"), 1, Complete, &["dep.v1", "chain.v1"])], Some(("ip1", "chain.v1")))]
    #[case::a_plan_of_another_subscription(vec![plan("ip1", ("other", "u9"), 1, Complete, &["chain.v1"])], None)]
    #[case::a_plan_of_a_former_subscription_of_that_name(
        vec![plan("ip1", ("chain", "u0"), 1, Complete, &["chain.v1"])], None)]
    #[case::a_plan_whose_csvs_are_unknown(vec![plan("ip1", ("chain", "u1"), 1, Complete, &["gone.v1"])], None)]
    #[case::only_plans_in_flight(vec![plan("ip1", ("chain", "u1"), 1, Installing, &["chain.v1"])], None)]
    #[case::no_plan(vec![], None)]
    fn adopts_the_newest_complete_plan_it_owns(
        #[case] plans: Vec<Arc<InstallPlan>>,
        #[case] want: Option<(&str, &str)>,
    ) {
        let got = lost_plan(&sub("u1"), &plans, package_of)
            .map(|(p, csv)| (p.metadata.name.clone().unwrap_or_default(), csv));
        assert_eq!(
            got,
            want.map(|(p, c)| (p.to_string(), c.to_string())),
            "plans {:?}",
            plans.iter().map(|p| &p.metadata.name).collect::<Vec<_>>()
        );
    }

    fn sub_at(current: &str, installed: &str) -> Subscription {
        let mut s = sub("u1");
        s.status = Some(messages::crd::subscription::SubscriptionStatus {
            current_csv: current.into(),
            installed_csv: installed.into(),
            ..Default::default()
        });
        s
    }

    #[rstest]
    #[case::current_and_installed_gone_and_its_plan_s_csv_lives(("chain.v1", "chain.v1"), &["chain.v3"], Some("chain.v3"))]
    #[case::the_installed_csv_lives(("chain.v2", "chain.v1"), &["chain.v1", "chain.v3"], None)]
    #[case::the_current_csv_lives(("chain.v3", "chain.v1"), &["chain.v3"], None)]
    #[case::its_plan_s_csv_is_gone_too(("chain.v1", "chain.v1"), &[], None)]
    #[case::no_current_csv(("", ""), &["chain.v3"], None)]
    fn follows_to_the_csv_its_own_plan_made(
        #[case] (current, installed): (&str, &str),
        #[case] existing: &[&str],
        #[case] want: Option<&str>,
    ) {
        let plans = vec![plan("ip3", ("chain", "u1"), 3, Complete, &["chain.v3"])];
        let got = surviving_csv(&sub_at(current, installed), &plans, package_of, |c| {
            existing.contains(&c)
        });
        assert_eq!(got.as_deref(), want);
    }
}
