//! Every catalog in `../shared/catalogs` loads and validates; prints packages, channels and
//! bundles per catalog. Skips (with a message) when the shared folder is absent.

#![allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
#![allow(
    clippy::too_many_arguments,
    reason = "rstest tables: one column per graph fact"
)]

use std::path::PathBuf;

use catalog::{Catalog, Format, load, validate};
use rstest::rstest;

fn shared() -> Option<PathBuf> {
    let root = std::env::var_os("OLM_RS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(
                std::env::var("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
            )
            .join("../../shared")
        })
        .join("catalogs");
    assert!(
        root.is_dir(),
        "{} is this test's input and is missing (../shared/catalogs beside the clone, or $OLM_RS_SHARED)",
        root.display()
    );
    Some(root)
}

#[rstest]
#[case::real_community_fbc("community-operators-prod-fbc/catalogs/v4.21", Format::Fbc, Some((33, 78, 745)))]
#[case::real_community_bundle_folders("community-operators-prod-bundles/operators", Format::Bundles, Some((70, 143, 564)))]
// 613 bundle folders (611 in SOURCES.md + 3 nested in `<ver>/bundle/` - 1 with no manifests/), 49 left out by the legacy-graph repair
#[case::opm_latest_index("operator-registry-testdata/alpha/action/testdata/index-declcfgs/latest", Format::Fbc, Some((3, 4, 10)))]
#[case::opm_old_index(
    "operator-registry-testdata/alpha/action/testdata/index-declcfgs/old",
    Format::Fbc,
    None
)]
#[case::opm_foo_index("operator-registry-testdata/alpha/action/testdata/foo-index-v0.2.0-declcfg", Format::Fbc, Some((1, 2, 2)))]
#[case::opm_list_index("operator-registry-testdata/alpha/action/testdata/list-index", Format::Fbc, Some((2, 4, 4)))]
#[case::opm_package_manifests(
    "operator-registry-testdata/manifests",
    Format::PackageManifests,
    None
)]
#[case::opm_foo_bundle_folder("operator-registry-testdata/alpha/action/testdata/foo-bundle-v0.3.1", Format::Bundles, Some((1, 1, 1)))]
#[case::olm_magic_catalog_json(
    "olm-testdata/test/e2e/testdata/magiccatalog/fbc_catalog.json",
    Format::Fbc,
    None
)]
#[case::olm_magic_catalog_yaml(
    "olm-testdata/test/e2e/testdata/magiccatalog/fbc_updated.yaml",
    Format::Fbc,
    None
)]
#[case::olm_subscription_with_deprecations("olm-testdata/test/e2e/testdata/subscription/example-operator.v0.3.0-deprecations.yaml", Format::Fbc, Some((1, 1, 1)))]
#[case::olm_fail_forward_skip_range("olm-testdata/test/e2e/testdata/fail-forward/v0.3.0-skip-range", Format::PackageManifests, Some((1, 1, 1)))]
#[case::olm_busybox_bundles("olm-testdata/test/images/busybox-index", Format::Bundles, Some((2, 2, 4)))]
#[case::olm_kiali_manifests(
    "olm-testdata/test/e2e/data/kiali-manifests",
    Format::PackageManifests,
    None
)]
#[case::olm_configmap_catalog("olm-testdata/test/e2e/data/catalog.old.yaml", Format::ConfigMap, Some((2, 2, 2)))]
#[case::olm_package_server_etcd(
    "olm-testdata/pkg/package-server/provider/testdata/manifests",
    Format::PackageManifests,
    None
)]
fn every_shared_catalog_loads_and_validates(
    #[case] rel: &str,
    #[case] format: Format,
    #[case] counts: Option<(usize, usize, usize)>,
) {
    let Some(root) = shared() else { return };
    let path = root.join(rel);
    assert_eq!(load::detect(&path).unwrap(), format, "format of {rel}");
    let catalog = load::load_as(&path, format).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let summary = (
        catalog.packages.len(),
        catalog.channel_count(),
        catalog.bundle_count(),
    );
    println!(
        "{rel}: {} packages, {} channels, {} bundles",
        summary.0, summary.1, summary.2
    );
    for pkg in catalog.packages.values() {
        let heads: Vec<String> = pkg
            .channels
            .values()
            .map(|c| {
                format!(
                    "{}={}",
                    c.name,
                    c.head().map(|e| e.name.as_str()).unwrap_or("?")
                )
            })
            .collect();
        println!(
            "  {} (default {}): {} bundles; {}",
            pkg.name,
            pkg.default_channel,
            pkg.bundles.len(),
            heads.join(" ")
        );
    }
    for note in &catalog.notes {
        println!("  note: {note}");
    }
    if let Some(want) = counts {
        assert_eq!(summary, want, "{rel}: (packages, channels, bundles)");
    }
    if let Err(d) = validate::validate(&catalog) {
        panic!("{rel}: {d}");
    }
}

#[test]
fn rendered_fbc_loads_back_to_the_same_graph() {
    let Some(root) = shared() else { return };
    let path = root.join("operator-registry-testdata/alpha/action/testdata/index-declcfgs/latest");
    let original = Catalog::load(&[&path]).unwrap();
    let mut out = Vec::new();
    catalog::render::write_json(&original, &mut out).unwrap();
    let dir = std::env::temp_dir().join(format!("catalog-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("catalog.json"), &out).unwrap();
    let back = Catalog::load(&[&dir]).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    for (name, pkg) in &original.packages {
        let other = &back.packages[name];
        assert_eq!(pkg.default_channel, other.default_channel);
        for (c, ch) in &pkg.channels {
            assert_eq!(ch.entries, other.channels[c].entries, "{name}/{c}");
        }
        for (b, bundle) in &pkg.bundles {
            assert_eq!(bundle.properties, other.bundles[b].properties, "{name}/{b}");
        }
    }
}

/// (package, channel, head, entry, replaces, skips, skipRange) as each loader builds them.
#[rstest]
#[case::package_manifest_edges_come_from_the_csv("operator-registry-testdata/manifests", "etcd", "alpha", "etcdoperator.v0.9.2", "etcdoperator.v0.9.2", Some("etcdoperator.v0.9.0"), &["etcdoperator.v0.9.1"], Some("< 0.6.0"))]
#[case::package_manifest_channels_have_their_own_heads("operator-registry-testdata/manifests", "etcd", "beta", "etcdoperator.v0.9.0", "etcdoperator.v0.6.1", None, &[], None)]
#[case::flat_package_manifest_layout("operator-registry-testdata/manifests", "strimzi-kafka-operator", "stable", "strimzi-cluster-operator.v0.11.1", "strimzi-cluster-operator.v0.11.1", Some("strimzi-cluster-operator.v0.11.0"), &[], None)]
#[case::package_manifest_skip_range_annotation("olm-testdata/test/e2e/testdata/fail-forward/v0.3.0-skip-range", "test-package", "stable", "example-operator.v0.3.0", "example-operator.v0.3.0", None, &[], Some(">=0.1.0 <0.3.0"))]
#[case::bundle_folders_without_edges_are_ordered_by_version("olm-testdata/test/images/busybox-index", "busybox", "alpha", "busybox.v2.0.0", "busybox.v2.0.0", Some("busybox.v1.0.0"), &[], Some(">=0.0.0 <2.0.0"))]
#[case::fbc_entry_with_skips_and_skip_range("operator-registry-testdata/alpha/action/testdata/index-declcfgs/latest", "foo", "beta", "foo.v0.3.1", "foo.v0.2.0", Some("foo.v0.1.0"), &["foo.v0.1.1", "foo.v0.1.2"], Some("<0.2.0"))]
#[case::configmap_catalog("olm-testdata/test/e2e/data/catalog.old.yaml", "package-a", "alpha", "service-a.1.0.0", "service-a.1.0.0", None, &[], None)]
fn loaders_build_the_expected_graph(
    #[case] rel: &str,
    #[case] package: &str,
    #[case] channel: &str,
    #[case] head: &str,
    #[case] entry: &str,
    #[case] replaces: Option<&str>,
    #[case] skips: &[&str],
    #[case] skip_range: Option<&str>,
) {
    let Some(root) = shared() else { return };
    let catalog = Catalog::load(&[root.join(rel)]).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let ch = &catalog.packages[package].channels[channel];
    assert_eq!(ch.head().map(|e| e.name.as_str()), Some(head));
    let e = ch
        .entry(entry)
        .unwrap_or_else(|| panic!("{entry} not in {package}/{channel}"));
    assert_eq!(e.replaces.as_deref(), replaces);
    assert_eq!(
        e.skips,
        skips.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(e.skip_range.as_deref(), skip_range);
}

#[test]
fn bundle_folders_carry_dependencies_and_inline_manifests() {
    let Some(root) = shared() else { return };
    let catalog = Catalog::load(&[
        root.join("operator-registry-testdata/alpha/action/testdata/foo-bundle-v0.3.1")
    ])
    .unwrap();
    let b = catalog.packages["foo"].bundles.values().next().unwrap();
    let types: Vec<&str> = b.properties.iter().map(|p| p.type_.as_str()).collect();
    assert!(types.contains(&"olm.package.required"), "{types:?}");
    assert!(types.contains(&"olm.gvk.required"), "{types:?}");
    assert!(b.image.is_empty() && b.has_objects());
    let csv: serde_json::Value = serde_json::from_str(&b.objects()[0]).unwrap();
    assert_eq!(csv["kind"], "ClusterServiceVersion");
}

#[test]
fn every_single_file_fbc_of_olm_loads() {
    let Some(root) = shared() else { return };
    for dir in [
        "olm-testdata/test/e2e/testdata/subscription",
        "olm-testdata/test/e2e/testdata/magiccatalog",
    ] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let c = Catalog::load(&[&f]).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            println!(
                "{}: {} packages, {} channels, {} bundles",
                f.display(),
                c.packages.len(),
                c.channel_count(),
                c.bundle_count()
            );
            assert!(c.bundle_count() >= 1, "{}", f.display());
        }
    }
}
