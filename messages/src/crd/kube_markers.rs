//! The markers of Kubernetes' own types that OLM's CRDs carry (controller-gen reads them from `k8s.io/api`) and
//! k8s-openapi's schemas lack, for the Kubernetes types our kinds embed (the CSV's pod template, a
//! Subscription's `config`): list-map keys (two containers of one name are rejected), the resource-quantity
//! pattern, the `+default`s of volume sources, probes and ports, and embedded `ObjectMeta` kept as a free-form
//! object. Each node is recognised by its shape, wherever it sits; the table tests below pin each shape.

use serde_json::{Map, Value, json};

use super::schema_path::QUANTITY_PATTERN;

/// A PodSpec's lists keyed like Kubernetes' `+listType=map` markers: `(field, keys)`.
const POD_SPEC_LIST_MAPS: &[(&str, &[&str])] = &[
    ("containers", &["name"]),
    ("initContainers", &["name"]),
    ("ephemeralContainers", &["name"]),
    ("hostAliases", &["ip"]),
    ("imagePullSecrets", &["name"]),
    ("resourceClaims", &["name"]),
    ("schedulingGates", &["name"]),
    (
        "topologySpreadConstraints",
        &["topologyKey", "whenUnsatisfiable"],
    ),
    ("volumes", &["name"]),
];

/// A container's keyed lists (in a PodSpec's `containers`, `initContainers` and `ephemeralContainers`).
const CONTAINER_LIST_MAPS: &[(&str, &[&str])] = &[
    ("env", &["name"]),
    ("ports", &["containerPort", "protocol"]),
    ("volumeDevices", &["devicePath"]),
    ("volumeMounts", &["mountPath"]),
];

/// A default value, built when used (`Value` has no const constructor).
type DefaultValue = fn() -> Value;

/// `+default` markers of a Volume's sources: `(source, field, default)`.
const VOLUME_DEFAULTS: &[(&str, &str, DefaultValue)] = &[
    ("azureDisk", "fsType", || json!("ext4")),
    ("azureDisk", "readOnly", || json!(false)),
    ("iscsi", "iscsiInterface", || json!("default")),
    ("rbd", "keyring", || json!("/etc/ceph/keyring")),
    ("rbd", "pool", || json!("rbd")),
    ("rbd", "user", || json!("admin")),
    ("scaleIO", "fsType", || json!("xfs")),
    ("scaleIO", "storageMode", || json!("ThinProvisioned")),
];

/// Quantity fields whose own description replaces `resource.Quantity`'s (a resource field selector's
/// `divisor`, an emptyDir's `sizeLimit`).
const QUANTITY_FIELDS: &[&str] = &["divisor", "sizeLimit"];

/// The start of `resource.Quantity`'s description, which k8s-openapi puts on every quantity node.
const QUANTITY_DESCRIPTION: &str = "Quantity is a fixed-point representation";

/// Marks every embedded Kubernetes type below `root` (one version's schema). Runs on schemas that still carry
/// k8s-openapi's descriptions (quantities are recognised by theirs).
pub(super) fn mark(root: &mut Value) {
    if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        // The root's own `metadata` stays as the CRD machinery wants it; nested ones are embedded ObjectMeta.
        for (key, child) in props.iter_mut() {
            if key != "metadata" {
                walk(key, child);
            }
        }
    }
}

fn walk(key: &str, node: &mut Value) {
    let Some(map) = node.as_object_mut() else {
        return;
    };
    if let Some(meta) = child(map, &["metadata"])
        && has_props(meta, &["generateName", "managedFields"])
    {
        // OLM keeps a pod template's metadata as written (its CRD generation marks it so) and prunes every other
        // embedded ObjectMeta to an empty object (controller-gen's default).
        let preserve = key == "template";
        *meta = embedded_object_meta(meta, preserve);
    }
    if is_quantity(key, map) {
        map.insert("pattern".to_owned(), json!(QUANTITY_PATTERN));
    }
    if has_props(map, &["containers", "restartPolicy", "dnsPolicy"]) {
        list_maps(map, POD_SPEC_LIST_MAPS);
        set_prop(map, &["hostAliases", "items", "ip"], "default", json!(""));
        for containers in ["containers", "initContainers", "ephemeralContainers"] {
            if let Some(container) = child(map, &[containers, "items"]) {
                list_maps(container, CONTAINER_LIST_MAPS);
                set_prop(
                    container,
                    &["ports", "items", "protocol"],
                    "default",
                    json!("TCP"),
                );
            }
        }
    }
    if has_props(map, &["claims", "limits", "requests"]) {
        list_maps(map, &[("claims", &["name"])]);
    }
    if key == "grpc" && has_props(map, &["port", "service"]) {
        set_prop(map, &["service"], "default", json!(""));
    }
    if has_props(map, &["azureDisk", "rbd", "scaleIO"]) {
        for (source, field, default) in VOLUME_DEFAULTS {
            set_prop(map, &[source, field], "default", default());
        }
    }
    for (k, v) in map.iter_mut() {
        match k.as_str() {
            "properties" => {
                if let Some(props) = v.as_object_mut() {
                    props.iter_mut().for_each(|(name, child)| walk(name, child));
                }
            }
            // A list's items and a map's values are named after the list or map.
            "items" | "additionalProperties" => walk(key, v),
            _ => {}
        }
    }
}

/// A quantity: by `resource.Quantity`'s own description, or, where the field's description replaces it, by the
/// names Kubernetes gives quantity fields.
fn is_quantity(key: &str, map: &Map<String, Value>) -> bool {
    map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        && (QUANTITY_FIELDS.contains(&key)
            || map
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| d.starts_with(QUANTITY_DESCRIPTION)))
}

/// OLM's embedded ObjectMeta: an object without properties, kept as written (`preserve`) or pruned empty.
fn embedded_object_meta(map: &Map<String, Value>, preserve: bool) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("type".to_owned(), json!("object"));
    if preserve {
        meta.insert(
            "x-kubernetes-preserve-unknown-fields".to_owned(),
            json!(true),
        );
    }
    if let Some(description) = map.get("description") {
        meta.insert("description".to_owned(), description.clone());
    }
    meta
}

fn has_props(map: &Map<String, Value>, names: &[&str]) -> bool {
    map.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| names.iter().all(|n| p.contains_key(*n)))
}

/// The node reached from `map` by `steps`, each a property name or `items`.
fn child<'a>(
    map: &'a mut Map<String, Value>,
    steps: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = map;
    for step in steps {
        let next = if *step == "items" {
            cur.get_mut("items")
        } else {
            cur.get_mut("properties").and_then(|p| p.get_mut(*step))
        };
        cur = next.and_then(Value::as_object_mut)?;
    }
    Some(cur)
}

fn set_prop(map: &mut Map<String, Value>, steps: &[&str], key: &str, value: Value) {
    if let Some(node) = child(map, steps) {
        node.insert(key.to_owned(), value);
    }
}

fn list_maps(map: &mut Map<String, Value>, lists: &[(&str, &[&str])]) {
    for (field, keys) in lists {
        if let Some(list) = child(map, &[field]) {
            list.insert("x-kubernetes-list-type".to_owned(), json!("map"));
            list.insert("x-kubernetes-list-map-keys".to_owned(), json!(keys));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    fn pod_spec() -> Value {
        let container = obj(json!({
            "name": {"type": "string"},
            "env": {"type": "array", "items": obj(json!({"name": {"type": "string"}}))},
            "ports": {"type": "array", "items": obj(json!({"containerPort": {"type": "integer"}, "protocol": {"type": "string"}}))},
        }));
        obj(json!({
            "containers": {"type": "array", "items": container.clone()},
            "initContainers": {"type": "array", "items": container},
            "restartPolicy": {"type": "string"},
            "dnsPolicy": {"type": "string"},
            "hostAliases": {"type": "array", "items": obj(json!({"ip": {"type": "string"}}))},
            "volumes": {"type": "array", "items": obj(json!({
                "name": {"type": "string"},
                "rbd": obj(json!({"pool": {"type": "string"}})),
                "azureDisk": obj(json!({"fsType": {"type": "string"}})),
                "scaleIO": obj(json!({"fsType": {"type": "string"}})),
            }))},
        }))
    }

    fn marked(spec: Value) -> Value {
        let mut root = obj(json!({"spec": obj(json!({"template": obj(json!({"spec": spec}))}))}));
        mark(&mut root);
        root["properties"]["spec"]["properties"]["template"]["properties"]["spec"].clone()
    }

    #[rstest]
    #[case::containers_by_name("/properties/containers", json!(["name"]))]
    #[case::init_containers_by_name("/properties/initContainers", json!(["name"]))]
    #[case::volumes_by_name("/properties/volumes", json!(["name"]))]
    #[case::host_aliases_by_ip("/properties/hostAliases", json!(["ip"]))]
    #[case::env_by_name("/properties/containers/items/properties/env", json!(["name"]))]
    #[case::ports_by_port_and_protocol("/properties/initContainers/items/properties/ports", json!(["containerPort", "protocol"]))]
    fn a_pod_specs_lists_are_keyed_like_kubernetes(#[case] pointer: &str, #[case] keys: Value) {
        let spec = marked(pod_spec());
        let list = spec.pointer(pointer).cloned().unwrap_or_default();
        assert_eq!(list["x-kubernetes-list-type"], "map", "{pointer}");
        assert_eq!(list["x-kubernetes-list-map-keys"], keys, "{pointer}");
    }

    #[rstest]
    #[case::a_port_protocol("/properties/containers/items/properties/ports/items/properties/protocol", json!("TCP"))]
    #[case::a_host_alias_ip("/properties/hostAliases/items/properties/ip", json!(""))]
    #[case::an_rbd_pool("/properties/volumes/items/properties/rbd/properties/pool", json!("rbd"))]
    #[case::an_azure_disk_fs_type("/properties/volumes/items/properties/azureDisk/properties/fsType", json!("ext4"))]
    #[case::a_scale_io_fs_type("/properties/volumes/items/properties/scaleIO/properties/fsType", json!("xfs"))]
    fn map_keys_and_volume_sources_get_kubernetes_defaults(
        #[case] pointer: &str,
        #[case] default: Value,
    ) {
        let spec = marked(pod_spec());
        assert_eq!(
            spec.pointer(&format!("{pointer}/default")),
            Some(&default),
            "{pointer}"
        );
    }

    #[test]
    fn a_list_outside_a_pod_spec_stays_unkeyed() {
        // A Subscription's `config.env` is a plain list in OLM's CRD.
        let config = obj(
            json!({"env": {"type": "array", "items": obj(json!({"name": {"type": "string"}}))}}),
        );
        let out = marked(config);
        assert!(
            out["properties"]["env"]
                .get("x-kubernetes-list-type")
                .is_none()
        );
    }

    #[test]
    fn resource_claims_are_keyed_and_quantities_get_the_quantity_pattern() {
        let quantity = json!({"x-kubernetes-int-or-string": true, "description": "Quantity is a fixed-point representation of a number."});
        let resources = obj(json!({
            "claims": {"type": "array", "items": obj(json!({"name": {"type": "string"}}))},
            "limits": {"type": "object", "additionalProperties": quantity},
            "requests": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
        }));
        let out = marked(obj(json!({"resources": resources})));
        let r = &out["properties"]["resources"]["properties"];
        assert_eq!(r["claims"]["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(
            r["limits"]["additionalProperties"]["pattern"],
            QUANTITY_PATTERN
        );
        // An int-or-string that is no quantity (a port, maxSurge) gets no pattern.
        assert!(
            r["requests"]["additionalProperties"]
                .get("pattern")
                .is_none()
        );
    }

    #[test]
    fn a_pod_templates_metadata_is_kept_as_written_other_nested_metadata_is_pruned_and_the_root_is_left_alone()
     {
        let meta =
            obj(json!({"generateName": {"type": "string"}, "managedFields": {"type": "array"}}));
        let mut root = obj(json!({
            "metadata": meta.clone(),
            "spec": obj(json!({
                "template": obj(json!({"metadata": meta.clone()})),
                "volumeClaimTemplate": obj(json!({"metadata": meta})),
            })),
        }));
        mark(&mut root);
        let spec = &root["properties"]["spec"]["properties"];
        assert_eq!(
            spec["template"]["properties"]["metadata"],
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            spec["volumeClaimTemplate"]["properties"]["metadata"],
            json!({"type": "object"})
        );
        assert!(root["properties"]["metadata"].get("properties").is_some());
    }

    #[rstest]
    #[case::a_divisor("divisor", true)]
    #[case::a_size_limit("sizeLimit", true)]
    #[case::a_port("port", false)]
    #[case::max_surge("maxSurge", false)]
    fn named_quantity_fields_get_the_pattern(#[case] field: &str, #[case] patterned: bool) {
        let out = marked(obj(
            json!({field: {"x-kubernetes-int-or-string": true, "description": "its own words"}}),
        ));
        assert_eq!(
            out["properties"][field].get("pattern").is_some(),
            patterned,
            "{field}"
        );
    }

    #[test]
    fn a_grpc_probe_service_defaults_to_empty() {
        let out = marked(obj(
            json!({"grpc": obj(json!({"port": {"type": "integer"}, "service": {"type": "string"}}))}),
        ));
        assert_eq!(
            out["properties"]["grpc"]["properties"]["service"]["default"],
            ""
        );
    }
}
