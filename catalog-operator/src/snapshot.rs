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
    for p in &b.properties {
        if p.r#type == "olm.deprecated" {
            deprecated = true;
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
        provided_apis: b.provided_apis.iter().map(gvk).collect(),
        required_apis: b.required_apis.iter().map(gvk).collect(),
        properties,
        bundle_path: b.bundle_path.clone(),
        deprecated,
    })
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
    let packages = packages
        .iter()
        .map(|p| PackageInfo {
            name: p.name.clone(),
            default_channel: p.default_channel_name.clone(),
        })
        .collect();
    Converted {
        snapshot: CatalogSnapshot {
            key,
            priority,
            packages,
            bundles: entries,
        },
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
