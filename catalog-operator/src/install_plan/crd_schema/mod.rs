//! Validating a custom resource against a structural OpenAPI v3 schema as the API server does on a write, for
//! the CRD-upgrade check (spec §4.6: every existing resource must still be valid under the new schema, or the
//! next write to it fails). Every value validation a structural schema may carry:
//!
//! - `type` (`integer` accepts only integers), `nullable`, `x-kubernetes-int-or-string`, `enum`;
//! - numbers: `minimum`/`maximum` with `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`;
//! - strings: `minLength`/`maxLength` (in characters), `pattern` (RE2, as Go's regexp), `format` ([`format`]);
//! - lists: `minItems`/`maxItems`, `uniqueItems`, `x-kubernetes-list-type` `set` and `map` (with
//!   `x-kubernetes-list-map-keys`), `items`;
//! - objects: `minProperties`/`maxProperties`, `required`, `properties`, `additionalProperties` (a schema for
//!   the other keys, or `false`), `x-kubernetes-embedded-resource` (`apiVersion` and `kind` required);
//! - `allOf`, `anyOf`, `oneOf`, `not`.
//!
//! Not here: CEL rules (`x-kubernetes-validations`; `crd_cel` checks those). Pure.

pub mod format;
#[cfg(test)]
mod tests;

use regex::Regex;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;

/// The `pattern`s compiled while one CRD's custom resources are checked (a CRD has few; its resources are many):
/// made by the caller per check, so nothing outlives it.
#[derive(Default)]
pub struct Patterns(RefCell<HashMap<String, Option<Regex>>>);

impl Patterns {
    fn matches(&self, pattern: &str, s: &str) -> Result<bool, String> {
        let mut cache = self.0.borrow_mut();
        let re = cache
            .entry(pattern.to_string())
            .or_insert_with(|| Regex::new(pattern).ok());
        match re {
            Some(re) => Ok(re.is_match(s)),
            None => Err(format!("the schema's pattern '{pattern}' does not compile")),
        }
    }
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// The first violation of `schema` by `value`, as `path: problem`.
pub fn validate(p: &Patterns, schema: &Value, value: &Value, path: &str) -> Option<String> {
    if !schema.is_object() || (value.is_null() && schema["nullable"].as_bool().unwrap_or(false)) {
        return None;
    }
    let at = |problem: String| Some(format!("{path}: {problem}"));
    if schema["x-kubernetes-int-or-string"].as_bool() == Some(true) {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            return at("expected an integer or a string".into());
        }
    } else if let Some(t) = schema["type"].as_str()
        && !type_ok(t, value)
    {
        return at(format!("expected {t}"));
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        return at("value not in enum".into());
    }
    if let Some(n) = value.as_f64()
        && let Some(problem) = number(schema, n)
    {
        return at(problem);
    }
    if let Some(s) = value.as_str()
        && let Some(problem) = string(p, schema, s)
    {
        return at(problem);
    }
    if let Some(items) = value.as_array()
        && let Some(problem) = list(p, schema, items, path)
    {
        return Some(problem);
    }
    if let Some(obj) = value.as_object()
        && let Some(problem) = object(p, schema, obj, path)
    {
        return Some(problem);
    }
    combinators(p, schema, value, path)
}

fn number(schema: &Value, n: f64) -> Option<String> {
    let exclusive = |k: &str| schema[k].as_bool().unwrap_or(false);
    if let Some(min) = schema["minimum"].as_f64() {
        if exclusive("exclusiveMinimum") && n <= min {
            return Some(format!("{n} should be greater than {min}"));
        }
        if n < min {
            return Some(format!("{n} is less than the minimum {min}"));
        }
    }
    if let Some(max) = schema["maximum"].as_f64() {
        if exclusive("exclusiveMaximum") && n >= max {
            return Some(format!("{n} should be less than {max}"));
        }
        if n > max {
            return Some(format!("{n} is more than the maximum {max}"));
        }
    }
    if let Some(m) = schema["multipleOf"].as_f64().filter(|m| *m > 0.0) {
        let q = n / m;
        if (q - q.round()).abs() > 1e-9 {
            return Some(format!("{n} should be a multiple of {m}"));
        }
    }
    None
}

fn string(p: &Patterns, schema: &Value, s: &str) -> Option<String> {
    let chars = s.chars().count() as u64;
    if let Some(min) = schema["minLength"].as_u64()
        && chars < min
    {
        return Some(format!("shorter than {min}"));
    }
    if let Some(max) = schema["maxLength"].as_u64()
        && chars > max
    {
        return Some(format!("longer than {max}"));
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        match p.matches(pattern, s) {
            Ok(true) => {}
            Ok(false) => return Some(format!("{s:?} should match '{pattern}'")),
            Err(e) => return Some(e),
        }
    }
    if let Some(f) = schema["format"].as_str()
        && !format::valid(f, s)
    {
        return Some(format!("{s:?} is not a valid {f}"));
    }
    None
}

fn list(p: &Patterns, schema: &Value, items: &[Value], path: &str) -> Option<String> {
    let at = |problem: String| Some(format!("{path}: {problem}"));
    let len = items.len() as u64;
    if let Some(min) = schema["minItems"].as_u64()
        && len < min
    {
        return at(format!("should have at least {min} items"));
    }
    if let Some(max) = schema["maxItems"].as_u64()
        && len > max
    {
        return at(format!("should have at most {max} items"));
    }
    let list_type = schema["x-kubernetes-list-type"].as_str();
    if schema["uniqueItems"].as_bool() == Some(true) || list_type == Some("set") {
        for (i, v) in items.iter().enumerate() {
            if items[..i].contains(v) {
                return Some(format!("{path}[{i}]: Duplicate value"));
            }
        }
    }
    if list_type == Some("map") {
        let keys: Vec<&str> = schema["x-kubernetes-list-map-keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let key_of = |v: &Value| keys.iter().map(|k| v[*k].clone()).collect::<Vec<_>>();
        for (i, v) in items.iter().enumerate() {
            let mine = key_of(v);
            if items[..i].iter().any(|o| key_of(o) == mine) {
                return Some(format!(
                    "{path}[{i}]: Duplicate value: {}",
                    Value::from(mine)
                ));
            }
        }
    }
    items
        .iter()
        .enumerate()
        .find_map(|(i, v)| validate(p, &schema["items"], v, &format!("{path}[{i}]")))
}

fn object(
    p: &Patterns,
    schema: &Value,
    obj: &serde_json::Map<String, Value>,
    path: &str,
) -> Option<String> {
    let at = |problem: String| Some(format!("{path}: {problem}"));
    let len = obj.len() as u64;
    if let Some(min) = schema["minProperties"].as_u64()
        && len < min
    {
        return at(format!("should have at least {min} properties"));
    }
    if let Some(max) = schema["maxProperties"].as_u64()
        && len > max
    {
        return at(format!("should have at most {max} properties"));
    }
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if schema["x-kubernetes-embedded-resource"].as_bool() == Some(true) {
        required.extend(["apiVersion", "kind"]);
    }
    if let Some(r) = required.iter().find(|r| !obj.contains_key(**r)) {
        return Some(format!("{path}.{r}: Required value"));
    }
    let declared = schema["properties"].as_object();
    for (k, v) in obj {
        let child = format!("{path}.{k}");
        let problem = match (
            declared.and_then(|d| d.get(k)),
            &schema["additionalProperties"],
        ) {
            (Some(sub), _) => validate(p, sub, v, &child),
            (None, Value::Bool(false)) => {
                Some(format!("{child}: Forbidden: no such field in the schema"))
            }
            (None, extra @ Value::Object(_)) => validate(p, extra, v, &child),
            (None, _) => None,
        };
        if problem.is_some() {
            return problem;
        }
    }
    None
}

fn combinators(p: &Patterns, schema: &Value, value: &Value, path: &str) -> Option<String> {
    let list = |k: &str| schema[k].as_array().cloned().unwrap_or_default();
    if let Some(e) = list("allOf")
        .iter()
        .find_map(|s| validate(p, s, value, path))
    {
        return Some(e);
    }
    let any = list("anyOf");
    if !any.is_empty() && any.iter().all(|s| validate(p, s, value, path).is_some()) {
        return Some(format!("{path}: must validate at least one schema (anyOf)"));
    }
    let one = list("oneOf");
    if !one.is_empty() {
        let passing = one
            .iter()
            .filter(|s| validate(p, s, value, path).is_none())
            .count();
        if passing != 1 {
            return Some(format!(
                "{path}: must validate one and only one schema (oneOf); it validates {passing}"
            ));
        }
    }
    if schema["not"].is_object() && validate(p, &schema["not"], value, path).is_none() {
        return Some(format!("{path}: must not validate the schema (not)"));
    }
    None
}
