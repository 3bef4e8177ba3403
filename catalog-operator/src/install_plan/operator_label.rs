//! The Operator label (`operators.coreos.com/<package>.<namespace>`) an InstallPlan's step objects get when
//! they are created (issue 19: requests per install). OLM's adoption controller patches it on afterwards; the
//! objects end up labelled the same, without a patch each. The package is the one the CSV step's
//! `operatorframework.io/properties` annotation names (`olm.package`), which the plan's steps carry
//! (`crate::steps::csv_manifest`). A CSV with no such property gets no label here (olm-operator's Operator view
//! labels its objects later, as before). Pure.

use crate::steps::PROPERTIES_ANNOTATION;
use messages::crd::annotations::operator_component_label;
use messages::crd::install_plan::Step;
use messages::crd::operator::operator_name;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The package an `operatorframework.io/properties` document names (`olm.package`'s `packageName`).
fn package_of(properties: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(properties).ok()?;
    doc["properties"]
        .as_array()?
        .iter()
        .find(|p| p["type"] == "olm.package")
        .and_then(|p| p["value"]["packageName"].as_str())
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// For each CSV the plan creates (by name), the Operator label its step objects get in `namespace`.
pub fn by_csv(steps: &[Step], namespace: &str) -> HashMap<String, String> {
    steps
        .iter()
        .filter(|s| s.resource.kind == "ClusterServiceVersion")
        .filter_map(|s| {
            let csv: Value = serde_json::from_str(&s.resource.manifest).ok()?;
            let properties = csv["metadata"]["annotations"][PROPERTIES_ANNOTATION].as_str()?;
            let package = package_of(properties)?;
            Some((
                s.resource.name.clone(),
                operator_component_label(&operator_name(&package, namespace)),
            ))
        })
        .collect()
}

/// The labels of a new InstallPlan: the Operator label of each Subscription it is made for, and of each new
/// dependency Subscription it creates (the plan is that Subscription's first plan). OLM's adoption controller
/// labels the current plan of every Subscription so; labelled from the start, a Subscription's first plan needs
/// no label write, and olm-operator's Operator view lists no plans for it (`operator_view::plans`).
pub fn of_plan<'a>(
    packages: impl IntoIterator<Item = &'a str>,
    namespace: &str,
) -> BTreeMap<String, String> {
    packages
        .into_iter()
        .filter(|package| !package.is_empty())
        .map(|package| {
            (
                operator_component_label(&operator_name(package, namespace)),
                String::new(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::{StepResource, StepStatus};
    use rstest::rstest;
    use serde_json::json;

    fn step(kind: &str, name: &str, manifest: Value) -> Step {
        Step {
            resolving: "etcd.v1".into(),
            resource: StepResource {
                kind: kind.into(),
                name: name.into(),
                manifest: manifest.to_string(),
                ..StepResource::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    fn csv_with(properties: Option<Value>) -> Value {
        match properties {
            Some(p) => {
                json!({"kind": "ClusterServiceVersion", "metadata": {"name": "etcd.v1", "annotations": {PROPERTIES_ANNOTATION: p.to_string()}}})
            }
            None => json!({"kind": "ClusterServiceVersion", "metadata": {"name": "etcd.v1"}}),
        }
    }

    #[rstest]
    #[case::the_package_property_names_the_operator(Some(json!({"properties": [{"type": "olm.gvk", "value": {}}, {"type": "olm.package", "value": {"packageName": "etcd", "version": "1.0.0"}}]})), Some("operators.coreos.com/etcd.ns"))]
    #[case::no_properties_no_label(None, None)]
    #[case::no_package_property_no_label(Some(json!({"properties": [{"type": "olm.gvk", "value": {}}]})), None)]
    #[case::an_empty_package_name_no_label(Some(json!({"properties": [{"type": "olm.package", "value": {"packageName": ""}}]})), None)]
    fn the_csv_steps_package_names_the_label(
        #[case] properties: Option<Value>,
        #[case] expected: Option<&str>,
    ) {
        let steps = vec![
            step("ClusterServiceVersion", "etcd.v1", csv_with(properties)),
            step("ServiceAccount", "etcd", json!({"kind": "ServiceAccount"})),
        ];
        let labels = by_csv(&steps, "ns");
        assert_eq!(labels.get("etcd.v1").map(String::as_str), expected);
        assert_eq!(labels.len(), usize::from(expected.is_some()));
    }

    #[rstest]
    #[case::one_subscription(&["etcd"], &["operators.coreos.com/etcd.ns"])]
    #[case::two_subscriptions_one_plan(&["etcd", "vault"], &["operators.coreos.com/etcd.ns", "operators.coreos.com/vault.ns"])]
    #[case::a_subscription_without_package_names_nothing(&[""], &[])]
    #[case::an_owner_and_its_new_dependency_once_each(&["etcd", "vault", "etcd"], &["operators.coreos.com/etcd.ns", "operators.coreos.com/vault.ns"])]
    fn a_new_plan_carries_its_subscriptions_operators(
        #[case] packages: &[&str],
        #[case] expected: &[&str],
    ) {
        let labels = of_plan(packages.iter().copied(), "ns");
        assert_eq!(
            labels.keys().map(String::as_str).collect::<Vec<_>>(),
            expected
        );
        assert!(labels.values().all(String::is_empty));
    }

    #[test]
    fn a_long_name_is_cut_as_olm_cuts_it() {
        let package = "p".repeat(70);
        let properties =
            json!({"properties": [{"type": "olm.package", "value": {"packageName": package}}]});
        let steps = vec![step(
            "ClusterServiceVersion",
            "etcd.v1",
            csv_with(Some(properties)),
        )];
        let label = by_csv(&steps, "ns").remove("etcd.v1").unwrap_or_default();
        assert_eq!(label, format!("operators.coreos.com/{}", "p".repeat(63)));
    }
}
