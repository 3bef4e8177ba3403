//! The `csvJson` a registry serves for a bundle: the inline ClusterServiceVersion object if
//! there is one, else a CSV built from the bundle's single `olm.csv.metadata` property
//! (opm's behaviour, so packageserver can show FBC catalogs without bundle objects).

use serde_json::{Map, Value, json};

use crate::csv::is_csv;
use crate::model::{Bundle, Package};
use crate::property::PropertyType;

/// The CSV JSON for `bundle`, given its decoded objects, or `None` if it has neither a CSV
/// object nor exactly one `olm.csv.metadata` property.
pub fn csv_json(pkg: &Package, bundle: &Bundle, objects: &[String]) -> Option<String> {
    for o in objects {
        if serde_json::from_str::<Value>(o).is_ok_and(|v| is_csv(&v)) {
            return Some(o.clone());
        }
    }
    let mut metas = bundle.properties_of(PropertyType::CsvMetadata);
    let meta = match (metas.next(), metas.next()) {
        (Some(m), None) => &m.value,
        _ => return None,
    };
    Some(csv_from_metadata(pkg, bundle, meta).to_string())
}

/// The `olm.csv.metadata` value of a CSV object, as `opm render` writes it for a bundle image (the inverse of
/// [`csv_from_metadata`]): labels and annotations, and the spec fields packageserver shows.
pub fn metadata_of(csv: &Value) -> Value {
    let mut meta = Map::new();
    copy(&csv["metadata"], "annotations", &mut meta, "annotations");
    copy(&csv["metadata"], "labels", &mut meta, "labels");
    let spec = &csv["spec"];
    copy(
        spec,
        "apiservicedefinitions",
        &mut meta,
        "apiServiceDefinitions",
    );
    copy(
        spec,
        "customresourcedefinitions",
        &mut meta,
        "crdDescriptions",
    );
    for key in [
        "description",
        "displayName",
        "installModes",
        "keywords",
        "links",
        "maintainers",
        "maturity",
        "minKubeVersion",
        "nativeAPIs",
        "provider",
    ] {
        copy(spec, key, &mut meta, key);
    }
    Value::Object(meta)
}

fn copy(from: &Value, from_key: &str, to: &mut Map<String, Value>, to_key: &str) {
    if let Some(v) = from.get(from_key).filter(|v| !v.is_null()) {
        to.insert(to_key.to_string(), v.clone());
    }
}

/// Builds a CSV from `olm.csv.metadata`, as opm's `csvFromMetadata`.
pub fn csv_from_metadata(pkg: &Package, bundle: &Bundle, meta: &Value) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(bundle.name));
    copy(meta, "annotations", &mut metadata, "annotations");
    copy(meta, "labels", &mut metadata, "labels");
    let mut spec = Map::new();
    copy(
        meta,
        "apiServiceDefinitions",
        &mut spec,
        "apiservicedefinitions",
    );
    copy(
        meta,
        "crdDescriptions",
        &mut spec,
        "customresourcedefinitions",
    );
    let description = meta
        .get("description")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| pkg.description.clone());
    if let Some(d) = description {
        spec.insert("description".into(), json!(d));
    }
    for key in [
        "displayName",
        "installModes",
        "keywords",
        "links",
        "maintainers",
        "maturity",
        "minKubeVersion",
        "nativeAPIs",
        "provider",
    ] {
        copy(meta, key, &mut spec, key);
    }
    if let Some(icon) = &pkg.icon {
        spec.insert(
            "icon".into(),
            json!([{ "base64data": icon.base64data, "mediatype": icon.mediatype }]),
        );
    }
    let related: Vec<Value> = bundle
        .related_images
        .iter()
        .map(|r| json!({ "name": r.name, "image": r.image }))
        .collect();
    if !related.is_empty() {
        spec.insert("relatedImages".into(), Value::Array(related));
    }
    spec.insert("version".into(), json!(bundle.version()));
    spec.insert("install".into(), json!({ "strategy": "deployment" }));
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": metadata,
        "spec": spec,
    })
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use crate::model::Property;

    fn bundle(props: Vec<Property>) -> Bundle {
        Bundle {
            name: "a.v1.0.0".into(),
            package: "a".into(),
            image: "quay.io/a:1".into(),
            properties: props,
            related_images: vec![],
            deprecation: None,
            origin: None,
        }
    }

    #[test]
    fn metadata_builds_a_csv_with_the_bundle_name_and_version() {
        let mut pkg = Package::new("a");
        pkg.description = Some("from the package".into());
        let b = bundle(vec![
            Property::new(
                PropertyType::Package,
                json!({"packageName": "a", "version": "1.0.0"}),
            ),
            Property::new(
                PropertyType::CsvMetadata,
                json!({"displayName": "A", "installModes": [{"type": "AllNamespaces", "supported": true}]}),
            ),
        ]);
        let csv: Value = serde_json::from_str(&csv_json(&pkg, &b, &[]).unwrap()).unwrap();
        assert_eq!(csv["metadata"]["name"], "a.v1.0.0");
        assert_eq!(csv["spec"]["version"], "1.0.0");
        assert_eq!(csv["spec"]["displayName"], "A");
        assert_eq!(csv["spec"]["description"], "from the package");
        assert_eq!(csv["spec"]["installModes"][0]["type"], "AllNamespaces");
    }

    #[test]
    fn metadata_of_a_csv_builds_back_the_same_display_fields() {
        let pkg = Package::new("a");
        let csv = json!({"kind": "ClusterServiceVersion", "metadata": {"name": "a.v1.0.0",
            "annotations": {"capabilities": "Basic Install"}},
            "spec": {"displayName": "A", "description": "d", "version": "1.0.0",
                     "installModes": [{"type": "OwnNamespace", "supported": true}],
                     "customresourcedefinitions": {"owned": [{"name": "xs.example.com", "version": "v1", "kind": "X"}]},
                     "install": {"strategy": "deployment"}}});
        let meta = metadata_of(&csv);
        assert!(meta.get("install").is_none(), "no install strategy: {meta}");
        let b = bundle(vec![
            Property::new(
                PropertyType::Package,
                json!({"packageName": "a", "version": "1.0.0"}),
            ),
            Property::new(PropertyType::CsvMetadata, meta),
        ]);
        let back: Value = serde_json::from_str(&csv_json(&pkg, &b, &[]).unwrap()).unwrap();
        for pointer in [
            "/spec/displayName",
            "/spec/description",
            "/spec/installModes",
            "/spec/customresourcedefinitions",
            "/metadata/annotations",
        ] {
            assert_eq!(back.pointer(pointer), csv.pointer(pointer), "{pointer}");
        }
    }

    #[test]
    fn an_inline_csv_object_wins_over_metadata() {
        let pkg = Package::new("a");
        let b = bundle(vec![Property::new(
            PropertyType::CsvMetadata,
            json!({"displayName": "A"}),
        )]);
        let objects = vec![
            r#"{"kind":"CustomResourceDefinition"}"#.to_string(),
            r#"{"kind":"ClusterServiceVersion","x":1}"#.to_string(),
        ];
        assert_eq!(
            csv_json(&pkg, &b, &objects).as_deref(),
            Some(r#"{"kind":"ClusterServiceVersion","x":1}"#)
        );
    }

    #[test]
    fn no_csv_and_no_metadata_gives_none() {
        assert_eq!(csv_json(&Package::new("a"), &bundle(vec![]), &[]), None);
    }
}
