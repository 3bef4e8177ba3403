//! The generated CRD schemas are structural (apiextensions v1) and use nothing the apiserver rejects (no
//! `$ref`, types on every node, CEL rules well formed: a `rule` and OLM's `message` on each).

use serde_json::Value;

/// Collects rule violations of the structural-schema rules for the node at `path`.
fn check(node: &Value, path: &str, inside_junction: bool, problems: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        problems.push(format!("{path}: schema node is not an object"));
        return;
    };
    for forbidden in ["$ref", "$schema", "definitions", "$defs"] {
        if map.contains_key(forbidden) {
            problems.push(format!("{path}: has {forbidden}"));
        }
    }
    if let Some(rules) = map.get("x-kubernetes-validations") {
        let well_formed = |r: &Value| {
            let text = |k: &str| {
                r.get(k)
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.is_empty())
            };
            text("rule") && text("message")
        };
        match rules.as_array() {
            Some(rules) if !rules.is_empty() && rules.iter().all(well_formed) => {}
            _ => problems.push(format!(
                "{path}: x-kubernetes-validations without rule and message"
            )),
        }
    }
    let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if inside_junction {
        // Inside anyOf/oneOf/allOf/not, value validations only: no types, defaults or descriptions.
        for forbidden in [
            "type",
            "nullable",
            "default",
            "description",
            "additionalProperties",
        ] {
            if map.contains_key(forbidden) {
                problems.push(format!("{path}: {forbidden} inside a logical junction"));
            }
        }
    } else if !map.contains_key("type") && !preserve && !int_or_string {
        problems.push(format!(
            "{path}: no type (and not preserve-unknown-fields or int-or-string)"
        ));
    }
    if map.contains_key("properties") && map.contains_key("additionalProperties") {
        problems.push(format!("{path}: both properties and additionalProperties"));
    }
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        problems.push(format!("{path}: additionalProperties: false"));
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, child) in props {
            check(child, &format!("{path}.{name}"), inside_junction, problems);
        }
    }
    match map.get("items") {
        Some(items @ Value::Object(_)) => {
            check(items, &format!("{path}[]"), inside_junction, problems)
        }
        Some(_) => problems.push(format!("{path}: items is not a single schema")),
        None if map.get("type") == Some(&Value::String("array".into())) && !inside_junction => {
            problems.push(format!("{path}: array without items"));
        }
        None => {}
    }
    if let Some(additional @ Value::Object(_)) = map.get("additionalProperties") {
        check(
            additional,
            &format!("{path}{{*}}"),
            inside_junction,
            problems,
        );
    }
    for junction in ["anyOf", "oneOf", "allOf"] {
        for (i, child) in map
            .get(junction)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            check(child, &format!("{path}.{junction}[{i}]"), true, problems);
        }
    }
    if let Some(not) = map.get("not") {
        check(not, &format!("{path}.not"), true, problems);
    }
}

#[test]
fn every_generated_crd_schema_is_structural() {
    let crds = messages::crd::all_crds().expect("CRDs");
    let mut problems = Vec::new();
    for crd in &crds {
        let json = serde_json::to_value(crd).expect("CRD to JSON");
        let compact = serde_json::to_string(&json).expect("CRD JSON").len();
        println!("{}: {} bytes of JSON", crd.spec.names.plural, compact);
        // Client-side `kubectl apply` stores the object in an annotation limited to 256 KiB.
        assert!(
            compact < 256 * 1024,
            "{} is {compact} bytes; keep CRDs under 256 KiB",
            crd.spec.names.plural
        );
        for (i, version) in json["spec"]["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .enumerate()
        {
            let schema = &version["schema"]["openAPIV3Schema"];
            let root = format!("{}[{i}]", crd.spec.names.plural);
            check(schema, &root, false, &mut problems);
            let metadata = &schema["properties"]["metadata"];
            if metadata.get("properties").is_some() {
                problems.push(format!(
                    "{root}.metadata: must not constrain metadata fields"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "non-structural schema nodes:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_rejects_a_cel_rule_without_message() {
    let mut problems = Vec::new();
    check(
        &serde_json::json!({"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]}),
        "root",
        false,
        &mut problems,
    );
    assert_eq!(
        problems,
        ["root: x-kubernetes-validations without rule and message"]
    );
}

#[test]
fn the_checker_rejects_a_node_without_type() {
    let mut problems = Vec::new();
    check(
        &serde_json::json!({"type": "object", "properties": {"x": {}}}),
        "root",
        false,
        &mut problems,
    );
    assert_eq!(
        problems,
        ["root.x: no type (and not preserve-unknown-fields or int-or-string)"]
    );
}
