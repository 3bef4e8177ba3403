//! Reading bundle manifests the way OLM v0 reads them: Go's `encoding/json` decoding into typed structs, after
//! `sigs.k8s.io/yaml` has turned YAML into JSON (the YAML half is `catalog::documents`). The rules, each with a
//! table test taken from a real manifest (`tests.rs`):
//!
//! 1. **`null` is the zero value** of a typed field: `""` for a string (an annotation written `createdAt:` is
//!    present and empty), `0`, `false`, an empty list or map, an empty struct; `None` for an optional field.
//! 2. **`null` stays `null`** where the field is untyped (Go's `interface{}`, our `serde_json::Value`).
//! 3. **A type mismatch is refused** (a number where a string is typed, a map where a list is), as Go refuses it,
//!    and the refusal names the field path (`metadata.annotations.replicas: invalid type: integer `1`, expected a
//!    string`).
//! 4. **Unknown fields are kept**: typed decoding only validates and supplies zero values; the object sent to the
//!    API server is the original JSON with its `null`s replaced ([`normalize`]), so the API server judges every
//!    field it is given, as it does for OLM.
//!
//! Not reproduced: Go's case-insensitive matching of field names (`"Name"` for `name`); a manifest relying on it
//! is read with that field missing. A field our types require that Go would leave empty is refused with
//! serde's `missing field` message (the API server refuses the same object a step later under OLM).

mod de;
mod fill;
#[cfg(test)]
mod tests;

pub use de::DecodeError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `value` decoded into `T` with Go's rules.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, DecodeError> {
    T::deserialize(de::GoDe::new(value))
}

/// `value` checked against `T` with Go's rules and returned with each `null` replaced by what Go would send on:
/// the typed field's zero value where `T` writes one, removed where `T` omits it, kept where `T` is untyped.
/// Everything else, unknown fields included, is the original.
pub fn normalize<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Value, DecodeError> {
    let typed: T = from_value(value)?;
    let written = serde_json::to_value(&typed).map_err(|e| DecodeError {
        path: String::new(),
        message: format!("cannot be written back: {e}"),
    })?;
    let mut out = value.clone();
    fill::replace_nulls(&mut out, &written);
    Ok(out)
}

/// The object with its `metadata` normalized as an `ObjectMeta` (every kind has one; the rest of a kind OLM
/// keeps unstructured is the API server's to judge). Errors name the path from the object's root.
pub fn normalize_metadata(object: &Value) -> Result<Value, DecodeError> {
    let mut out = object.clone();
    if let Some(meta) = object.get("metadata") {
        let normalized = normalize::<ObjectMeta>(meta).map_err(|e| DecodeError {
            path: if e.path.is_empty() {
                "metadata".to_string()
            } else {
                format!("metadata.{}", e.path)
            },
            message: e.message,
        })?;
        out["metadata"] = normalized;
    }
    Ok(out)
}
