//! The resolver's input for one namespace, from the cluster's objects (spec §4.2 `@existing`, sources,
//! Subscriptions). Pure.

use crate::group_view::GroupView;
use crate::snapshot::tolerant_version;
use crate::steps::PROPERTIES_ANNOTATION;
use messages::crd::csv::{ClusterServiceVersion, CrdDescription, CsvPhase as Phase};
use messages::crd::subscription::Subscription;
use resolver::{
    CatalogSnapshot, CsvPhase, Gvk, InstalledOperator, Namespace, Property, SubscriptionSpec,
};
use std::sync::Arc;

pub const EXCLUDE_GLOBAL_ANNOTATION: &str =
    "olm.operatorframework.io/exclude-global-namespace-resolution";

pub fn subscription_spec(sub: &Subscription) -> SubscriptionSpec {
    let status = sub.status.clone().unwrap_or_default();
    let nonempty = |s: String| Some(s).filter(|s| !s.is_empty());
    SubscriptionSpec {
        name: sub.metadata.name.clone().unwrap_or_default(),
        package: sub.spec.package.clone(),
        channel: sub.spec.channel.clone().unwrap_or_default(),
        source: sub.spec.catalog_source.clone(),
        source_namespace: sub.spec.catalog_source_namespace.clone(),
        starting_csv: sub.spec.starting_csv.clone().filter(|s| !s.is_empty()),
        installed_csv: nonempty(status.installed_csv),
        current_csv: nonempty(status.current_csv),
    }
}

/// `plural.group` names a CRD; OLM's GVK for it.
fn crd_gvk(d: &CrdDescription) -> Gvk {
    let group = d.name.split_once('.').map(|(_, g)| g).unwrap_or_default();
    Gvk::new(group, &d.version, &d.kind)
}

fn properties(csv: &ClusterServiceVersion) -> Vec<Property> {
    let Some(text) = csv
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROPERTIES_ANNOTATION))
    else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    v["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| serde_json::from_value(p.clone()).ok())
        .collect()
}

fn phase(p: Phase) -> CsvPhase {
    match p {
        Phase::Succeeded => CsvPhase::Succeeded,
        Phase::Replacing | Phase::Deleting => CsvPhase::Replacing,
        Phase::Failed => CsvPhase::Failed,
        _ => CsvPhase::Other,
    }
}

/// The installed operators resolution keeps: non-copied CSVs, but not one that another CSV of the namespace
/// replaces while that replacement goes well (it is on its way out; keeping it would claim its package twice
/// during an upgrade). A replaced CSV whose replacement chain ends in a `Failed` CSV is kept, as OLM keeps
/// every existing CSV: without fail-forward it holds the package and blocks the upgrade of the failed one
/// (OLM's "FailForwardDisabled/…/NotSatisfiable"); with fail-forward the resolver hides it
/// (`Replacing` all along the chain, OLM's `isReplacementChainThatEndsInFailure`).
pub fn installed(
    csvs: &[Arc<ClusterServiceVersion>],
    subs: &[Arc<Subscription>],
) -> Vec<InstalledOperator> {
    let own: Vec<&Arc<ClusterServiceVersion>> = csvs.iter().filter(|c| !c.is_copied()).collect();
    csvs.iter()
        .filter(|c| !c.is_copied())
        .filter(|c| {
            let name = c.metadata.name.as_deref().unwrap_or_default();
            !super::fail_forward::replaced(name, &own)
                || super::fail_forward::chain_ends_in_failure(name, &own)
        })
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            let properties = properties(c);
            let package = properties
                .iter()
                .find(|p| p.type_ == "olm.package")
                .and_then(|p| p.value["packageName"].as_str().map(str::to_string))
                .or_else(|| {
                    subs.iter()
                        .find(|s| s.status.as_ref().is_some_and(|st| st.installed_csv == name))
                        .map(|s| s.spec.package.clone())
                });
            let crds = c
                .spec
                .custom_resource_definitions
                .clone()
                .unwrap_or_default();
            InstalledOperator {
                version: tolerant_version(c.spec.version.as_deref().unwrap_or_default())
                    .unwrap_or_else(|_| semver::Version::new(0, 0, 0)),
                provided_apis: crds.owned.iter().flatten().map(crd_gvk).collect(),
                required_apis: crds.required.iter().flatten().map(crd_gvk).collect(),
                properties,
                replaces: c.spec.replaces.clone().filter(|r| !r.is_empty()),
                phase: phase(c.phase()),
                package,
                name,
            }
        })
        .collect()
}

/// Whether the namespace's OperatorGroup asks for fail-forward upgrades (OLM `IsFailForwardEnabled`:
/// `spec.upgradeStrategy` is `TechPreviewUnsafeFailForward`), and whether it drops the global catalogs.
pub fn group_options(groups: &[Arc<GroupView>]) -> (bool, bool) {
    let Some(og) = groups.first() else {
        return (false, false);
    };
    let fail_forward = groups.len() == 1 && og.fail_forward();
    let exclude_global = og
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(EXCLUDE_GLOBAL_ANNOTATION))
        .is_some_and(|v| v == "true");
    (fail_forward, exclude_global)
}

pub fn namespace(
    name: &str,
    subs: &[Arc<Subscription>],
    csvs: &[Arc<ClusterServiceVersion>],
    catalogs: Vec<Arc<CatalogSnapshot>>,
    fail_forward: bool,
) -> Namespace {
    Namespace {
        name: name.to_string(),
        subscriptions: subs.iter().map(|s| subscription_spec(s)).collect(),
        installed: installed(csvs, subs),
        catalogs: catalogs.iter().map(|c| (**c).clone()).collect(),
        fail_forward,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::testing::Csv;
    use serde_json::json;

    fn csv(
        name: &str,
        replaces: Option<&str>,
        labels: &[(&str, &str)],
    ) -> Arc<ClusterServiceVersion> {
        let mut csv = Csv::named(name)
            .in_ns("ns")
            .version("1.0.0")
            .annotation(
                PROPERTIES_ANNOTATION,
                r#"{"properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}"#,
            )
            .owns_crd("things.example.com", "v1", "Thing");
        if let Some(replaces) = replaces {
            csv = csv.replaces(replaces);
        }
        for (key, value) in labels {
            csv = csv.label(key, value);
        }
        Arc::new(csv.build())
    }

    #[test]
    fn an_installed_csv_carries_its_package_apis_and_version() {
        let got = installed(&[csv("a.v1", None, &[])], &[]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].package.as_deref(), Some("a"));
        assert_eq!(
            got[0].provided_apis,
            vec![Gvk::new("example.com", "v1", "Thing")]
        );
        assert_eq!(got[0].version.to_string(), "1.0.0");
    }

    fn with_phase(c: Arc<ClusterServiceVersion>, phase: Phase) -> Arc<ClusterServiceVersion> {
        let mut c = (*c).clone();
        c.status = Some(messages::crd::csv::ClusterServiceVersionStatus {
            phase,
            ..Default::default()
        });
        Arc::new(c)
    }

    #[test]
    fn copies_are_left_out_and_a_replaced_csv_only_while_its_replacement_goes_well() {
        let names = |v: Vec<InstalledOperator>| v.into_iter().map(|i| i.name).collect::<Vec<_>>();
        let copy = csv("b.v1", None, &[("olm.copiedFrom", "other")]);
        let old = with_phase(csv("a.v1", None, &[]), Phase::Replacing);
        let installing = with_phase(csv("a.v2", Some("a.v1"), &[]), Phase::Installing);
        let failed = with_phase(csv("a.v2", Some("a.v1"), &[]), Phase::Failed);
        assert_eq!(
            names(installed(&[old.clone(), installing, copy.clone()], &[])),
            ["a.v2"]
        );
        assert_eq!(
            names(installed(&[old, failed, copy], &[])),
            ["a.v1", "a.v2"]
        );
    }

    fn group(spec: serde_json::Value, annotations: serde_json::Value) -> Arc<GroupView> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "og", "namespace": "ns", "annotations": annotations}, "spec": spec}))
                .expect("group"),
        )
    }

    #[rstest::rstest]
    #[case::no_group(vec![], (false, false))]
    #[case::the_default_strategy(vec![group(json!({}), json!({}))], (false, false))]
    #[case::fail_forward(vec![group(json!({"upgradeStrategy": "TechPreviewUnsafeFailForward"}), json!({}))], (true, false))]
    #[case::two_groups_never_fail_forward(
        vec![group(json!({"upgradeStrategy": "TechPreviewUnsafeFailForward"}), json!({})), group(json!({}), json!({}))], (false, false))]
    #[case::global_catalogs_excluded(
        vec![group(json!({}), json!({EXCLUDE_GLOBAL_ANNOTATION: "true"}))], (false, true))]
    fn the_group_decides_fail_forward_and_global_catalogs(
        #[case] groups: Vec<Arc<GroupView>>,
        #[case] want: (bool, bool),
    ) {
        assert_eq!(group_options(&groups), want);
    }
}
