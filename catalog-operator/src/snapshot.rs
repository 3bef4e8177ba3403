//! Adapter from the registry's wire types (`api.Bundle`, `api.Package`) to the resolver's input
//! ([`resolver::CatalogSnapshot`]). Pure: no I/O. Bad entries are skipped with a note, never a panic.

use registry::api;
use resolver::{BundleEntry, CatalogKey, CatalogSnapshot, Gvk, PackageInfo, Property};
use semver::Version;

/// A snapshot and the problems met while building it (shown in logs, not fatal).
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub snapshot: CatalogSnapshot,
    pub notes: Vec<String>,
}

/// Parse a bundle version as OLM does: tolerant of a leading `v`; an empty or unparseable version is 0.0.0.
pub fn tolerant_version(text: &str) -> Result<Version, String> {
    let t = text.trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    if t.is_empty() {
        return Ok(Version::new(0, 0, 0));
    }
    Version::parse(t).map_err(|e| format!("version {text:?}: {e}"))
}

fn gvk(g: &api::GroupVersionKind) -> Gvk {
    Gvk {
        group: g.group.clone(),
        version: g.version.clone(),
        kind: g.kind.clone(),
        plural: g.plural.clone(),
    }
}

/// One `api.Bundle` as a resolver entry.
pub fn entry(b: &api::Bundle) -> Result<BundleEntry, String> {
    let version =
        tolerant_version(&b.version).map_err(|e| format!("bundle {}: {e}", b.csv_name))?;
    let mut properties = Vec::with_capacity(b.properties.len());
    // Only the `olm.deprecated` property makes a bundle unselectable (OLM v0); a catalog's `olm.deprecations`
    // notice (`b.deprecation`) is reported on the Subscription instead (crate::deprecation).
    let mut deprecated = false;
    let provided_apis: Vec<Gvk> = b.provided_apis.iter().map(gvk).collect();
    for p in &b.properties {
        if p.r#type == "olm.deprecated" {
            deprecated = true;
        }
        // An `olm.gvk` property the bundle's provided APIs already hold is left out: it is most of a catalog
        // snapshot's memory (a JSON object per API), and the resolver sees provided APIs as `olm.gvk` either way.
        if p.r#type == "olm.gvk" && names_provided(&p.value, &provided_apis) {
            continue;
        }
        let value = serde_json::from_str(&p.value).map_err(|e| {
            format!(
                "bundle {}: property {} is not JSON: {e}",
                b.csv_name, p.r#type
            )
        })?;
        properties.push(Property {
            type_: p.r#type.clone(),
            value,
        });
    }
    // Legacy registry dependencies (olm.gvk / olm.package / olm.label) become required properties.
    for d in &b.dependencies {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&d.value) else {
            continue;
        };
        if let Some(p) = resolver::requirement::dependency_as_property(&d.r#type, &value) {
            properties.push(p);
        }
    }
    Ok(BundleEntry {
        name: b.csv_name.clone(),
        package: b.package_name.clone(),
        channel: b.channel_name.clone(),
        version,
        replaces: Some(b.replaces.clone()).filter(|r| !r.is_empty()),
        skips: b.skips.iter().filter(|s| !s.is_empty()).cloned().collect(),
        skip_range: Some(b.skip_range.clone()).filter(|r| !r.is_empty()),
        provided_apis,
        required_apis: b.required_apis.iter().map(gvk).collect(),
        properties,
        bundle_path: b.bundle_path.clone(),
        deprecated,
    })
}

/// Whether `olm.gvk` property text `value` names an API of `provided`.
fn names_provided(value: &str, provided: &[Gvk]) -> bool {
    #[derive(serde::Deserialize)]
    struct GvkValue {
        #[serde(default)]
        group: String,
        #[serde(default)]
        version: String,
        #[serde(default)]
        kind: String,
    }
    serde_json::from_str::<GvkValue>(value).is_ok_and(|g| {
        provided
            .iter()
            .any(|p| p.group == g.group && p.version == g.version && p.kind == g.kind)
    })
}

/// The snapshot and deprecation index of a catalog held in this process, read one bundle at a time, so the
/// catalog's wire bundles are never all in memory at once.
pub fn from_store(
    key: CatalogKey,
    priority: i32,
    store: &registry::store::Store,
) -> Result<(Converted, crate::deprecation::DeprecationIndex), registry::query::QueryError> {
    let packages = store
        .packages()
        .iter()
        .map(|p| registry::query::get_package(store, &p.name))
        .collect::<Result<Vec<_>, _>>()?;
    let mut deprecations = crate::deprecation::DeprecationIndex::build(&packages, &[]);
    let mut notes = Vec::new();
    let mut entries = Vec::with_capacity(store.list_order().len());
    for i in 0..store.list_order().len() {
        let Some(b) = registry::query::list_bundle_at(store, i) else {
            continue;
        };
        let b = crate::catalogs::for_resolution(b?);
        deprecations.add_bundle(&b);
        match entry(&b) {
            Ok(e) => entries.push(e),
            Err(note) => notes.push(note),
        }
    }
    Ok((
        Converted {
            snapshot: snapshot_of(key, priority, &packages, entries),
            notes,
        },
        deprecations,
    ))
}

fn snapshot_of(
    key: CatalogKey,
    priority: i32,
    packages: &[api::Package],
    bundles: Vec<BundleEntry>,
) -> CatalogSnapshot {
    CatalogSnapshot {
        key,
        priority,
        packages: packages
            .iter()
            .map(|p| PackageInfo {
                name: p.name.clone(),
                default_channel: p.default_channel_name.clone(),
            })
            .collect(),
        bundles,
    }
}

/// A catalog's bundles and packages as one resolver snapshot.
pub fn convert(
    key: CatalogKey,
    priority: i32,
    packages: &[api::Package],
    bundles: &[api::Bundle],
) -> Converted {
    let mut notes = Vec::new();
    let mut entries = Vec::with_capacity(bundles.len());
    for b in bundles {
        match entry(b) {
            Ok(e) => entries.push(e),
            Err(note) => notes.push(note),
        }
    }
    Converted {
        snapshot: snapshot_of(key, priority, packages, entries),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn bundle(name: &str, version: &str) -> api::Bundle {
        api::Bundle {
            csv_name: name.into(),
            package_name: "a".into(),
            channel_name: "stable".into(),
            version: version.into(),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::a_plain_semver_is_kept("1.2.3", "1.2.3")]
    #[case::a_leading_v_is_dropped("v0.9.2", "0.9.2")]
    #[case::an_empty_version_is_zero("", "0.0.0")]
    #[case::a_prerelease_is_kept("1.0.0-rc.1", "1.0.0-rc.1")]
    fn versions_are_parsed_tolerantly(#[case] text: &str, #[case] want: &str) {
        assert_eq!(tolerant_version(text).expect("parse").to_string(), want);
    }

    #[rstest]
    #[case::a_provided_api_is_kept_once(r#"{"group":"g","version":"v1","kind":"Store"}"#, false)]
    #[case::another_api_is_kept_as_a_property(
        r#"{"group":"g","version":"v1","kind":"Other"}"#,
        true
    )]
    #[case::an_unreadable_value_is_kept(r#"not json"#, true)]
    fn an_olm_gvk_property_is_left_out_when_the_provided_apis_hold_it(
        #[case] value: &str,
        #[case] kept: bool,
    ) {
        let mut b = bundle("a.v1", "1.0.0");
        b.provided_apis = vec![api::GroupVersionKind {
            group: "g".into(),
            version: "v1".into(),
            kind: "Store".into(),
            plural: "stores".into(),
        }];
        b.properties = vec![api::Property {
            r#type: "olm.gvk".into(),
            value: value.into(),
        }];
        match entry(&b) {
            Ok(e) => {
                assert_eq!(e.provided_apis.len(), 1);
                assert_eq!(e.properties.len(), usize::from(kept));
            }
            Err(note) => assert!(kept && note.contains("not JSON"), "{note}"),
        }
    }

    #[test]
    fn an_unparseable_version_skips_the_bundle_with_a_note() {
        let c = convert(
            CatalogKey::new("c", "ns"),
            0,
            &[],
            &[bundle("a.v1", "one"), bundle("a.v2", "2.0.0")],
        );
        assert_eq!(c.snapshot.bundles.len(), 1);
        assert_eq!(c.snapshot.bundles[0].name, "a.v2");
        assert!(c.notes[0].contains("a.v1"), "{:?}", c.notes);
    }

    #[test]
    fn edges_properties_and_deprecation_are_carried() {
        let mut b = bundle("a.v2", "2.0.0");
        b.replaces = "a.v1".into();
        b.skips = vec!["a.v0".into()];
        b.skip_range = "<2.0.0".into();
        b.properties = vec![api::Property {
            r#type: "olm.package".into(),
            value: r#"{"packageName":"a","version":"2.0.0"}"#.into(),
        }];
        b.deprecation = Some(api::Deprecation {
            message: "old".into(),
        });
        let e = entry(&b).expect("entry");
        assert_eq!(e.replaces.as_deref(), Some("a.v1"));
        assert_eq!(e.skips, vec!["a.v0".to_string()]);
        assert_eq!(e.skip_range.as_deref(), Some("<2.0.0"));
        assert_eq!(e.properties[0].value["packageName"], "a");
        // A catalog deprecation notice is reported, not enforced (OLM v0).
        assert!(!e.deprecated);
        b.properties.push(api::Property {
            r#type: "olm.deprecated".into(),
            value: "{}".into(),
        });
        assert!(entry(&b).expect("entry").deprecated);
    }

    #[test]
    fn empty_edges_are_absent() {
        let e = entry(&bundle("a.v1", "1.0.0")).expect("entry");
        assert_eq!(
            (e.replaces, e.skip_range, e.deprecated),
            (None, None, false)
        );
    }
}
