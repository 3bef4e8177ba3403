//! Our generated CRDs against OLM's own published ones, node by node, for everything that decides what the
//! apiserver accepts or stores: types, required lists, enums, patterns, lengths, bounds, formats, defaults,
//! list-map keys, preserve-unknown-fields and CEL rules. Every difference must be one of [`KNOWN`], each with
//! its reason; a new one (a newer OLM release, a change to our types) fails. Needs OLM's CRDs on disk:
//!
//! ```sh
//! OLM_RS_CRDS=$(hack/olm-crds.sh) cargo test -p messages --test crd_olm_parity -- --ignored
//! ```

use serde_json::Value;
use std::collections::BTreeMap;

/// The schema keys compared. Left out: descriptions; `nullable` (ours marks `Option`s nullable, which only lets
/// an explicit `null` through where OLM's prunes it); `x-kubernetes-list-type`/`map-type: atomic` (they steer
/// server-side apply's merging, not validation); `anyOf: [integer, string]` beside `x-kubernetes-int-or-string`
/// (the same constraint spelled twice).
const KEYS: &[&str] = &[
    "type",
    "enum",
    "required",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "default",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "oneOf",
    "allOf",
    "not",
];

/// `(kind, version, path, what)`: the differences we keep, `what` being a compared key, `only ours` or `only
/// OLM`. A path ending in `*` covers every path it starts.
const KNOWN: &[(&str, &str, &str, &str, &str)] = &[
    // Fields of Kubernetes types newer than k8s-openapi's `v1_33` shapes: ours prunes them.
    (
        "*",
        "*",
        "*.valueFrom.fileKeyRef",
        "only OLM",
        "k8s-openapi feature v1_33",
    ),
    (
        "*",
        "*",
        "*.restartPolicyRules",
        "only OLM",
        "k8s-openapi feature v1_33",
    ),
    (
        "*",
        "*",
        "*.projected.sources[].podCertificate",
        "only OLM",
        "k8s-openapi feature v1_33",
    ),
    (
        "*",
        "*",
        ".spec.install.spec.deployments[].spec.template.spec.hostnameOverride",
        "only OLM",
        "k8s-openapi feature v1_33",
    ),
    (
        "*",
        "*",
        ".spec.install.spec.deployments[].spec.template.spec.schedulingGroup",
        "only OLM",
        "k8s-openapi feature v1_33",
    ),
    // `spec: {}` defaults where the spec is optional: the stored object always has a spec.
    (
        "OLMConfig",
        "v1",
        ".spec",
        "default",
        "spec defaulted to {}",
    ),
    ("Operator", "v1", ".spec", "default", "spec defaulted to {}"),
    (
        "OperatorCondition",
        "*",
        ".spec",
        "default",
        "spec defaulted to {}",
    ),
    (
        "OperatorGroup",
        "v1alpha2",
        ".spec",
        "default",
        "spec defaulted to {}",
    ),
    // One Rust status type for both OperatorGroup versions.
    (
        "OperatorGroup",
        "v1alpha2",
        ".status.conditions",
        "only ours",
        "shared status type",
    ),
    // serde's default of an optional string, stored as "" (read the same).
    (
        "CatalogSource",
        "v1alpha1",
        ".spec.grpcPodConfig.extractContent.cacheDir",
        "default",
        "serde default",
    ),
    // Integer widths of our Rust fields (the apiserver checks no integer format).
    (
        "CatalogSource",
        "v1alpha1",
        ".spec.priority",
        "format",
        "i32 field",
    ),
    (
        "InstallPlan",
        "v1alpha1",
        ".spec.generation",
        "format",
        "i64 field",
    ),
    (
        "Subscription",
        "v1alpha1",
        ".status.installPlanGeneration",
        "format",
        "i64 field",
    ),
];

fn covers(pattern: &str, value: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        _ if pattern == "*" => true,
        (Some(tail), _) => value.ends_with(tail),
        (_, Some(head)) => value.starts_with(head),
        _ => pattern == value,
    }
}

fn known(kind: &str, version: &str, path: &str, what: &str) -> bool {
    KNOWN.iter().any(|(k, v, p, w, _)| {
        covers(k, kind) && covers(v, version) && covers(p, path) && *w == what
    })
}

fn compared(node: &Value, key: &str) -> Option<Value> {
    let v = node.get(key)?.clone();
    match (key, v) {
        ("required", Value::Array(mut fields)) => {
            fields.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            Some(Value::Array(fields))
        }
        ("x-kubernetes-list-type", Value::String(t)) if t == "atomic" => None,
        // k8s-openapi keeps bounds as f64 (`65535.0`); OLM's YAML has integers.
        (_, Value::Number(n)) => n.as_f64().map(Value::from),
        (_, v) => Some(v),
    }
}

fn diff(kind: &str, version: &str, path: &str, olm: &Value, ours: &Value, out: &mut Vec<String>) {
    for key in KEYS {
        let (a, b) = (compared(olm, key), compared(ours, key));
        if a != b && !known(kind, version, path, key) {
            out.push(format!(
                "{kind} {version} {path}: {key}: OLM {a:?}, ours {b:?}"
            ));
        }
    }
    let props = |n: &Value| {
        n.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (po, pu) = (props(olm), props(ours));
    for name in po
        .keys()
        .chain(pu.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let child = format!("{path}.{name}");
        match (po.get(name), pu.get(name)) {
            (Some(a), Some(b)) => diff(kind, version, &child, a, b, out),
            (Some(_), None) if !known(kind, version, &child, "only OLM") => {
                out.push(format!("{kind} {version} {child}: only OLM"))
            }
            (None, Some(_)) if !known(kind, version, &child, "only ours") => {
                out.push(format!("{kind} {version} {child}: only ours"))
            }
            _ => {}
        }
    }
    let empty = Value::Null;
    if olm.get("items").is_some() || ours.get("items").is_some() {
        let (a, b) = (
            olm.get("items").unwrap_or(&empty),
            ours.get("items").unwrap_or(&empty),
        );
        diff(kind, version, &format!("{path}[]"), a, b, out);
    }
    let values = |n: &Value| {
        n.get("additionalProperties")
            .filter(|v| v.is_object())
            .cloned()
    };
    if let (Some(a), Some(b)) = (values(olm), values(ours)) {
        diff(kind, version, &format!("{path}{{}}"), &a, &b, out);
    }
}

/// OLM's CRDs by kind, from the folder `OLM_RS_CRDS` names.
fn olm_crds() -> BTreeMap<String, Value> {
    let dir = std::env::var("OLM_RS_CRDS")
        .expect("OLM_RS_CRDS: the folder of OLM's CRDs (hack/olm-crds.sh prints it)");
    let mut crds = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("read OLM_RS_CRDS") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read a CRD");
        let crd: Value = serde_saphyr::from_str(&text).expect("parse a CRD");
        let kind = crd["spec"]["names"]["kind"]
            .as_str()
            .expect("kind")
            .to_owned();
        crds.insert(kind, crd);
    }
    crds
}

#[test]
#[ignore = "needs OLM's CRDs: OLM_RS_CRDS=$(hack/olm-crds.sh)"]
fn our_crds_validate_like_olms_published_crds() {
    let olm = olm_crds();
    let mut problems = Vec::new();
    let ours = messages::crd::all_crds().expect("CRDs");
    assert_eq!(
        olm.keys().collect::<Vec<_>>(),
        {
            let mut kinds: Vec<_> = ours.iter().map(|c| &c.spec.names.kind).collect();
            kinds.sort();
            kinds
        },
        "the same kinds"
    );
    for crd in &ours {
        let kind = crd.spec.names.kind.as_str();
        let ours = serde_json::to_value(crd).expect("CRD to JSON");
        let versions = |crd: &Value| -> BTreeMap<String, Value> {
            crd["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| (v["name"].as_str().unwrap_or_default().to_owned(), v.clone()))
                .collect()
        };
        let (vo, vu) = (versions(&olm[kind]), versions(&ours));
        assert_eq!(
            vo.keys().collect::<Vec<_>>(),
            vu.keys().collect::<Vec<_>>(),
            "{kind} versions"
        );
        for (name, o) in &vo {
            let u = &vu[name];
            for flag in ["served", "storage"] {
                assert_eq!(o[flag], u[flag], "{kind} {name} {flag}");
            }
            let schema = |v: &Value| v["schema"]["openAPIV3Schema"].clone();
            diff(kind, name, "", &schema(o), &schema(u), &mut problems);
        }
    }
    assert!(
        problems.is_empty(),
        "{} differences:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_comparison_reports_a_missing_rule_and_a_default_on_a_required_field() {
    let olm = serde_json::json!({"properties": {"spec": {"required": ["name"], "properties": {
        "name": {"type": "string"},
        "release": {"type": "string", "x-kubernetes-validations": [{"rule": "r", "message": "m"}]}}}}});
    let ours = serde_json::json!({"properties": {"spec": {"required": ["name"], "properties": {
        "name": {"type": "string", "default": ""},
        "release": {"type": "string"}}}}});
    let mut out = Vec::new();
    diff("Subscription", "v1alpha1", "", &olm, &ours, &mut out);
    assert_eq!(out.len(), 2, "{out:#?}");
    assert!(out[0].starts_with("Subscription v1alpha1 .spec.name: default"));
    assert!(out[1].starts_with("Subscription v1alpha1 .spec.release: x-kubernetes-validations"));
}
