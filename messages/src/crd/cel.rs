//! The CEL rules (`x-kubernetes-validations`) of OLM's published CRDs (operator-framework/api `crds/`), placed
//! where OLM places them, with OLM's rule text and message: an object OLM's CRD rejects by a rule is rejected
//! by ours with the same message. `docs/crds.md` lists them.

use serde_json::{Value, json};

/// One `x-kubernetes-validations` entry of OLM's CRDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CelRule {
    /// The CRD's kind.
    pub kind: &'static str,
    /// The schema node, as in [`super::conform`] (`.spec.release`; `[]`: the items of a list).
    pub path: &'static str,
    pub rule: &'static str,
    pub message: &'static str,
}

/// Every rule, in OLM's order within a node.
pub const RULES: &[CelRule] = &[
    // CSV `spec.release` (`OperatorRelease`, kubebuilder markers on the type).
    CelRule {
        kind: "ClusterServiceVersion",
        path: ".spec.release",
        rule: r"self.matches('^[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*$')",
        message: "release version must be composed of dot-separated identifiers containing only alphanumerics and hyphens",
    },
    CelRule {
        kind: "ClusterServiceVersion",
        path: ".spec.release",
        rule: "!self.split('.').exists(x, x.matches('^0[0-9]+$'))",
        message: "numeric identifiers in release version must not have leading zeros",
    },
];

/// The rules of `kind` grouped by node, each group in [`RULES`]' order.
fn by_path(kind: &str) -> Vec<(&'static str, Vec<Value>)> {
    let mut groups: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for r in RULES.iter().filter(|r| r.kind == kind) {
        let entry = json!({"rule": r.rule, "message": r.message});
        match groups.iter_mut().find(|(p, _)| *p == r.path) {
            Some((_, rules)) => rules.push(entry),
            None => groups.push((r.path, vec![entry])),
        }
    }
    groups
}

/// Sets `x-kubernetes-validations` on every node of `root` (one version's schema) that OLM gives rules.
pub(super) fn add_rules(kind: &str, root: &mut Value) {
    for (path, rules) in by_path(kind) {
        super::schema_path::set(root, path, "x-kubernetes-validations", Value::Array(rules));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_csv_gets_both_release_rules_in_olms_order("ClusterServiceVersion", vec![(".spec.release", 2)])]
    #[case::a_subscription_has_none("Subscription", vec![])]
    fn rules_are_grouped_by_node(#[case] kind: &str, #[case] expected: Vec<(&str, usize)>) {
        let got: Vec<(&str, usize)> = by_path(kind)
            .into_iter()
            .map(|(p, rules)| (p, rules.len()))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn rules_land_on_their_node_and_nowhere_else() {
        let mut schema = json!({"properties": {"spec": {"properties": {
            "release": {"type": "string"}, "version": {"type": "string"}}}}});
        add_rules("ClusterServiceVersion", &mut schema);
        let release = &schema["properties"]["spec"]["properties"]["release"];
        assert_eq!(
            release["x-kubernetes-validations"][1]["message"],
            "numeric identifiers in release version must not have leading zeros"
        );
        assert_eq!(
            release["x-kubernetes-validations"][0]["rule"],
            r"self.matches('^[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*$')"
        );
        assert!(
            schema["properties"]["spec"]["properties"]["version"]
                .get("x-kubernetes-validations")
                .is_none()
        );
    }
}
