//! The names and rules hash of the RBAC objects made for a CSV's install strategy, shared by both operators:
//! catalog-operator writes them as InstallPlan steps (OLM's `resolver/rbac.go`), and olm-operator both checks a
//! CSV's permission requirements against them and, for a CSV created without a plan, writes them itself. Both
//! must name the same objects, or a plan's Role never satisfies olm-operator's check and olm-operator writes a
//! second Role beside it (the chaos run's defect 3). Shape as OLM's `generateName`: `<csv>-<sa>-<hash>`, at most
//! 63 characters, the base cut, never the hash. Pure.

use k8s_openapi::api::rbac::v1::PolicyRule;

const MAX_NAME: usize = 63;

/// FNV-1a, 64 bits: a stable hash (std's hasher may change between Rust releases).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Up to 10 base-36 digits of a hash.
fn base36(mut n: u64) -> String {
    let mut out = String::new();
    while n > 0 && out.len() < 10 {
        let d = u8::try_from(n % 36).unwrap_or(0);
        out.push(char::from(if d < 10 { b'0' + d } else { b'a' + d - 10 }));
        n /= 36;
    }
    if out.is_empty() {
        out.push('0');
    }
    out
}

fn canonical(rules: &[PolicyRule]) -> Vec<u8> {
    // Typed rules serialize their fields in one order whatever the manifest's key order was; serializing
    // k8s-openapi types to a Vec cannot fail (no non-string map keys).
    serde_json::to_vec(rules).unwrap_or_default()
}

/// The hash of a rule set: the `olm.permissions.hash` label of the objects, and part of their names.
pub fn rules_hash(rules: &[PolicyRule]) -> String {
    base36(fnv(&canonical(rules)))
}

/// `<base>-<hash>` cut to 63 characters (the base is truncated, never the hash).
pub fn hashed_name(base: &str, hash: &str) -> String {
    let keep = MAX_NAME.saturating_sub(hash.len() + 1);
    let base: String = base.chars().take(keep).collect();
    format!("{}-{hash}", base.trim_end_matches(['-', '.']))
}

/// The Role and RoleBinding of a `permissions` entry.
pub fn role_name(csv: &str, service_account: &str, rules: &[PolicyRule]) -> String {
    hashed_name(&format!("{csv}-{service_account}"), &rules_hash(rules))
}

/// The ClusterRole and ClusterRoleBinding of a `clusterPermissions` entry: cluster-wide, so the hash also covers
/// the namespace (the same CSV installed in two namespaces gets two roles).
pub fn cluster_role_name(
    csv: &str,
    namespace: &str,
    service_account: &str,
    rules: &[PolicyRule],
) -> String {
    let mut bytes = namespace.as_bytes().to_vec();
    bytes.push(b'/');
    bytes.extend(canonical(rules));
    hashed_name(&format!("{csv}-{service_account}"), &base36(fnv(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn rule(verbs: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(resources.iter().map(|s| s.to_string()).collect()),
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            ..PolicyRule::default()
        }
    }

    #[rstest]
    #[case::short("op.v1-sa", "abc", "op.v1-sa-abc")]
    #[case::trailing_dash_trimmed_after_cut(&format!("{}-xyz", "a".repeat(57)), "abcd", &format!("{}-abcd", "a".repeat(57)))]
    #[case::long_base_cut_hash_kept(&"b".repeat(80), "hash", &format!("{}-hash", "b".repeat(58)))]
    fn names_stay_within_63_characters(#[case] base: &str, #[case] hash: &str, #[case] want: &str) {
        let got = hashed_name(base, hash);
        assert_eq!(got, want);
        assert!(got.len() <= MAX_NAME);
    }

    #[test]
    fn a_manifest_parsed_in_another_key_order_names_the_same_role() {
        // catalog-operator parses the rules from a manifest; olm-operator has them typed from the CSV.
        let manifest = r#"[{"verbs":["get"],"resources":["pods"],"apiGroups":[""]}]"#;
        let parsed: Vec<PolicyRule> = serde_json::from_str(manifest).expect("rules parse");
        let typed = vec![rule(&["get"], &["pods"])];
        assert_eq!(
            role_name("op.v1", "sa", &parsed),
            role_name("op.v1", "sa", &typed)
        );
        assert_eq!(rules_hash(&parsed), rules_hash(&typed));
    }

    #[test]
    fn other_rules_or_another_namespace_name_other_objects() {
        let a = vec![rule(&["get"], &["pods"])];
        let b = vec![rule(&["list"], &["pods"])];
        assert_ne!(role_name("op.v1", "sa", &a), role_name("op.v1", "sa", &b));
        assert_ne!(
            cluster_role_name("op.v1", "ns1", "sa", &a),
            cluster_role_name("op.v1", "ns2", "sa", &a)
        );
        assert!(role_name(&"c".repeat(300), "sa", &a).len() <= MAX_NAME);
    }
}
