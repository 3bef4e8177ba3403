//! Owner references of the namespaced objects an InstallPlan step creates: the CSV the step resolves is added
//! as a non-controller owner, and every reference to a CSV gets the UID of the CSV it names. The second half is
//! how OLM v0 executes plans (`getUpdatedOwnerReferences`): OLM writes each step's manifest at resolution time,
//! before the CSV exists, with `ownerReferences[].uid: ""`, and fills the UID by name when it executes the plan.
//! A plan OLM v0 resolved and left waiting (Manual approval) thus completes under olm-rs after approval, where
//! applying the manifest as written is rejected (`metadata.ownerReferences.uid: Invalid value: ""`).

use serde_json::Value;
use std::collections::HashMap;

const CSV_KIND: &str = "ClusterServiceVersion";

fn is_csv_ref(r: &Value) -> bool {
    r["kind"].as_str() == Some(CSV_KIND)
        && r["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("operators.coreos.com/"))
}

/// The names of the CSVs the manifest's owner references point at (their UIDs are needed), deduplicated.
pub fn csv_owner_names(refs: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = refs
        .iter()
        .filter(|r| is_csv_ref(r))
        .filter_map(|r| r["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The references to write: each CSV reference with the UID of the CSV it names (`uids`, by name; a name
/// missing there keeps its reference as written), then `owner` once (a reference with its UID is replaced).
pub fn owner_references(
    refs: &[Value],
    owner: Value,
    uids: &HashMap<String, String>,
) -> Vec<Value> {
    let mut out: Vec<Value> = refs
        .iter()
        .cloned()
        .map(|mut r| {
            if is_csv_ref(&r)
                && let Some(uid) = r["name"].as_str().and_then(|n| uids.get(n))
            {
                r["uid"] = Value::String(uid.clone());
            }
            r
        })
        .filter(|r| r["uid"] != owner["uid"])
        .collect();
    out.push(owner);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn csv_ref(name: &str, uid: &str) -> Value {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": name, "uid": uid, "controller": false, "blockOwnerDeletion": false})
    }

    fn other_ref(name: &str, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid})
    }

    fn uids() -> HashMap<String, String> {
        HashMap::from([
            ("op.v1".to_string(), "uid-1".to_string()),
            ("dep.v2".to_string(), "uid-2".to_string()),
        ])
    }

    #[rstest]
    #[case::a_manifest_without_references_gets_the_owner(vec![], vec![csv_ref("op.v1", "uid-1")])]
    #[case::olms_empty_uid_is_filled_and_not_duplicated(vec![csv_ref("op.v1", "")], vec![csv_ref("op.v1", "uid-1")])]
    #[case::another_csvs_empty_uid_is_filled_too(vec![csv_ref("dep.v2", "")], vec![csv_ref("dep.v2", "uid-2"), csv_ref("op.v1", "uid-1")])]
    #[case::a_stale_uid_of_the_owner_is_replaced(vec![csv_ref("op.v1", "old")], vec![csv_ref("op.v1", "uid-1")])]
    #[case::a_reference_to_something_else_is_kept(vec![other_ref("cm", "")], vec![other_ref("cm", ""), csv_ref("op.v1", "uid-1")])]
    #[case::an_unknown_csv_keeps_its_reference(vec![csv_ref("gone.v0", "x")], vec![csv_ref("gone.v0", "x"), csv_ref("op.v1", "uid-1")])]
    fn csv_owner_uids_are_filled_by_name_as_olm_executes_plans(
        #[case] refs: Vec<Value>,
        #[case] want: Vec<Value>,
    ) {
        assert_eq!(
            owner_references(&refs, csv_ref("op.v1", "uid-1"), &uids()),
            want
        );
    }

    #[rstest]
    #[case::none(vec![], vec![])]
    #[case::csv_references_by_name_once(vec![csv_ref("b", ""), csv_ref("a", ""), csv_ref("b", "x")], vec!["a", "b"])]
    #[case::other_kinds_are_not_looked_up(vec![other_ref("cm", ""), json!({"apiVersion": "example.com/v1", "kind": "ClusterServiceVersion", "name": "lookalike"})], vec![])]
    fn the_csvs_to_look_up_are_the_referenced_ones(
        #[case] refs: Vec<Value>,
        #[case] want: Vec<&str>,
    ) {
        assert_eq!(csv_owner_names(&refs), want);
    }
}
