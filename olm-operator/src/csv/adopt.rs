//! Taking over Deployments another OLM installed (issue 17: replacing OLM v0 in place). OLM v0 labels a
//! Deployment `olm.deployment-spec-hash` with its own hash of the spec (FNV-32 printed through
//! `rand.SafeEncodeString`, at most 10 characters), ours is 16 hex digits of FNV-64, so an unchanged operator
//! always looks changed after a takeover. Rewriting it would roll out a new ReplicaSet for nothing, so a
//! Deployment whose hash is not ours is adopted as it stands when its live spec already holds everything we
//! want (what the apiserver defaulted is extra, not a difference). Pure.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::Value;

/// Whether a spec-hash label value is one we write (16 lowercase hex digits).
pub fn is_our_hash(hash: &str) -> bool {
    hash.len() == 16
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether the live Deployment's spec holds every field of the wanted one with the same value.
pub fn spec_holds(want: &Deployment, have: &Deployment) -> bool {
    let (Ok(want), Ok(have)) = (
        serde_json::to_value(&want.spec),
        serde_json::to_value(&have.spec),
    ) else {
        return false;
    };
    holds(&want, &have)
}

/// `want` ⊆ `have`: objects field by field (fields only `have` has are defaults), lists item by item with the
/// same length, numbers by value, everything else equal.
fn holds(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Null, _) => true,
        (Value::Object(w), Value::Object(h)) => w
            .iter()
            .all(|(k, wv)| wv.is_null() || h.get(k).is_some_and(|hv| holds(wv, hv))),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(a, b)| holds(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::ours("0123456789abcdef", true)]
    #[case::olm_v0_safe_encoded("7b5f7d4b9c", false)]
    #[case::upper_case_hex("0123456789ABCDEF", false)]
    #[case::too_short("0123456789abcde", false)]
    fn our_hashes_are_told_apart(#[case] hash: &str, #[case] ours: bool) {
        assert_eq!(is_our_hash(hash), ours);
    }

    #[rstest]
    #[case::equal(json!({"a": 1, "b": [{"c": "x"}]}), json!({"a": 1, "b": [{"c": "x"}]}), true)]
    #[case::defaults_added_by_the_apiserver(json!({"b": [{"c": "x"}]}), json!({"a": 1, "b": [{"c": "x", "d": "default"}]}), true)]
    #[case::a_changed_value(json!({"b": [{"c": "x"}]}), json!({"b": [{"c": "y"}]}), false)]
    #[case::a_missing_field(json!({"a": 1}), json!({"b": 1}), false)]
    #[case::an_extra_list_item(json!({"b": [1]}), json!({"b": [1, 2]}), false)]
    #[case::integers_and_floats_by_value(json!({"a": 1}), json!({"a": 1.0}), true)]
    fn a_spec_holds_what_we_want(#[case] want: Value, #[case] have: Value, #[case] expected: bool) {
        assert_eq!(holds(&want, &have), expected);
    }
}
