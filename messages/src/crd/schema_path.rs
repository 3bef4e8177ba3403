//! Dotted paths into a CRD version's OpenAPI schema (`.spec.items[].name`), the nodes they name, and the
//! patterns the conformed schemas share; read by `conform`, `cel` and `kube_markers`.

use serde_json::Value;

/// A Kubernetes resource quantity (`resource.Quantity`'s pattern in every published schema).
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// The schema node at a dotted path, if the schema has it.
pub fn node<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = root;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, items) = match part.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (part, false),
        };
        cur = cur.get_mut("properties")?.get_mut(name)?;
        if items {
            cur = cur.get_mut("items")?;
        }
    }
    Some(cur)
}

/// Sets `key: value` at `path` where the schema has that node (a version may lack it).
pub fn set(root: &mut Value, path: &str, key: &str, value: Value) {
    if let Some(map) = node(root, path).and_then(Value::as_object_mut) {
        map.insert(key.to_owned(), value);
    }
}

pub fn unset(root: &mut Value, path: &str, key: &str) {
    if let Some(map) = node(root, path).and_then(Value::as_object_mut) {
        map.remove(key);
    }
}
