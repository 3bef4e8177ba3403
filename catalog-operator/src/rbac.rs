//! RBAC objects for a CSV's install strategy (OLM `resolver/rbac.go`): per `permissions` entry a
//! ServiceAccount (not `default`), a Role and a RoleBinding; per `clusterPermissions` entry a ClusterRole and
//! a ClusterRoleBinding. Names carry a hash of the rules and stay within 63 characters. Pure.

use serde_json::{Value, json};

const MAX_NAME: usize = 63;

/// FNV-1a, 64 bits: a stable hash (std's hasher may change between Rust releases).
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A short base-36 hash of the rules.
pub fn rules_hash(rules: &Value) -> String {
    let mut n = fnv(&rules.to_string());
    let mut out = String::new();
    while n > 0 && out.len() < 10 {
        let d = u8::try_from(n % 36).unwrap_or(0);
        out.push(char::from(if d < 10 { b'0' + d } else { b'a' + d - 10 }));
        n /= 36;
    }
    out
}

/// `<base>-<hash>` cut to 63 characters (the base is truncated, never the hash).
pub fn hashed_name(base: &str, hash: &str) -> String {
    let keep = MAX_NAME.saturating_sub(hash.len() + 1);
    let base: String = base.chars().take(keep).collect();
    format!("{}-{hash}", base.trim_end_matches(['-', '.']))
}

fn owner_labels(csv: &str, namespace: &str, hash: &str) -> Value {
    json!({"olm.owner": csv, "olm.owner.namespace": namespace, "olm.owner.kind": "ClusterServiceVersion", "olm.permissions.hash": hash})
}

fn entries<'a>(csv: &'a Value, field: &str) -> impl Iterator<Item = (&'a str, &'a Value)> {
    csv["spec"]["install"]["spec"][field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["serviceAccountName"].as_str()?, &p["rules"])))
}

/// The RBAC objects of `csv` (a CSV manifest) in `namespace`, in OLM's order.
pub fn objects(csv: &Value, namespace: &str) -> Vec<Value> {
    let name = csv["metadata"]["name"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    let mut accounts: Vec<&str> = Vec::new();
    for (sa, _) in entries(csv, "permissions").chain(entries(csv, "clusterPermissions")) {
        if sa != "default" && !sa.is_empty() && !accounts.contains(&sa) {
            accounts.push(sa);
            out.push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": namespace, "labels": {"olm.owner": name, "olm.owner.namespace": namespace, "olm.owner.kind": "ClusterServiceVersion"}}}));
        }
    }
    for (sa, rules) in entries(csv, "permissions") {
        let hash = rules_hash(rules);
        let role = hashed_name(&format!("{name}-{sa}"), &hash);
        out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": role, "namespace": namespace, "labels": owner_labels(name, namespace, &hash)}, "rules": rules}));
        out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": role, "namespace": namespace, "labels": owner_labels(name, namespace, &hash)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]}));
    }
    for (sa, rules) in entries(csv, "clusterPermissions") {
        let hash = rules_hash(rules);
        let role = hashed_name(name, &hash);
        out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": role, "labels": owner_labels(name, namespace, &hash)}, "rules": rules}));
        out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": hashed_name(&format!("{name}-{sa}"), &hash), "labels": owner_labels(name, namespace, &hash)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]}));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_short_name_keeps_its_base("a.v1-sa", "abc", "a.v1-sa-abc")]
    #[case::a_long_name_is_cut_to_63_characters(&"x".repeat(80), "0123456789", &format!("{}-0123456789", "x".repeat(52)))]
    fn names_carry_the_hash_and_fit_in_63_characters(
        #[case] base: &str,
        #[case] hash: &str,
        #[case] want: &str,
    ) {
        let got = hashed_name(base, hash);
        assert_eq!(got, want);
        assert!(got.len() <= 63);
    }

    #[test]
    fn the_same_rules_hash_the_same_and_different_rules_differ() {
        let a = json!([{"verbs": ["get"]}]);
        let b = json!([{"verbs": ["list"]}]);
        assert_eq!(rules_hash(&a), rules_hash(&a.clone()));
        assert_ne!(rules_hash(&a), rules_hash(&b));
    }

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
        assert_eq!(objs[2]["subjects"][0]["name"], "op");
        assert_eq!(objs[2]["roleRef"]["name"], objs[1]["metadata"]["name"]);
        assert!(objs[5]["metadata"].get("namespace").is_none());
        assert_eq!(objs[6]["subjects"][0]["namespace"], "ns");
    }
}
