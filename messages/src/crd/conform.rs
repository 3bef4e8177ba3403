//! The validation facts of OLM's published CRDs (operator-framework/api `crds/`) that our derived schemas do
//! not produce by themselves: required fields, enums, formats and lengths of OLM's own types, plus two places
//! where the derived schema is *stricter* than OLM's and would reject objects OLM accepts. A CSV created under
//! our CRDs must stay updatable under OLM's and the reverse (issue 17). `tests/crd_upstream_facts.rs` checks
//! the rendered CRDs against OLM's facts and fails on drift.
//!
//! Paths are written as in a schema walk: `.spec.install.spec.deployments[]` (`[]`: the items of a list).
//! The Rust types stay lenient (`#[serde(default)]`): they decode whatever an older or foreign writer stored.

use super::schema_path::{QUANTITY_PATTERN, node, set, unset};
use serde_json::{Map, Value, json};

/// `(kind, path, required fields)`: OLM's required lists, set as they are upstream.
const REQUIRED: &[(&str, &str, &[&str])] = &[
    ("CatalogSource", "", &["metadata", "spec"]),
    ("CatalogSource", ".spec.icon", &["base64data", "mediatype"]),
    (
        "CatalogSource",
        ".spec.grpcPodConfig.extractContent",
        &["catalogDir"],
    ),
    (
        "CatalogSource",
        ".status.configMapReference",
        &["name", "namespace"],
    ),
    ("ClusterServiceVersion", "", &["metadata", "spec"]),
    (
        "ClusterServiceVersion",
        ".spec",
        &["displayName", "install"],
    ),
    ("ClusterServiceVersion", ".spec.cleanup", &["enabled"]),
    (
        "ClusterServiceVersion",
        ".spec.icon[]",
        &["base64data", "mediatype"],
    ),
    ("ClusterServiceVersion", ".spec.install", &["strategy"]),
    (
        "ClusterServiceVersion",
        ".spec.install.spec",
        &["deployments"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[]",
        &["name", "spec"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.permissions[]",
        &["rules", "serviceAccountName"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.clusterPermissions[]",
        &["rules", "serviceAccountName"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.installModes[]",
        &["supported", "type"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.nativeAPIs[]",
        &["group", "kind", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.relatedImages[]",
        &["image", "name"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.webhookdefinitions[]",
        &[
            "admissionReviewVersions",
            "generateName",
            "sideEffects",
            "type",
        ],
    ),
    (
        "ClusterServiceVersion",
        ".status.cleanup.pendingDeletion[]",
        &["group", "instances", "kind"],
    ),
    (
        "ClusterServiceVersion",
        ".status.requirementStatus[]",
        &["group", "kind", "message", "name", "status", "version"],
    ),
    ("InstallPlan", "", &["metadata", "spec"]),
    (
        "InstallPlan",
        ".spec",
        &["approval", "approved", "clusterServiceVersionNames"],
    ),
    ("InstallPlan", ".status", &["catalogSources", "phase"]),
    (
        "InstallPlan",
        ".status.bundleLookups[]",
        &["catalogSourceRef", "identifier", "path", "replaces"],
    ),
    (
        "InstallPlan",
        ".status.bundleLookups[].conditions[]",
        &["status", "type"],
    ),
    ("OLMConfig", "", &["metadata"]),
    ("Operator", "", &[]),
    ("Operator", ".status.components", &["labelSelector"]),
    ("OperatorCondition", "", &["metadata"]),
    (
        "OperatorCondition",
        ".spec.overrides[]",
        &["message", "reason", "status", "type"],
    ),
    ("OperatorGroup", "", &["metadata"]),
    ("Subscription", "", &["metadata", "spec"]),
    (
        "Subscription",
        ".spec",
        &["name", "source", "sourceNamespace"],
    ),
    ("Subscription", ".status", &["lastUpdated"]),
    (
        "Subscription",
        ".status.catalogHealth[]",
        &["catalogSourceRef", "healthy", "lastUpdated"],
    ),
    (
        "Subscription",
        ".status.installplan",
        &["apiVersion", "kind", "name", "uuid"],
    ),
];

/// CSV API descriptions (owned and required CRDs and APIServices): what each entry and its parts require.
const DESCRIPTION_LISTS: &[&str] = &[
    ".spec.customresourcedefinitions.owned[]",
    ".spec.customresourcedefinitions.required[]",
    ".spec.apiservicedefinitions.owned[]",
    ".spec.apiservicedefinitions.required[]",
];

/// `metav1.Condition` lists, whose kubebuilder markers OLM's schemas carry.
const CONDITION_LISTS: &[(&str, &str)] = &[
    ("CatalogSource", ".status.conditions[]"),
    ("OLMConfig", ".status.conditions[]"),
    ("OperatorGroup", ".status.conditions[]"),
    ("OperatorCondition", ".spec.conditions[]"),
    ("OperatorCondition", ".status.conditions[]"),
    ("OperatorCondition", ".spec.overrides[]"),
];

/// `(kind, version, path, key)`: markers our shared Rust types put in a version whose OLM schema lacks them.
const NOT_IN_VERSION: &[(&str, &str, &str, &str)] = &[
    (
        "OperatorGroup",
        "v1alpha2",
        ".spec.targetNamespaces",
        "x-kubernetes-list-type",
    ),
    (
        "OperatorGroup",
        "v1alpha2",
        ".status.namespaces",
        "x-kubernetes-list-type",
    ),
];

/// Brings the schema of every version of `crd` (as JSON) in line with OLM's published CRD of `kind`.
pub fn conform(kind: &str, crd: &mut Value) {
    let Some(versions) = crd
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for version in versions {
        let name = version
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(root) = version.pointer_mut("/schema/openAPIV3Schema") else {
            continue;
        };
        conform_schema(kind, root);
        for (k, v, path, key) in NOT_IN_VERSION {
            if *k == kind && *v == name {
                unset(root, path, key);
            }
        }
        // OLM never defaults a field it requires: a default would let an object that lacks the field pass.
        drop_defaults_of_required(root);
        super::kube_markers::mark(root);
        super::cel::add_rules(kind, root);
    }
}

/// Removes the `default` of every property its object lists as `required`, everywhere below `node`.
fn drop_defaults_of_required(node: &mut Value) {
    match node {
        Value::Object(map) => {
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect();
            if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
                for field in &required {
                    if let Some(prop) = props.get_mut(field).and_then(Value::as_object_mut) {
                        prop.remove("default");
                    }
                }
            }
            map.values_mut().for_each(drop_defaults_of_required);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_defaults_of_required),
        _ => {}
    }
}

fn conform_schema(kind: &str, root: &mut Value) {
    // OLM's schemas declare the object's own fields at the root (metadata unconstrained).
    if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        props
            .entry("apiVersion")
            .or_insert_with(|| json!({"type": "string"}));
        props
            .entry("kind")
            .or_insert_with(|| json!({"type": "string"}));
        props
            .entry("metadata")
            .or_insert_with(|| json!({"type": "object"}));
    }
    for (k, path, fields) in REQUIRED {
        match (*k == kind, fields.is_empty()) {
            (false, _) => {}
            (true, true) => unset(root, path, "required"),
            (true, false) => set(root, path, "required", json!(fields)),
        }
    }
    if kind == "ClusterServiceVersion" {
        for list in DESCRIPTION_LISTS {
            let is_api_service = list.contains("apiservice");
            let fields: &[&str] = if is_api_service {
                &["group", "kind", "name", "version"]
            } else {
                &["kind", "name", "version"]
            };
            set(root, list, "required", json!(fields));
            set(
                root,
                &format!("{list}.resources[]"),
                "required",
                json!(["kind", "name", "version"]),
            );
            for descriptors in ["specDescriptors", "statusDescriptors", "actionDescriptors"] {
                let d = format!("{list}.{descriptors}[]");
                set(root, &d, "required", json!(["path"]));
                // Go's json.RawMessage: a base64 string in OLM's schema.
                if let Some(value) = node(root, &format!("{d}.value")) {
                    *value = json!({"type": "string", "format": "byte"});
                }
            }
        }
        set(root, ".spec.release", "maxLength", json!(20));
    }
    if kind == "CatalogSource" {
        set(
            root,
            ".spec.grpcPodConfig.memoryTarget",
            "pattern",
            json!(QUANTITY_PATTERN),
        );
    }
    if kind == "InstallPlan" {
        // OLM's InstallPlanCondition requires nothing.
        unset(root, ".status.conditions[]", "required");
    }
    for (k, path) in CONDITION_LISTS {
        if *k == kind {
            condition_markers(root, path);
        }
    }
    loosen_local_object_references("", root);
}

/// The kubebuilder markers of `metav1.Condition`.
fn condition_markers(root: &mut Value, list: &str) {
    set(
        root,
        &format!("{list}.status"),
        "enum",
        json!(["True", "False", "Unknown"]),
    );
    set(root, &format!("{list}.message"), "maxLength", json!(32768));
    set(root, &format!("{list}.reason"), "maxLength", json!(1024));
    set(root, &format!("{list}.reason"), "minLength", json!(1));
    set(
        root,
        &format!("{list}.reason"),
        "pattern",
        json!("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
    );
    set(root, &format!("{list}.type"), "maxLength", json!(316));
    set(
        root,
        &format!("{list}.type"),
        "pattern",
        json!(
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        ),
    );
    set(
        root,
        &format!("{list}.observedGeneration"),
        "minimum",
        json!(0),
    );
}

/// Our Kubernetes types mark `name` required in references such as `configMapKeyRef`, `secretRef`,
/// `imagePullSecrets[]` and `configMap` volumes; Kubernetes (and so OLM's schema) lets it default to "".
/// Such a node is recognised by its properties: `name` beside `optional`, or `name` alone under a field other
/// than `os` and `schedulingGates` (whose `name` Kubernetes does require).
fn loosen_local_object_references(key: &str, node: &mut Value) {
    match node {
        Value::Object(map) => {
            // Kubernetes' `+default=""` on a reference's name, as in OLM's schema.
            if is_local_reference(key, map)
                && drop_required(map, "name")
                && let Some(name) = map
                    .get_mut("properties")
                    .and_then(|p| p.get_mut("name"))
                    .and_then(Value::as_object_mut)
            {
                name.insert("default".to_owned(), json!(""));
            }
            for (k, v) in map.iter_mut() {
                // A list's items are named after the list.
                let child = if k == "items" { key } else { k.as_str() };
                loosen_local_object_references(child, v);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| loosen_local_object_references(key, v)),
        _ => {}
    }
}

fn is_local_reference(key: &str, map: &Map<String, Value>) -> bool {
    let Some(props) = map.get("properties").and_then(Value::as_object) else {
        return false;
    };
    let bare = props.len() == 1 && !matches!(key, "os" | "schedulingGates");
    props.contains_key("name") && (bare || props.contains_key("optional"))
}

/// Drops `field` from the required list of `map`; true when it was there.
fn drop_required(map: &mut Map<String, Value>, field: &str) -> bool {
    let (dropped, emptied) = match map.get_mut("required").and_then(Value::as_array_mut) {
        Some(required) => {
            let before = required.len();
            required.retain(|f| f != field);
            (required.len() < before, required.is_empty())
        }
        None => (false, false),
    };
    if emptied {
        map.remove("required");
    }
    dropped
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "test inputs are literals; a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_key_selector("configMapKeyRef", json!({"properties": {"key": {}, "name": {}, "optional": {}}, "required": ["key", "name"]}), Some(json!(["key"])))]
    #[case::a_bare_reference("secretRef", json!({"properties": {"name": {}}, "required": ["name"]}), None)]
    #[case::a_pod_os_keeps_its_name("os", json!({"properties": {"name": {}}, "required": ["name"]}), Some(json!(["name"])))]
    #[case::a_container_keeps_its_name("containers", json!({"properties": {"name": {}, "image": {}}, "required": ["name"]}), Some(json!(["name"])))]
    fn only_local_references_lose_their_required_name(
        #[case] key: &str,
        #[case] mut schema: Value,
        #[case] required: Option<Value>,
    ) {
        loosen_local_object_references(key, &mut schema);
        assert_eq!(schema.get("required").cloned(), required);
    }

    #[rstest]
    #[case::a_loosened_reference_name_defaults_to_empty("secretRef", json!({"properties": {"name": {}}, "required": ["name"]}), Some(json!("")))]
    #[case::an_optional_name_gets_no_default("clusterTrustBundle", json!({"properties": {"name": {}, "optional": {}}}), None)]
    fn a_name_that_loses_required_gets_kubernetes_empty_default(
        #[case] key: &str,
        #[case] mut schema: Value,
        #[case] default: Option<Value>,
    ) {
        loosen_local_object_references(key, &mut schema);
        assert_eq!(schema.pointer("/properties/name/default").cloned(), default);
    }

    #[test]
    fn a_required_field_loses_its_default_and_an_optional_one_keeps_it() {
        let mut schema = json!({"properties": {"spec": {
            "required": ["name"],
            "properties": {"name": {"type": "string", "default": ""}, "channel": {"type": "string", "default": ""},
                           "install": {"properties": {"strategy": {"default": ""}}, "required": ["strategy"]}}}}});
        drop_defaults_of_required(&mut schema);
        let spec = &schema["properties"]["spec"]["properties"];
        assert!(spec["name"].get("default").is_none());
        assert_eq!(spec["channel"]["default"], "");
        assert!(
            spec["install"]["properties"]["strategy"]
                .get("default")
                .is_none()
        );
    }

    #[test]
    fn list_items_are_judged_by_the_list_name() {
        let mut schema = json!({"properties": {"schedulingGates": {"items": {"properties": {"name": {}}, "required": ["name"]}},
                                               "imagePullSecrets": {"items": {"properties": {"name": {}}, "required": ["name"]}}}});
        loosen_local_object_references("", &mut schema);
        assert_eq!(
            schema.pointer("/properties/schedulingGates/items/required"),
            Some(&json!(["name"]))
        );
        assert_eq!(
            schema.pointer("/properties/imagePullSecrets/items/required"),
            None
        );
    }

    #[test]
    fn paths_walk_properties_and_list_items() {
        let mut schema = json!({"properties": {"spec": {"properties": {"icon": {"items": {"properties": {"mediatype": {}}}}}}}});
        set(
            &mut schema,
            ".spec.icon[]",
            "required",
            json!(["mediatype"]),
        );
        assert_eq!(
            schema
                .pointer("/properties/spec/properties/icon/items/required")
                .unwrap(),
            &json!(["mediatype"])
        );
        // A path the schema lacks is left alone.
        set(&mut schema, ".status.x", "required", json!(["y"]));
        assert!(schema.pointer("/properties/status").is_none());
    }
}
