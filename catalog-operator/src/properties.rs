//! A bundle's properties as OLM writes them on objects: `{"properties": [{"type": …, "value": …}]}` (the
//! `operatorframework.io/properties` annotation of a CSV, `status.bundleLookups[].properties` of an
//! InstallPlan). Typed, so a misspelt key cannot slip through.

use registry::api;
use serde::Serialize;
use serde_json::Value;

/// One property: its type and its JSON value.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Property {
    #[serde(rename = "type")]
    pub type_: String,
    pub value: Value,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
struct Properties<'a> {
    properties: &'a [Property],
}

/// The properties of a registry bundle whose value is JSON (others are skipped, as OLM's parse skips them).
pub fn of_bundle(bundle: &api::Bundle) -> Vec<Property> {
    bundle
        .properties
        .iter()
        .filter_map(|p| {
            serde_json::from_str::<Value>(&p.value)
                .ok()
                .map(|value| Property {
                    type_: p.r#type.clone(),
                    value,
                })
        })
        .collect()
}

/// The `{"properties": [...]}` document, as text.
pub fn document(properties: &[Property]) -> String {
    serde_json::to_string(&Properties { properties }).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_are_kept_and_others_skipped_in_olms_document() {
        let bundle = api::Bundle {
            properties: vec![
                api::Property {
                    r#type: "olm.package".into(),
                    value: r#"{"packageName":"etcd","version":"0.9.4"}"#.into(),
                },
                api::Property {
                    r#type: "olm.broken".into(),
                    value: "not json".into(),
                },
            ],
            ..Default::default()
        };
        let doc: Value = serde_json::from_str(&document(&of_bundle(&bundle))).expect("json");
        assert_eq!(
            doc,
            serde_json::json!({"properties": [{"type": "olm.package", "value": {"packageName": "etcd", "version": "0.9.4"}}]})
        );
    }
}
