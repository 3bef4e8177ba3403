//! Comparing an original document with its round-tripped form, after a small, documented
//! normalization.

use serde_json::Value;

/// One difference between the original and the round-tripped document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// A field present in the original is missing after the round trip.
    Lost(String),
    /// A field appeared that the original did not have, with a non-zero value.
    Added(String),
    /// A field appeared with its Go zero value (`""`, `0`, `false`, `{}`, `[]`, or an object of
    /// those). Go's `encoding/json` writes such fields too when they lack `omitempty` (e.g.
    /// `containers[].name`, CRD `spec.scope`, `versions[].served`), so nothing was lost.
    AddedZero(String),
    /// A value changed.
    Changed {
        pointer: String,
        original: String,
        roundtrip: String,
    },
}

/// Normalization applied to both sides before comparing. Every rule is an equivalence Go's
/// `encoding/json` (and so OLM and the apiserver) already applies:
///
/// 1. `null` object members are dropped: for Go, `"x": null` on a pointer, slice or map field
///    decodes to nil and is omitted (`omitempty`) or re-encoded as `null`; either way it means
///    "unset". CSVs from `operator-sdk` carry `creationTimestamp: null`, for example.
///
/// Nothing else is normalized here: empty strings, lists and maps must survive as they were.
/// Two value-level equivalences are handled in [`compare`], both also made by Go:
/// - a number written where Kubernetes expects a `resource.Quantity` comes back as the same text
///   in a string (Go's Quantity marshals to a string too);
/// - numbers are compared by value: a JSON-schema `minimum: 0` held in a float64 (Go) or f64
///   (k8s-openapi) comes back as `0.0`; JSON has a single number type.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// Escapes one JSON-pointer segment (RFC 6901).
pub fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether `value` is what Go writes for an unset field without `omitempty`.
pub fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.values().all(is_zero),
    }
}

fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 80 {
        format!(
            "{}…",
            &text[..text.char_indices().nth(80).map_or(text.len(), |(i, _)| i)]
        )
    } else {
        text
    }
}

/// Lists the differences between `original` and `roundtrip` (both normalized), plus the number
/// of numbers that came back as the same text in a string (Quantity re-encoding).
pub fn compare(
    original: &Value,
    roundtrip: &Value,
    pointer: &str,
    out: &mut Vec<Difference>,
    coerced: &mut usize,
) {
    match (original, roundtrip) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, va) in a {
                let here = format!("{pointer}/{}", segment(key));
                match b.get(key) {
                    Some(vb) => compare(va, vb, &here, out, coerced),
                    None => out.push(Difference::Lost(here)),
                }
            }
            for (key, vb) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                let here = format!("{pointer}/{}", segment(key));
                out.push(if is_zero(vb) {
                    Difference::AddedZero(here)
                } else {
                    Difference::Added(here)
                });
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                compare(va, vb, &format!("{pointer}/{i}"), out, coerced);
            }
        }
        (Value::Number(n), Value::String(s)) if n.to_string() == *s => *coerced += 1,
        (Value::Number(a), Value::Number(b))
            if a.as_f64().is_some() && a.as_f64() == b.as_f64() => {}
        (a, b) if a == b => {}
        (a, b) => out.push(Difference::Changed {
            pointer: pointer.to_owned(),
            original: brief(a),
            roundtrip: brief(b),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dropped_field_is_reported_with_its_pointer() {
        let mut out = Vec::new();
        let mut coerced = 0;
        compare(
            &json!({"spec": {"a/b": 1, "keep": [1]}}),
            &json!({"spec": {"keep": [1]}}),
            "",
            &mut out,
            &mut coerced,
        );
        assert_eq!(out, [Difference::Lost("/spec/a~1b".into())]);
    }

    #[test]
    fn an_empty_list_is_not_the_same_as_a_missing_one() {
        let mut out = Vec::new();
        let mut coerced = 0;
        compare(
            &normalize(&json!({"a": [], "b": null})),
            &normalize(&json!({})),
            "",
            &mut out,
            &mut coerced,
        );
        assert_eq!(out, [Difference::Lost("/a".into())]);
    }
}
