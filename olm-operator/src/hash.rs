//! Stable short hashes of rendered objects (deployment specs, permission rules, long names): FNV-1a 64 over
//! the JSON serialization, which is deterministic for our types (struct field order, sorted maps).

use serde::Serialize;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`.
pub fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME)
    })
}

/// Hex FNV-1a 64 of the JSON of `value` (16 characters, valid as a label value).
pub fn of_json<T: Serialize>(value: &T) -> String {
    // Serializing our own k8s-openapi/serde types to a Vec cannot fail (no non-string map keys); an error
    // would only hash as the empty input, which still changes whenever the value does not.
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    format!("{:016x}", fnv64(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv64_matches_the_published_test_vectors() {
        assert_eq!(fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn equal_values_hash_equal_and_different_values_differ() {
        assert_eq!(of_json(&vec!["a", "b"]), of_json(&vec!["a", "b"]));
        assert_ne!(of_json(&vec!["a", "b"]), of_json(&vec!["b", "a"]));
        assert_eq!(of_json(&1).len(), 16);
    }
}
