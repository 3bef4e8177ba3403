//! Bundle files holding several YAML documents: like operator-registry, only the first document of each file
//! is part of the bundle, and the loader warns naming the file (issue 17: a 2021 litmuschaos bundle shipped three
//! CRDs in one file, of which OLM sees one).

#![allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]

use catalog::Catalog;
use rstest::rstest;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("tests/fixtures/multi_document")
    .join(name)
}

#[rstest]
#[case::package_manifest_folder("package")]
#[case::registry_v1_bundle_folder("bundle")]
fn only_the_first_document_of_a_bundle_file_counts(#[case] layout: &str) {
    let catalog = Catalog::load(&[fixture(layout)]).unwrap();
    let bundle = catalog.packages["chaos"].bundles.values().next().unwrap();
    let crds: Vec<String> = bundle
        .objects()
        .iter()
        .map(|o| serde_json::from_str::<serde_json::Value>(o).unwrap())
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(crds, ["engines.chaos.example.com"]);
    let provided: Vec<&serde_json::Value> = bundle
        .properties
        .iter()
        .filter(|p| p.type_ == "olm.gvk")
        .map(|p| &p.value)
        .collect();
    assert_eq!(provided.len(), 1, "{provided:?}");
    assert_eq!(provided[0]["kind"], "Engine");
    let warned: Vec<&String> = catalog
        .notes
        .iter()
        .filter(|n| n.contains("crds.yaml") && n.contains("2 more document(s)"))
        .collect();
    assert_eq!(warned.len(), 1, "notes: {:?}", catalog.notes);
}
