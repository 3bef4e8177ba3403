//! The resolver's input for one namespace, from the cluster's objects (spec §4.2 `@existing`, sources,
//! Subscriptions). Pure.

use crate::snapshot::tolerant_version;
use crate::steps::PROPERTIES_ANNOTATION;
use kube::core::PartialObjectMeta;
use messages::crd::csv::{ClusterServiceVersion, CrdDescription, CsvPhase as Phase};
use messages::crd::operator_group::OperatorGroup;
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

/// The installed operators resolution keeps: non-copied CSVs that no other CSV of the namespace replaces
/// (a replaced CSV is on its way out; keeping it would claim its package twice during an upgrade).
pub fn installed(
    csvs: &[Arc<ClusterServiceVersion>],
    subs: &[Arc<Subscription>],
    fail_forward: bool,
) -> Vec<InstalledOperator> {
    let replaced: Vec<&str> = csvs
        .iter()
        .filter_map(|c| c.spec.replaces.as_deref())
        .collect();
    csvs.iter()
        .filter(|c| !c.is_copied())
        .filter(|c| {
            fail_forward || !replaced.contains(&c.metadata.name.as_deref().unwrap_or_default())
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

/// Whether the namespace's OperatorGroup asks for fail-forward upgrades, and whether it drops the global catalogs.
/// Only metadata is watched (robust to undecodable specs), so fail-forward (`spec.upgradeStrategy`) is not read.
pub fn group_options(groups: &[Arc<PartialObjectMeta<OperatorGroup>>]) -> (bool, bool) {
    let Some(og) = groups.first() else {
        return (false, false);
    };
    let fail_forward = false;
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
        installed: installed(csvs, subs, fail_forward),
        catalogs: catalogs.iter().map(|c| (**c).clone()).collect(),
        fail_forward,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csv(
        name: &str,
        replaces: Option<&str>,
        labels: serde_json::Value,
    ) -> Arc<ClusterServiceVersion> {
        Arc::new(
            serde_json::from_value(json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "metadata": {"name": name, "namespace": "ns", "labels": labels,
                             "annotations": {PROPERTIES_ANNOTATION: r#"{"properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}"#}},
                "spec": {"version": "1.0.0", "replaces": replaces, "install": {"strategy": "deployment"},
                         "customresourcedefinitions": {"owned": [{"name": "things.example.com", "version": "v1", "kind": "Thing"}]}}}))
            .expect("csv"),
        )
    }

    #[test]
    fn an_installed_csv_carries_its_package_apis_and_version() {
        let got = installed(&[csv("a.v1", None, json!({}))], &[], false);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].package.as_deref(), Some("a"));
        assert_eq!(
            got[0].provided_apis,
            vec![Gvk::new("example.com", "v1", "Thing")]
        );
        assert_eq!(got[0].version.to_string(), "1.0.0");
    }

    #[test]
    fn copies_and_replaced_csvs_are_left_out_unless_failing_forward() {
        let csvs = [
            csv("a.v1", None, json!({})),
            csv("a.v2", Some("a.v1"), json!({})),
            csv("b.v1", None, json!({"olm.copiedFrom": "other"})),
        ];
        let names = |v: Vec<InstalledOperator>| v.into_iter().map(|i| i.name).collect::<Vec<_>>();
        assert_eq!(names(installed(&csvs, &[], false)), ["a.v2"]);
        assert_eq!(names(installed(&csvs, &[], true)), ["a.v1", "a.v2"]);
    }
}
