//! Every ClusterServiceVersion, CRD and other manifest in `../shared/catalogs` round-trips
//! through our types (and k8s-openapi's) without losing a field.
//!
//! Run: `cargo test -p messages --test corpus_roundtrip -- --nocapture` (prints the counts).
//! The corpus is found at `$OLM_RS_SHARED/catalogs` or `<repo>/../shared/catalogs`; when it is
//! absent the test says so and passes.

mod corpus;

use std::collections::BTreeMap;
use std::path::PathBuf;

use corpus::diff::{Difference, compare, normalize};
use corpus::documents::{Document, Origin, nested, parse_file};
use corpus::kinds::{Model, roundtrip};
use serde_json::Value;

fn corpus_root() -> Option<PathBuf> {
    let root = match std::env::var_os("OLM_RS_SHARED") {
        Some(shared) => PathBuf::from(shared).join("catalogs"),
        None => PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
        )
        .join("../../shared/catalogs"),
    };
    root.is_dir().then_some(root)
}

fn is_manifest(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
}

/// Every document of the corpus, nested ones included, plus files that failed to parse.
fn all_documents(root: &std::path::Path) -> (Vec<Document>, Vec<String>, usize) {
    let mut documents = Vec::new();
    let mut failures = Vec::new();
    let mut files = 0;
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.expect("walk corpus");
        let path = entry.path();
        if !entry.file_type().is_file() || !is_manifest(path) {
            continue;
        }
        files += 1;
        let rel = path.strip_prefix(root).unwrap_or(path).to_path_buf();
        let text = std::fs::read_to_string(path).expect("read corpus file");
        let values = match parse_file(path, &text) {
            Ok(values) => values,
            Err(err) => {
                failures.push(format!("{}: {err}", rel.display()));
                continue;
            }
        };
        for (i, value) in values.into_iter().enumerate() {
            for (location, origin, inner) in nested(&value) {
                match inner {
                    Ok(inner) => documents.push(Document {
                        file: rel.clone(),
                        index: format!("{i}/{location}"),
                        origin,
                        value: inner,
                    }),
                    Err(err) => {
                        failures.push(format!("{} doc {i} {location}: {err}", rel.display()))
                    }
                }
            }
            documents.push(Document {
                file: rel.clone(),
                index: i.to_string(),
                origin: Origin::File,
                value,
            });
        }
    }
    (documents, failures, files)
}

/// Fields some corpus files carry that are not in the Go API of their kind. The apiserver prunes
/// unknown fields of CRs (OLM's CRDs are structural, without preserve-unknown-fields) and its
/// case-sensitive decoder drops unknown fields of built-in kinds, so no OLM cluster ever holds
/// them; our types drop them the same way. Each entry: (kind, pointer with `N` for indices, why).
/// Any other lost field fails the test.
const NOT_IN_THE_API: &[(&str, &str, &str)] = &[
    (
        "ClusterServiceVersion",
        "/spec/customresourcedefinitions/owned/N/group",
        "CRDDescription has no group (name is plural.group)",
    ),
    (
        "ClusterServiceVersion",
        "/spec/customresourcedefinitions/required/N/group",
        "CRDDescription has no group",
    ),
    (
        "ClusterServiceVersion",
        "/spec/miniKubeVersion",
        "typo of minKubeVersion",
    ),
    (
        "ClusterServiceVersion",
        "/spec/MinKubeVersion",
        "wrong case of minKubeVersion (decoding is case-sensitive)",
    ),
    (
        "ClusterServiceVersion",
        "/spec/support",
        "not a CSV field (vendor metadata)",
    ),
    (
        "ClusterServiceVersion",
        "/spec/com.redhat.openshift.versions",
        "bundle annotation pasted into spec",
    ),
    (
        "CustomResourceDefinition",
        "/spec/status",
        "status inside spec",
    ),
    (
        "CustomResourceDefinition",
        "/spec/versions/N/additionalPrinterColumns/N/JSONPath",
        "v1beta1 spelling in a v1 CRD (v1 has jsonPath)",
    ),
];

/// `pointer` with every array index replaced by `N`.
fn pattern(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|seg| {
            if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                "N"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

const CSV_API_VERSION: &str = "operators.coreos.com/v1alpha1";

#[derive(Default)]
struct Tally {
    documents: usize,
    files: std::collections::BTreeSet<PathBuf>,
}

#[test]
fn corpus_roundtrip_every_manifest_keeps_every_field() {
    let Some(root) = corpus_root() else {
        panic!(
            "the shared catalogs (../shared/catalogs beside the clone, or $OLM_RS_SHARED/catalogs) are this test's input and are missing"
        );
    };
    let (documents, mut failures, files) = all_documents(&root);
    let mut tallies: BTreeMap<(Model, String, Origin), Tally> = BTreeMap::new();
    let mut coerced = 0;
    let mut added_zero: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut foreign_csv_api_version = 0;
    let mut pruned: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut skipped_non_k8s = 0;
    for doc in &documents {
        let (Some(api_version), Some(kind)) = (
            doc.value.get("apiVersion").and_then(Value::as_str),
            doc.value.get("kind").and_then(Value::as_str),
        ) else {
            // FBC blobs (`schema: olm.*`), bundle metadata (annotations.yaml), ci.yaml, ...
            skipped_non_k8s += 1;
            continue;
        };
        let (model, result) = roundtrip(api_version, kind, &doc.value);
        let label = match model {
            Model::Unmodelled => format!("{kind} ({api_version})"),
            _ => kind.to_owned(),
        };
        let tally = tallies.entry((model, label, doc.origin)).or_default();
        tally.documents += 1;
        tally.files.insert(doc.file.clone());
        let Some(result) = result else { continue };
        let where_ = format!("{} doc {}", doc.file.display(), doc.index);
        match result {
            Err(err) => failures.push(format!("{where_}: {kind} {err}")),
            Ok(back) => {
                let mut original = normalize(&doc.value);
                if kind == "ClusterServiceVersion" && api_version != CSV_API_VERSION {
                    // The service-binding-operator bundles label their CSV
                    // `binding.operators.coreos.com/v1alpha1`. Bundle objects are picked by kind,
                    // and only `operators.coreos.com/v1alpha1` serves CSVs, which is what our type
                    // writes. Counted and reported below.
                    foreign_csv_api_version += 1;
                    original["apiVersion"] = Value::from(CSV_API_VERSION);
                }
                let mut differences = Vec::new();
                compare(
                    &original,
                    &normalize(&back),
                    "",
                    &mut differences,
                    &mut coerced,
                );
                for difference in differences {
                    failures.push(match difference {
                        Difference::AddedZero(p) => {
                            *added_zero
                                .entry((kind.to_owned(), pattern(&p)))
                                .or_default() += 1;
                            continue;
                        }
                        Difference::Lost(p) => {
                            let known = NOT_IN_THE_API
                                .iter()
                                .find(|(k, pat, _)| *k == kind && *pat == pattern(&p));
                            if let Some((k, pat, _)) = known {
                                *pruned.entry((k, pat)).or_default() += 1;
                                continue;
                            }
                            format!("{where_}: {kind} lost {p}")
                        }
                        Difference::Added(p) => format!("{where_}: {kind} added {p}"),
                        Difference::Changed {
                            pointer,
                            original,
                            roundtrip,
                        } => {
                            format!("{where_}: {kind} changed {pointer}: {original} -> {roundtrip}")
                        }
                    });
                }
            }
        }
    }

    println!(
        "corpus: {} ({files} manifest files, {} documents)",
        root.display(),
        documents.len()
    );
    for ((model, label, origin), tally) in &tallies {
        println!(
            "  {model:?} {label} [{origin:?}]: {} documents in {} files",
            tally.documents,
            tally.files.len()
        );
    }
    let csv_files: std::collections::BTreeSet<_> = tallies
        .iter()
        .filter(|((_, label, origin), _)| {
            label == "ClusterServiceVersion" && *origin != Origin::FbcBundleObject
        })
        .flat_map(|(_, t)| t.files.iter())
        .collect();
    let count = |pred: &dyn Fn(&(Model, String, Origin)) -> bool| -> usize {
        tallies
            .iter()
            .filter(|(k, _)| pred(k))
            .map(|(_, t)| t.documents)
            .sum()
    };
    let csv_docs = count(&|(_, l, _)| l == "ClusterServiceVersion");
    let crd_docs = count(&|(_, l, _)| l == "CustomResourceDefinition");
    let typed = count(&|(m, _, _)| *m != Model::Unmodelled);
    println!(
        "corpus: {} CSV files, {csv_docs} CSV documents, {crd_docs} CRDs (v1), {typed} typed documents round-tripped; \
         {} numbers re-encoded as Quantity strings; {skipped_non_k8s} non-Kubernetes documents (FBC, metadata) not typed",
        csv_files.len(),
        coerced
    );
    println!(
        "corpus: {foreign_csv_api_version} CSVs declared another apiVersion group and were read as {CSV_API_VERSION}"
    );
    for ((kind, pat), n) in &added_zero {
        println!(
            "corpus: absent field came back as its Go zero value (non-omitempty): {kind} {pat} x{n}"
        );
    }
    for ((kind, pat), n) in &pruned {
        println!("corpus: pruned as not in OLM's/Kubernetes' API: {kind} {pat} x{n}");
    }
    if !failures.is_empty() {
        for failure in &failures {
            println!("PROBLEM {failure}");
        }
        let shown: Vec<&String> = failures.iter().take(50).collect();
        panic!(
            "{} round-trip problems (first {}):\n{}",
            failures.len(),
            shown.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn a_field_outside_our_csv_type_is_reported_as_lost_with_its_pointer() {
    let doc = serde_json::json!({
        "apiVersion": CSV_API_VERSION, "kind": "ClusterServiceVersion", "metadata": {"name": "a.v1"},
        "spec": {"displayName": "A", "install": {"strategy": "deployment"}, "version": "1.0.0",
                 "customresourcedefinitions": {"owned": [{"name": "as.x.io", "version": "v1", "kind": "A", "bogus": true}]}}
    });
    let (model, back) = roundtrip(CSV_API_VERSION, "ClusterServiceVersion", &doc);
    assert_eq!(model, Model::Olm);
    let back = back.expect("modelled").expect("decodes");
    let (mut differences, mut coerced) = (Vec::new(), 0);
    compare(
        &normalize(&doc),
        &normalize(&back),
        "",
        &mut differences,
        &mut coerced,
    );
    assert_eq!(
        differences,
        [Difference::Lost(
            "/spec/customresourcedefinitions/owned/0/bogus".into()
        )]
    );
    assert_eq!(
        pattern("/spec/customresourcedefinitions/owned/0/bogus"),
        "/spec/customresourcedefinitions/owned/N/bogus"
    );
}
