//! Invalid catalogs give findings that name the file, the document and the fix.

#![allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]

use std::path::PathBuf;

use catalog::{Catalog, LoadError, Problem};
use rstest::rstest;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("tests/fixtures/invalid")
    .join(name)
}

fn problems(name: &str) -> (Vec<Problem>, String) {
    match Catalog::load(&[fixture(name)]) {
        Ok(_) => panic!("{name} loaded, but it is invalid"),
        Err(LoadError::Invalid(d)) => (
            d.0.iter().map(|x| x.problem.clone()).collect(),
            d.to_string(),
        ),
        Err(other) => panic!("{name}: expected findings, got {other}"),
    }
}

#[rstest]
#[case::a_misspelt_olm_schema_is_unknown("unknown_schema.yaml", "document 2", |p: &Problem| matches!(p, Problem::UnknownSchema(s) if s == "olm.bundel"))]
#[case::a_document_without_schema_is_rejected("missing_schema.yaml", "document 2", |p: &Problem| matches!(p, Problem::MissingSchema))]
#[case::a_package_defined_twice_is_reported_with_both_places("duplicate_package.yaml", "(also at ", |p: &Problem| matches!(p, Problem::DuplicatePackage { .. }))]
#[case::a_bundle_defined_twice_is_reported("duplicate_bundle.yaml", "document 4", |p: &Problem| matches!(p, Problem::DuplicateBundle { .. }))]
#[case::two_heads_in_one_channel_are_named("several_heads.yaml", "p.v1, p.v2", |p: &Problem| matches!(p, Problem::SeveralHeads(h) if h.len() == 2))]
#[case::a_two_entry_loop_has_no_head("no_head.yaml", "no head", |p: &Problem| matches!(p, Problem::NoHead))]
#[case::a_loop_below_the_head_is_a_cycle("cycle.yaml", "p.v3 -> p.v2 -> p.v1 -> p.v2", |p: &Problem| matches!(p, Problem::Cycle(_)))]
#[case::replaces_naming_a_missing_entry_strands_the_rest("replaces_missing.yaml", "p.v2-typo", |p: &Problem| matches!(p, Problem::ReplacesMissing { target, .. } if target == "p.v2-typo"))]
#[case::a_skip_range_that_does_not_parse("invalid_skip_range.yaml", ">=banana", |p: &Problem| matches!(p, Problem::InvalidSkipRange { .. }))]
#[case::a_version_that_is_not_semver("invalid_semver.yaml", "\"1.0\"", |p: &Problem| matches!(p, Problem::InvalidVersion { .. }))]
#[case::a_default_channel_that_does_not_exist("default_channel_missing.yaml", "\"beta\"", |p: &Problem| matches!(p, Problem::DefaultChannelMissing(_)))]
#[case::an_entry_without_a_bundle("entry_without_bundle.yaml", "p.v0", |p: &Problem| matches!(p, Problem::EntryWithoutBundle(_)))]
#[case::two_bundles_with_one_version("duplicate_version.yaml", "1.0.0", |p: &Problem| matches!(p, Problem::DuplicateVersion { .. }))]
fn invalid_catalogs_give_actionable_findings(
    #[case] file: &str,
    #[case] mentions: &str,
    #[case] is_expected: fn(&Problem) -> bool,
) {
    let (found, text) = problems(file);
    println!("{text}");
    assert!(
        found.iter().any(is_expected),
        "{file}: unexpected findings:\n{text}"
    );
    assert!(
        text.contains(file),
        "{file}: the message must name the file:\n{text}"
    );
    assert!(
        text.contains(mentions),
        "{file}: the message must mention {mentions:?}:\n{text}"
    );
    assert!(
        text.contains("fix: "),
        "{file}: the message must say how to fix it:\n{text}"
    );
}

#[test]
fn a_broken_json_file_names_the_file() {
    let err = Catalog::load(&[fixture("broken_json.json")]).unwrap_err();
    assert!(matches!(err, LoadError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("broken_json.json"), "{err}");
}

#[test]
fn a_missing_path_is_an_error_not_a_panic() {
    assert!(Catalog::load(&[fixture("does-not-exist")]).is_err());
}
