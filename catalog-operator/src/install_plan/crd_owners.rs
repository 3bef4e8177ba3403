//! Competing CRD owners (OLM `competingCRDOwnersExist` in `ExecutePlan`, spec §4.4, scenario 32): a CSV step
//! for a CSV the plan does not name in `spec.clusterServiceVersionNames` (a dependency the plan did not set
//! out to install) must not own a CRD that another CSV in the namespace already owns. Pure.

use messages::crd::csv::ClusterServiceVersion;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// CRD name (and, as OLM does, APIService group) → the CSVs in the namespace that own it.
pub type Owners = BTreeMap<String, Vec<String>>;

/// OLM's `getExistingAPIOwners` over the CSVs of one namespace.
pub fn existing(csvs: &[Arc<ClusterServiceVersion>]) -> Owners {
    let mut owners = Owners::new();
    for csv in csvs {
        let name = csv.metadata.name.clone().unwrap_or_default();
        let crds = csv
            .spec
            .custom_resource_definitions
            .as_ref()
            .and_then(|c| c.owned.as_ref())
            .into_iter()
            .flatten()
            .map(|d| d.name.clone());
        let apis = csv
            .spec
            .api_service_definitions
            .as_ref()
            .and_then(|a| a.owned.as_ref())
            .into_iter()
            .flatten()
            .map(|d| d.group.clone());
        for key in crds.chain(apis) {
            owners.entry(key).or_default().push(name.clone());
        }
    }
    owners
}

/// The CRD names a CSV manifest owns (`spec.customresourcedefinitions.owned[].name`).
pub fn owned_crds(csv: &Value) -> Vec<String> {
    csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["name"].as_str().map(str::to_string))
        .collect()
}

/// The error for the CSV step of `csv` (owning `owned`), or `None` when it may proceed.
pub fn competing(
    csv: &str,
    owned: &[String],
    plan_csvs: &[String],
    owners: &Owners,
    namespace: &str,
) -> Option<String> {
    if plan_csvs.iter().any(|n| n == csv) {
        return None;
    }
    for crd in owned {
        match owners.get(crd).map(Vec::as_slice) {
            None | Some([]) => {}
            Some([only]) if only == csv => {}
            Some([_]) => {
                return Some(format!(
                    "pre-existing CRD owners found for owned CRD(s) of dependent CSV {csv}"
                ));
            }
            Some(many) => {
                return Some(format!(
                    "error checking crd owners for: {csv}: CSVs {many:?} in namespace {namespace} all claim to own CRD {crd}"
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn csv(name: &str, owned: &[&str]) -> Arc<ClusterServiceVersion> {
        let owned: Vec<Value> = owned
            .iter()
            .map(|n| json!({"name": n, "version": "v1", "kind": "K"}))
            .collect();
        Arc::new(
            serde_json::from_value(json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"customresourcedefinitions": {"owned": owned}, "install": {"strategy": "deployment"}}}))
            .expect("csv"),
        )
    }

    #[test]
    fn existing_owners_are_collected_per_crd() {
        let owners = existing(&[csv("a.v1", &["x.io", "y.io"]), csv("b.v1", &["y.io"])]);
        assert_eq!(
            owners,
            Owners::from([
                ("x.io".into(), vec!["a.v1".into()]),
                ("y.io".into(), vec!["a.v1".into(), "b.v1".into()])
            ])
        );
    }

    #[test]
    fn owned_crds_are_read_from_the_manifest() {
        let manifest = json!({"spec": {"customresourcedefinitions": {"owned": [{"name": "x.io"}, {"name": "y.io"}]}}});
        assert_eq!(owned_crds(&manifest), ["x.io", "y.io"]);
        assert!(owned_crds(&json!({"spec": {}})).is_empty());
    }

    #[rstest]
    #[case::a_csv_the_plan_names_is_never_checked("dep.v1", &["dep.v1"], &[("x.io", &["other.v1"][..])], None)]
    #[case::no_other_owner_lets_a_dependency_through("dep.v1", &[], &[], None)]
    #[case::the_dependency_owning_its_crd_already_is_fine("dep.v1", &[], &[("x.io", &["dep.v1"][..])], None)]
    #[case::another_owner_stops_a_dependency("dep.v1", &[], &[("x.io", &["other.v1"][..])],
        Some("pre-existing CRD owners found for owned CRD(s) of dependent CSV dep.v1"))]
    #[case::several_owners_stop_a_dependency("dep.v1", &[], &[("x.io", &["a.v1", "b.v1"][..])],
        Some("error checking crd owners for: dep.v1: CSVs [\"a.v1\", \"b.v1\"] in namespace ns all claim to own CRD x.io"))]
    fn dependencies_must_not_compete_for_crds(
        #[case] name: &str,
        #[case] plan_csvs: &[&str],
        #[case] owners: &[(&str, &[&str])],
        #[case] want: Option<&str>,
    ) {
        let owners: Owners = owners
            .iter()
            .map(|(crd, csvs)| {
                (
                    crd.to_string(),
                    csvs.iter().map(|c| c.to_string()).collect(),
                )
            })
            .collect();
        let plan: Vec<String> = plan_csvs.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            competing(name, &["x.io".to_string()], &plan, &owners, "ns").as_deref(),
            want
        );
    }
}
