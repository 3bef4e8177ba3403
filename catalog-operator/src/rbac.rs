//! RBAC objects for a CSV's install strategy (OLM `resolver/rbac.go`): per `permissions` entry a
//! ServiceAccount (not `default`), a Role and a RoleBinding; per `clusterPermissions` entry a ClusterRole and
//! a ClusterRoleBinding. Names and the rules hash come from `messages::rbac_names`, which olm-operator uses
//! too, so the plan's objects are the ones olm-operator checks the CSV's requirements against. Pure.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::rbac_names;
use serde_json::Value;
use std::collections::BTreeMap;

fn owner_labels(csv: &str, namespace: &str, hash: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        ("olm.owner".to_string(), csv.to_string()),
        ("olm.owner.namespace".to_string(), namespace.to_string()),
        (
            "olm.owner.kind".to_string(),
            "ClusterServiceVersion".to_string(),
        ),
    ]);
    if let Some(hash) = hash {
        labels.insert("olm.permissions.hash".to_string(), hash.to_string());
    }
    labels
}

/// `(service account, rules)` of each entry of `permissions` or `clusterPermissions`; rules that do not parse
/// as RBAC rules give an empty set (the CSV itself is refused by olm-operator then).
fn entries(csv: &Value, field: &str) -> Vec<(String, Vec<PolicyRule>)> {
    csv["spec"]["install"]["spec"][field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let sa = p["serviceAccountName"].as_str()?.to_string();
            let rules = serde_json::from_value(p["rules"].clone()).unwrap_or_default();
            Some((sa, rules))
        })
        .collect()
}

fn meta(name: &str, namespace: Option<&str>, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

fn subject(sa: &str, namespace: &str) -> Option<Vec<Subject>> {
    Some(vec![Subject {
        kind: "ServiceAccount".into(),
        name: sa.into(),
        namespace: Some(namespace.into()),
        api_group: None,
    }])
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    }
}

fn value<T: serde::Serialize>(object: &T) -> Value {
    // k8s-openapi objects serialize with their apiVersion and kind; this cannot fail.
    serde_json::to_value(object).unwrap_or_default()
}

/// The RBAC objects of `csv` (a CSV manifest) in `namespace`, in OLM's order.
pub fn objects(csv: &Value, namespace: &str) -> Vec<Value> {
    let name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let permissions = entries(csv, "permissions");
    let cluster_permissions = entries(csv, "clusterPermissions");
    let mut out = Vec::new();
    let mut accounts: Vec<&str> = Vec::new();
    for (sa, _) in permissions.iter().chain(&cluster_permissions) {
        if sa != "default" && !sa.is_empty() && !accounts.contains(&sa.as_str()) {
            accounts.push(sa);
            out.push(value(&ServiceAccount {
                metadata: meta(sa, Some(namespace), owner_labels(name, namespace, None)),
                ..ServiceAccount::default()
            }));
        }
    }
    for (sa, rules) in &permissions {
        let hash = rbac_names::rules_hash(rules);
        let role = rbac_names::role_name(name, sa, rules);
        let labels = owner_labels(name, namespace, Some(&hash));
        out.push(value(&Role {
            metadata: meta(&role, Some(namespace), labels.clone()),
            rules: Some(rules.clone()),
        }));
        out.push(value(&RoleBinding {
            metadata: meta(&role, Some(namespace), labels),
            role_ref: role_ref("Role", &role),
            subjects: subject(sa, namespace),
        }));
    }
    for (sa, rules) in &cluster_permissions {
        let hash = rbac_names::rules_hash(rules);
        let role = rbac_names::cluster_role_name(name, namespace, sa, rules);
        let labels = owner_labels(name, namespace, Some(&hash));
        out.push(value(&ClusterRole {
            metadata: meta(&role, None, labels.clone()),
            rules: Some(rules.clone()),
            aggregation_rule: None,
        }));
        out.push(value(&ClusterRoleBinding {
            metadata: meta(&role, None, labels),
            role_ref: role_ref("ClusterRole", &role),
            subjects: subject(sa, namespace),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn permissions_give_an_account_a_role_and_a_binding_and_cluster_permissions_cluster_wide_ones()
    {
        let csv = json!({"metadata": {"name": "a.v1"}, "spec": {"install": {"spec": {
            "permissions": [{"serviceAccountName": "op", "rules": [{"verbs": ["get"]}]}, {"serviceAccountName": "default", "rules": []}],
            "clusterPermissions": [{"serviceAccountName": "op", "rules": [{"verbs": ["list"]}]}]}}}});
        let objs = objects(&csv, "ns");
        let kinds: Vec<&str> = objs.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "Role",
                "RoleBinding",
                "ClusterRole",
                "ClusterRoleBinding"
            ]
        );
        assert_eq!(objs[0]["apiVersion"], "v1");
        assert_eq!(objs[1]["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(objs[2]["subjects"][0]["name"], "op");
        assert_eq!(objs[2]["roleRef"]["name"], objs[1]["metadata"]["name"]);
        assert!(objs[5]["metadata"].get("namespace").is_none());
        assert_eq!(objs[6]["subjects"][0]["namespace"], "ns");
        assert_eq!(objs[6]["roleRef"]["name"], objs[5]["metadata"]["name"]);
    }

    #[test]
    fn the_names_and_hash_are_the_ones_olm_operator_checks() {
        let csv = json!({"metadata": {"name": "a.v1"}, "spec": {"install": {"spec": {
            "permissions": [{"serviceAccountName": "op", "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}]}}}});
        let rules: Vec<PolicyRule> = serde_json::from_value(
            json!([{"verbs": ["get"], "resources": ["pods"], "apiGroups": [""]}]),
        )
        .expect("rules");
        let objs = objects(&csv, "ns");
        assert_eq!(
            objs[1]["metadata"]["name"],
            rbac_names::role_name("a.v1", "op", &rules)
        );
        assert_eq!(
            objs[1]["metadata"]["labels"]["olm.permissions.hash"],
            rbac_names::rules_hash(&rules)
        );
    }
}
