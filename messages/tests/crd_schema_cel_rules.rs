//! The CEL rules of the generated CRDs are OLM's, exactly: same node, same rule text, same message, same order,
//! and no others (operator-framework/api `crds/`, v0.45.0: `x-kubernetes-validations` appears on the CSV's
//! `spec.release` only). The expected text is copied from OLM's YAML, not from `messages::crd::cel`, so a typo
//! in either fails here.

use serde_json::Value;

/// `(rule, message)` pairs of one node.
type Rules = &'static [(&'static str, &'static str)];

/// `(kind, version, path, rules)` as in OLM's CRDs.
const OLM: &[(&str, &str, &str, Rules)] = &[(
    "ClusterServiceVersion",
    "v1alpha1",
    ".spec.release",
    &[
        (
            r"self.matches('^[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*$')",
            "release version must be composed of dot-separated identifiers containing only alphanumerics and hyphens",
        ),
        (
            "!self.split('.').exists(x, x.matches('^0[0-9]+$'))",
            "numeric identifiers in release version must not have leading zeros",
        ),
    ],
)];

type Found = Vec<(String, String, String, Vec<(String, String)>)>;

fn collect(kind: &str, version: &str, path: &str, node: &Value, out: &mut Found) {
    if let Some(rules) = node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        let text = |r: &Value, k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        out.push((
            kind.to_owned(),
            version.to_owned(),
            path.to_owned(),
            rules
                .iter()
                .map(|r| (text(r, "rule"), text(r, "message")))
                .collect(),
        ));
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            collect(kind, version, &format!("{path}.{name}"), child, out);
        }
    }
    if let Some(items) = node.get("items") {
        collect(kind, version, &format!("{path}[]"), items, out);
    }
    if let Some(values @ Value::Object(_)) = node.get("additionalProperties") {
        collect(kind, version, &format!("{path}{{}}"), values, out);
    }
}

#[test]
fn the_generated_crds_carry_olms_cel_rules_and_no_others() {
    let mut found = Found::new();
    for crd in messages::crd::all_crds().expect("CRDs") {
        let json = serde_json::to_value(&crd).expect("CRD to JSON");
        for version in json["spec"]["versions"].as_array().expect("versions") {
            let name = version["name"].as_str().unwrap_or_default();
            collect(
                &crd.spec.names.kind,
                name,
                "",
                &version["schema"]["openAPIV3Schema"],
                &mut found,
            );
        }
    }
    let expected: Found = OLM
        .iter()
        .map(|(k, v, p, rules)| {
            (
                (*k).to_owned(),
                (*v).to_owned(),
                (*p).to_owned(),
                rules
                    .iter()
                    .map(|(r, m)| ((*r).to_owned(), (*m).to_owned()))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn the_release_rules_sit_beside_olms_length_limit() {
    let crds = messages::crd::all_crds().expect("CRDs");
    let csv = crds
        .iter()
        .find(|c| c.spec.names.kind == "ClusterServiceVersion")
        .expect("CSV CRD");
    let json = serde_json::to_value(csv).expect("CRD to JSON");
    let release = &json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["release"];
    assert_eq!(release["type"], "string");
    assert_eq!(
        release["maxLength"], 20,
        "CEL cost estimation needs the bound"
    );
}
