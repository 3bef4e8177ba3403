//! Reading files into JSON documents: YAML streams (`---`) or JSON streams (concatenated
//! objects), told apart by the first non-blank character, as opm does.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::LoadError;
use crate::model::Origin;
use crate::yaml::parse_yaml_documents;

/// One parsed document and where it came from.
#[derive(Debug, Clone)]
pub struct Document {
    pub origin: Origin,
    pub value: Value,
}

/// Parses a JSON stream (one or more concatenated values).
pub fn parse_json_documents(text: &str) -> Result<Vec<Value>, serde_json::Error> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect()
}

/// Parses text as a JSON stream if it starts with `{` or `[`, else as YAML.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        parse_json_documents(trimmed).map_err(|e| e.to_string())
    } else {
        parse_yaml_documents(text).map_err(|e| e.to_string())
    }
}

/// Reads `path` into documents, each tagged with its origin (1-based document index).
pub fn read_documents(path: &Path) -> Result<Vec<Document>, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let values = parse_documents(&text).map_err(|message| LoadError::Parse {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(with_origins(path, values))
}

/// The first document of a bundle file, as operator-registry reads it: it decodes one document per file of a
/// bundle's `manifests/` and `metadata/` and of a package-manifest folder, and only warns about the rest. Reading
/// them all would expose CRDs and APIs OLM never sees (a real 2021 litmuschaos bundle has three CRDs in one file).
#[derive(Debug, Clone)]
pub struct FirstDocument {
    pub document: Option<Document>,
    /// A warning naming the file when it holds more documents than the first.
    pub note: Option<String>,
}

/// Reads `path` keeping only its first (non-empty) document; see [`FirstDocument`].
pub fn read_first_document(path: &Path) -> Result<FirstDocument, LoadError> {
    let mut documents = read_documents(path)?.into_iter();
    let document = documents.next();
    let ignored = documents.count();
    let note = (ignored > 0).then(|| {
        format!(
            "{}: {ignored} more document(s) after the first ignored (OLM reads one document per bundle file); \
             put each object in a file of its own",
            path.display()
        )
    });
    Ok(FirstDocument { document, note })
}

/// Tags the documents of one file with their origins (1-based index), leaving out empty (null) ones.
pub fn with_origins(path: &Path, values: Vec<Value>) -> Vec<Document> {
    let file: Arc<Path> = Arc::from(path);
    values
        .into_iter()
        .filter(|v| !v.is_null())
        .enumerate()
        .map(|(i, value)| Document {
            origin: Origin {
                file: file.clone(),
                doc: i + 1,
            },
            value,
        })
        .collect()
}

/// Applies `f` to every item on up to `available_parallelism` threads; results keep input order.
/// Catalog loading is CPU-bound YAML/JSON parsing, so this uses the cores a machine has.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = Vec::with_capacity(items.len());
    slots.resize_with(items.len(), || None);
    let slots = std::sync::Mutex::new(slots);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    if let Ok(mut s) = slots.lock() {
                        s[i] = Some(r);
                    }
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

/// True for file names a catalog walk should parse (YAML or JSON).
pub fn is_manifest_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml") | Some("yml") | Some("json")
    )
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::yaml_stream_with_separators("a: 1\n---\nb: 2\n---\n", 2)]
    #[case::json_stream_of_concatenated_objects("{\"a\":1}\n{\"b\":2}\n{\"c\":3}", 3)]
    #[case::json_after_leading_blank_lines("\n\n  {\"a\":1}", 1)]
    #[case::empty_yaml_file("", 0)]
    fn streams_split_into_documents(#[case] text: &str, #[case] count: usize) {
        assert_eq!(parse_documents(text).unwrap().len(), count);
    }

    #[rstest]
    #[case::one_document("kind: A\n", Some("A"), false)]
    #[case::three_documents_keep_the_first(
        "kind: A\n---\nkind: B\n---\nkind: C\n",
        Some("A"),
        true
    )]
    #[case::a_leading_empty_document_is_not_the_first("---\n---\nkind: B\n", Some("B"), false)]
    #[case::an_empty_file("", None, false)]
    fn only_the_first_document_of_a_bundle_file_is_read(
        #[case] text: &str,
        #[case] kind: Option<&str>,
        #[case] warned: bool,
    ) {
        let dir = std::env::temp_dir().join(format!(
            "catalog-first-doc-{}-{}",
            std::process::id(),
            text.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("crds.yaml");
        std::fs::write(&path, text).unwrap();
        let first = read_first_document(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let got = first
            .document
            .map(|d| d.value["kind"].as_str().unwrap().to_owned());
        assert_eq!(got.as_deref(), kind);
        assert_eq!(first.note.is_some(), warned, "{:?}", first.note);
    }

    // Scalars read as Go's YAML reads them (yaml.v2, YAML 1.1), then written as Go's JSON writes them.
    #[rstest]
    #[case::yes_is_true("a: yes", serde_json::json!(true))]
    #[case::off_is_false("a: off", serde_json::json!(false))]
    #[case::leading_zero_is_octal("a: 0755", serde_json::json!(493))]
    #[case::hex("a: 0x1F", serde_json::json!(31))]
    #[case::underscores("a: 1_000", serde_json::json!(1000))]
    #[case::integral_float("a: 1.0", serde_json::json!(1))]
    #[case::exponent("a: 1e3", serde_json::json!(1000))]
    #[case::fraction("a: 1.5", serde_json::json!(1.5))]
    #[case::timestamp_stays_text("a: 2021-01-01T00:00:00Z", serde_json::json!("2021-01-01T00:00:00Z"))]
    #[case::empty_is_null("a:", serde_json::Value::Null)]
    #[case::tilde_is_null("a: ~", serde_json::Value::Null)]
    #[case::quoted_yes_is_text("a: 'yes'", serde_json::json!("yes"))]
    fn yaml_scalars_read_as_go_reads_them(#[case] text: &str, #[case] expected: Value) {
        let docs = parse_yaml_documents(text).unwrap();
        assert_eq!(docs[0]["a"], expected, "{text}");
    }

    #[test]
    fn json_numbers_are_left_as_written() {
        let docs = parse_documents("{\"a\": 1.0}").unwrap();
        assert!(docs[0]["a"].is_f64());
    }

    // Hostile YAML is refused with a message, never a crash or an OOM: a billion-laughs alias bomb and nesting
    // deeper than any real manifest.
    #[rstest]
    #[case::alias_bomb(&{
        let mut y = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            y.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n", p = i - 1));
        }
        y
    })]
    #[case::deep_nesting(&format!("{}x{}", "[".repeat(300), "]".repeat(300)))]
    fn hostile_yaml_is_refused(#[case] text: &str) {
        let e = parse_documents(text).expect_err("refused");
        assert!(!e.is_empty());
    }

    #[rstest]
    #[case::broken_json("{\"a\": ")]
    #[case::broken_yaml("a: [1, 2\nb: c")]
    fn broken_streams_are_errors(#[case] text: &str) {
        assert!(parse_documents(text).is_err());
    }
}
