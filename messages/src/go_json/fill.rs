//! Replacing the `null`s of an original object with what its typed round trip wrote at the same place.

use serde_json::Value;

/// Walks `original` beside `written` (the typed value written back): a `null` member becomes `written`'s
/// non-null value at that key, stays `null` where `written` has `null` there (an untyped field), and is removed
/// where `written` has no such key (an omitted or unknown field). List elements are matched by index.
pub fn replace_nulls(original: &mut Value, written: &Value) {
    match original {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let theirs = written.get(&key);
                let Some(mine) = map.get_mut(&key) else {
                    continue;
                };
                match (mine.is_null(), theirs) {
                    (true, None) => {
                        map.remove(&key);
                    }
                    (true, Some(t)) => *mine = t.clone(),
                    (false, t) => replace_nulls(mine, t.unwrap_or(&Value::Null)),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let theirs = written.get(i);
                match (item.is_null(), theirs) {
                    (true, Some(t)) => *item = t.clone(),
                    (true, None) => {}
                    (false, t) => replace_nulls(item, t.unwrap_or(&Value::Null)),
                }
            }
        }
        _ => {}
    }
}
