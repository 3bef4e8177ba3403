//! YAML streams read as Go's decoders read them (the last of repeated keys, `0755` octal, integral floats as
//! integers), within a budget that stops hostile input. A leaf: `documents` and `property` both read YAML here.

use serde_json::Value;

/// What one YAML stream may cost. Catalog and bundle images are untrusted: the budget stops alias bombs, nesting
/// that would exhaust the stack and streams of millions of nodes, with room for what real catalogs hold (the
/// largest file of the shared corpus, a 745-bundle catalog, and CRDs of several MiB load well within it):
/// nesting 256 deep (real CRDs stay under 60), 4 million nodes and 16 million events (a 64 MiB YAML catalog),
/// 256 MiB of scalar text, 100,000 documents, and serde-saphyr's default alias limits, which refuse an alias
/// expanding to more than ten times the anchors' size.
pub fn budget() -> serde_saphyr::Budget {
    let mut b = serde_saphyr::Budget::default();
    b.max_depth = 256;
    b.max_nodes = 4_000_000;
    b.max_events = 16_000_000;
    b.max_total_scalar_bytes = 256 << 20;
    b.max_documents = 100_000;
    b
}

/// Parses a YAML stream into JSON values (empty documents are skipped).
pub fn parse_yaml_documents(text: &str) -> Result<Vec<Value>, serde_saphyr::Error> {
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget());
    // Real bundles contain CRDs with repeated keys; Go's decoders keep the last one.
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    // Go's YAML (yaml.v2 under sigs.k8s.io/yaml) reads `0755` as octal, as YAML 1.1 did.
    options.legacy_octal_numbers = true;
    let mut values = serde_saphyr::from_multiple_with_options::<Value>(text, options)?;
    values.iter_mut().for_each(integral_floats_as_integers);
    Ok(values)
}

/// sigs.k8s.io/yaml writes a YAML float through Go's JSON encoder, which prints `1.0` and `1e3` as `1` and
/// `1000`: so a Go integer field accepts them (`replicas: 1.0`). Floats with no fraction become integers here.
fn integral_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                #[expect(
                    clippy::cast_possible_truncation,
                    reason = "an integral value below 2^53 is exact as i64"
                )]
                let i = f as i64;
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}
