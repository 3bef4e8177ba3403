//! Turning a ClusterServiceVersion (kept as JSON) plus its sibling manifests into an
//! `olm.bundle` of the model, the way `opm render` does for registry+v1 content: properties
//! from the CSV and CRDs, upgrade edges from `spec.replaces`/`spec.skips`/`olm.skipRange`,
//! and every manifest inline as `olm.bundle.object`.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::model::{Bundle, ChannelEntry, Property, RelatedImage};
use crate::property::{self, GvkValue, PropertyType};

/// The pieces of a CSV the catalog needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvFacts {
    pub name: String,
    pub version: String,
    pub replaces: Option<String>,
    pub skips: Vec<String>,
    pub skip_range: Option<String>,
}

pub fn kind_of(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or_default()
}

pub fn is_csv(v: &Value) -> bool {
    kind_of(v) == "ClusterServiceVersion"
}

pub fn is_crd(v: &Value) -> bool {
    kind_of(v) == "CustomResourceDefinition"
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |cur, k| cur.get(k))
        .and_then(Value::as_str)
}

pub fn facts(csv: &Value) -> Result<CsvFacts, String> {
    let name = str_at(csv, &["metadata", "name"])
        .ok_or("CSV has no metadata.name")?
        .to_string();
    let version = str_at(csv, &["spec", "version"])
        .unwrap_or_default()
        .to_string();
    let replaces = str_at(csv, &["spec", "replaces"])
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let skips = csv
        .pointer("/spec/skips")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let skip_range = str_at(csv, &["metadata", "annotations", "olm.skipRange"])
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(CsvFacts {
        name,
        version,
        replaces,
        skips,
        skip_range,
    })
}

impl CsvFacts {
    /// The channel entry these edges describe ("replaces mode").
    pub fn entry(&self) -> ChannelEntry {
        ChannelEntry {
            name: self.name.clone(),
            replaces: self.replaces.clone(),
            skips: self.skips.clone(),
            skip_range: self.skip_range.clone(),
        }
    }
}

/// Owned APIs: each served version of each CRD object, CSV-owned CRDs, and owned APIServices.
fn provided_apis(csv: &Value, objects: &[Value]) -> BTreeSet<GvkValue> {
    let mut out = BTreeSet::new();
    for crd in objects.iter().filter(|o| is_crd(o)) {
        let group = str_at(crd, &["spec", "group"]).unwrap_or_default();
        let kind = str_at(crd, &["spec", "names", "kind"]).unwrap_or_default();
        let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
        let mut names: Vec<&str> = versions
            .into_iter()
            .flatten()
            .filter_map(|v| str_at(v, &["name"]))
            .collect();
        if let Some(v) = str_at(crd, &["spec", "version"]) {
            names.push(v);
        }
        for version in names {
            out.insert(GvkValue {
                group: group.into(),
                kind: kind.into(),
                version: version.into(),
            });
        }
    }
    for owned in list(csv, "/spec/customresourcedefinitions/owned") {
        let name = str_at(owned, &["name"]).unwrap_or_default();
        let group = name.split_once('.').map(|(_, g)| g).unwrap_or_default();
        if let (Some(kind), Some(version)) = (str_at(owned, &["kind"]), str_at(owned, &["version"]))
        {
            out.insert(GvkValue {
                group: group.into(),
                kind: kind.into(),
                version: version.into(),
            });
        }
    }
    for owned in list(csv, "/spec/apiservicedefinitions/owned") {
        if let Some(g) = api_service_gvk(owned) {
            out.insert(g);
        }
    }
    out
}

fn required_apis(csv: &Value) -> BTreeSet<GvkValue> {
    let mut out = BTreeSet::new();
    for req in list(csv, "/spec/customresourcedefinitions/required") {
        let name = str_at(req, &["name"]).unwrap_or_default();
        let group = name.split_once('.').map(|(_, g)| g).unwrap_or_default();
        if let (Some(kind), Some(version)) = (str_at(req, &["kind"]), str_at(req, &["version"])) {
            out.insert(GvkValue {
                group: group.into(),
                kind: kind.into(),
                version: version.into(),
            });
        }
    }
    for req in list(csv, "/spec/apiservicedefinitions/required") {
        if let Some(g) = api_service_gvk(req) {
            out.insert(g);
        }
    }
    out
}

fn api_service_gvk(v: &Value) -> Option<GvkValue> {
    Some(GvkValue {
        group: str_at(v, &["group"])?.into(),
        kind: str_at(v, &["kind"])?.into(),
        version: str_at(v, &["version"])?.into(),
    })
}

fn list<'a>(v: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Converts a `dependencies.yaml` entry to a bundle property (opm's mapping).
pub fn dependency_property(dep: &Value) -> Option<Property> {
    let type_ = dep.get("type").and_then(Value::as_str)?;
    let value = dep.get("value").cloned().unwrap_or(Value::Null);
    Some(match type_ {
        "olm.package" => Property::new(
            PropertyType::PackageRequired,
            json!({
                "packageName": value.get("packageName").cloned().unwrap_or(Value::Null),
                "versionRange": value.get("version").cloned().unwrap_or(Value::Null),
            }),
        ),
        "olm.gvk" => Property::new(PropertyType::GvkRequired, value),
        other => Property {
            type_: other.to_string(),
            value,
        },
    })
}

/// Everything needed to build one bundle from registry+v1 content.
pub struct BundleSource<'a> {
    pub package: &'a str,
    pub csv: &'a Value,
    /// All manifests of the bundle, the CSV included.
    pub objects: &'a [Value],
    /// Entries of `dependencies.yaml` (`{type, value}`).
    pub dependencies: &'a [Value],
    /// Entries of `properties.yaml` (`{type, value}`).
    pub extra_properties: &'a [Value],
    pub image: &'a str,
}

/// Builds the model bundle (properties sorted by type then value, as `opm render` does).
pub fn build_bundle(src: &BundleSource<'_>) -> Result<(Bundle, CsvFacts), String> {
    let f = facts(src.csv)?;
    let mut props = vec![Property::new(
        PropertyType::Package,
        json!({ "packageName": src.package, "version": f.version }),
    )];
    for g in provided_apis(src.csv, src.objects) {
        props.push(Property::new(PropertyType::Gvk, json!(g)));
    }
    let mut required = required_apis(src.csv);
    let mut others = Vec::new();
    for dep in src.dependencies {
        match dependency_property(dep) {
            Some(p) if p.kind() == PropertyType::GvkRequired => {
                if let Ok(g) = property::gvk_value(&p.value) {
                    required.insert(g);
                }
            }
            Some(p) => others.push(p),
            None => {}
        }
    }
    for g in required {
        props.push(Property::new(PropertyType::GvkRequired, json!(g)));
    }
    props.extend(others);
    for p in src.extra_properties {
        if let Some(t) = p.get("type").and_then(Value::as_str) {
            props.push(Property {
                type_: t.into(),
                value: p.get("value").cloned().unwrap_or(Value::Null),
            });
        }
    }
    if let Some(text) = str_at(src.csv, &["metadata", "annotations", "olm.properties"]) {
        let parsed: Vec<Value> = serde_json::from_str(text)
            .map_err(|e| format!("CSV annotation olm.properties is not a JSON list: {e}"))?;
        for p in parsed {
            if let Some(t) = p.get("type").and_then(Value::as_str) {
                props.push(Property {
                    type_: t.into(),
                    value: p.get("value").cloned().unwrap_or(Value::Null),
                });
            }
        }
    }
    props.sort_by_cached_key(|p| (p.type_.clone(), property::canonical_json(&p.value)));
    // Manifests last, CSV first among them, so csvJson is easy to find.
    let mut objects: Vec<&Value> = src.objects.iter().collect();
    objects.sort_by_key(|o| !is_csv(o));
    for o in objects {
        props.push(Property::new(
            PropertyType::BundleObject,
            property::bundle_object_value(o),
        ));
    }
    let bundle = Bundle {
        name: f.name.clone(),
        package: src.package.to_string(),
        image: src.image.to_string(),
        properties: props,
        related_images: related_images(src.csv, src.image),
        deprecation: None,
        origin: None,
    };
    Ok((bundle, f))
}

/// CSV `spec.relatedImages`, the bundle image, and the deployments' container images, deduplicated.
fn related_images(csv: &Value, image: &str) -> Vec<RelatedImage> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut push = |name: &str, image: &str| {
        if !image.is_empty() && seen.insert(image.to_string()) {
            out.push(RelatedImage {
                name: name.to_string(),
                image: image.to_string(),
            });
        }
    };
    for r in list(csv, "/spec/relatedImages") {
        push(
            str_at(r, &["name"]).unwrap_or_default(),
            str_at(r, &["image"]).unwrap_or_default(),
        );
    }
    push("", image);
    for d in list(csv, "/spec/install/spec/deployments") {
        for c in list(d, "/spec/template/spec/containers") {
            push(
                str_at(c, &["name"]).unwrap_or_default(),
                str_at(c, &["image"]).unwrap_or_default(),
            );
        }
    }
    out
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn csv() -> Value {
        json!({
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "foo.v0.2.0", "annotations": {
                "olm.skipRange": "<0.2.0",
                "olm.properties": "[{\"type\":\"olm.maxOpenShiftVersion\",\"value\":\"4.8\"}]"}},
            "spec": {"version": "0.2.0", "replaces": "foo.v0.1.0", "skips": ["foo.v0.1.1"],
                "customresourcedefinitions": {
                    "owned": [{"name": "foos.test.foo", "kind": "Foo", "version": "v1"}],
                    "required": [{"name": "bars.test.bar", "kind": "Bar", "version": "v1alpha1"}]}}
        })
    }

    #[test]
    fn csv_edges_become_a_channel_entry() {
        let f = facts(&csv()).unwrap();
        assert_eq!(
            f.entry(),
            ChannelEntry {
                name: "foo.v0.2.0".into(),
                replaces: Some("foo.v0.1.0".into()),
                skips: vec!["foo.v0.1.1".into()],
                skip_range: Some("<0.2.0".into()),
            }
        );
    }

    #[rstest]
    #[case::package_property_names_the_package(
        "olm.package",
        r#"{"packageName":"foo","version":"0.2.0"}"#
    )]
    #[case::owned_crd_is_provided("olm.gvk", r#"{"group":"test.foo","kind":"Foo","version":"v1"}"#)]
    #[case::required_crd_is_required(
        "olm.gvk.required",
        r#"{"group":"test.bar","kind":"Bar","version":"v1alpha1"}"#
    )]
    #[case::package_dependency_gets_a_version_range(
        "olm.package.required",
        r#"{"packageName":"bar","versionRange":"<0.1.0"}"#
    )]
    #[case::olm_properties_annotation_is_copied("olm.maxOpenShiftVersion", r#""4.8""#)]
    fn bundles_carry_opm_render_properties(#[case] type_: &str, #[case] value: &str) {
        let c = csv();
        let deps =
            [json!({"type": "olm.package", "value": {"packageName": "bar", "version": "<0.1.0"}})];
        let objects = [c.clone()];
        let src = BundleSource {
            package: "foo",
            csv: &c,
            objects: &objects,
            dependencies: &deps,
            extra_properties: &[],
            image: "",
        };
        let (b, _) = build_bundle(&src).unwrap();
        let found: Vec<String> = b
            .properties
            .iter()
            .filter(|p| p.type_ == type_)
            .map(|p| property::canonical_json(&p.value))
            .collect();
        assert_eq!(found, vec![value.to_string()]);
        assert_eq!(b.objects().len(), 1);
    }
}
