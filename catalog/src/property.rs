//! Bundle property types (`olm.package`, `olm.gvk`, ...), their typed values, and the
//! canonical compact JSON encoding opm uses on the wire (keys sorted at every level).

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Known property types, with their wire strings. Anything else is `Other` and passes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PropertyType {
    Package,
    Gvk,
    GvkRequired,
    PackageRequired,
    SkipRange,
    BundleObject,
    CsvMetadata,
    Constraint,
    Label,
    LabelRequired,
    Deprecated,
    Channel,
    Other,
}

impl PropertyType {
    pub fn as_str(self) -> &'static str {
        match self {
            PropertyType::Package => "olm.package",
            PropertyType::Gvk => "olm.gvk",
            PropertyType::GvkRequired => "olm.gvk.required",
            PropertyType::PackageRequired => "olm.package.required",
            PropertyType::SkipRange => "olm.skipRange",
            PropertyType::BundleObject => "olm.bundle.object",
            PropertyType::CsvMetadata => "olm.csv.metadata",
            PropertyType::Constraint => "olm.constraint",
            PropertyType::Label => "olm.label",
            PropertyType::LabelRequired => "olm.label.required",
            PropertyType::Deprecated => "olm.deprecated",
            PropertyType::Channel => "olm.channel",
            PropertyType::Other => "",
        }
    }

    pub fn from_wire(s: &str) -> Self {
        match s {
            "olm.package" => PropertyType::Package,
            "olm.gvk" => PropertyType::Gvk,
            "olm.gvk.required" => PropertyType::GvkRequired,
            "olm.package.required" => PropertyType::PackageRequired,
            "olm.skipRange" => PropertyType::SkipRange,
            "olm.bundle.object" => PropertyType::BundleObject,
            "olm.csv.metadata" => PropertyType::CsvMetadata,
            "olm.constraint" => PropertyType::Constraint,
            "olm.label" => PropertyType::Label,
            "olm.label.required" => PropertyType::LabelRequired,
            "olm.deprecated" => PropertyType::Deprecated,
            "olm.channel" => PropertyType::Channel,
            _ => PropertyType::Other,
        }
    }
}

/// Value of `olm.package`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageValue {
    pub package_name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
}

/// Value of `olm.gvk` and `olm.gvk.required`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GvkValue {
    pub group: String,
    pub kind: String,
    pub version: String,
}

/// Value of `olm.package.required`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRequiredValue {
    pub package_name: String,
    pub version_range: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("value does not have the expected shape: {0}")]
    Shape(#[from] serde_json::Error),
    #[error("`data` is missing or not a string")]
    NoData,
    #[error("`data` is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("decoded manifest is neither JSON nor YAML: {0}")]
    Manifest(String),
}

pub fn package_value(v: &Value) -> Result<PackageValue, ValueError> {
    Ok(PackageValue::deserialize(v)?)
}

pub fn gvk_value(v: &Value) -> Result<GvkValue, ValueError> {
    Ok(GvkValue::deserialize(v)?)
}

pub fn package_required_value(v: &Value) -> Result<PackageRequiredValue, ValueError> {
    Ok(PackageRequiredValue::deserialize(v)?)
}

/// Decodes an `olm.bundle.object` value (`{data: base64}`) to the manifest as compact JSON.
/// The base64 may hold YAML or JSON; the result is always JSON.
pub fn bundle_object_json(v: &Value) -> Result<String, ValueError> {
    let data = v
        .get("data")
        .and_then(Value::as_str)
        .ok_or(ValueError::NoData)?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim())?;
    let text = String::from_utf8(bytes).map_err(|e| ValueError::Manifest(e.to_string()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        // Already JSON: keep the author's key order (opm passes the bytes through).
        let parsed: Value =
            serde_json::from_str(trimmed).map_err(|e| ValueError::Manifest(e.to_string()))?;
        return Ok(parsed.to_string());
    }
    let parsed = crate::yaml::parse_yaml_documents(&text)
        .map_err(|e| ValueError::Manifest(e.to_string()))?
        .into_iter()
        .next()
        .ok_or_else(|| ValueError::Manifest("empty manifest".into()))?;
    Ok(parsed.to_string())
}

/// Builds an `olm.bundle.object` value holding `manifest` (encoded as JSON).
pub fn bundle_object_value(manifest: &Value) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(manifest.to_string());
    serde_json::json!({ "data": data })
}

/// Compact JSON with object keys sorted at every level, as opm writes property values.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                if let Some(child) = map.get(*k) {
                    write_canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::keys_are_sorted_at_every_level(json!({"b":1,"a":{"d":[{"z":1,"y":2}],"c":"x"}}), r#"{"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1}"#)]
    #[case::html_characters_stay_literal(json!({"r":">=1.0.0 <2.0.0 & x"}), r#"{"r":">=1.0.0 <2.0.0 & x"}"#)]
    #[case::scalars_pass_through(json!("4.8"), r#""4.8""#)]
    fn canonical_json_matches_opm_encoding(#[case] v: Value, #[case] want: &str) {
        assert_eq!(canonical_json(&v), want);
    }

    #[rstest]
    #[case::known_type_round_trips("olm.gvk.required", PropertyType::GvkRequired)]
    #[case::unknown_type_is_other("olm.maxOpenShiftVersion", PropertyType::Other)]
    fn property_types_parse_from_wire_strings(#[case] s: &str, #[case] want: PropertyType) {
        assert_eq!(PropertyType::from_wire(s), want);
        if want != PropertyType::Other {
            assert_eq!(want.as_str(), s);
        }
    }

    #[rstest]
    #[case::yaml_manifest_becomes_json(
        "kind: ConfigMap\nmetadata:\n  name: x\n",
        r#"{"kind":"ConfigMap","metadata":{"name":"x"}}"#
    )]
    #[case::json_manifest_stays_json(r#"{"kind":"Secret"}"#, r#"{"kind":"Secret"}"#)]
    fn bundle_objects_decode_to_json(#[case] manifest: &str, #[case] want: &str) {
        let data = base64::engine::general_purpose::STANDARD.encode(manifest);
        assert_eq!(bundle_object_json(&json!({ "data": data })).unwrap(), want);
    }

    #[test]
    fn bundle_object_with_bad_base64_is_an_error() {
        assert!(bundle_object_json(&json!({"data": "!!!"})).is_err());
    }
}
