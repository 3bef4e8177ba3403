//! Names and label keys of the generated RBAC, computed exactly as OLM does: base62 of SHA-224 for the
//! group's ClusterRole names, hex FNV-64a (unpadded, Go's `strconv.FormatUint(h, 16)`) for the API hashes.

use sha2::{Digest, Sha224};

/// The three kinds of aggregate role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Suffix {
    Admin,
    Edit,
    View,
}

impl Suffix {
    pub const ALL: [Suffix; 3] = [Suffix::Admin, Suffix::Edit, Suffix::View];

    pub fn as_str(self) -> &'static str {
        match self {
            Suffix::Admin => "admin",
            Suffix::Edit => "edit",
            Suffix::View => "view",
        }
    }
}

/// Longest object name Kubernetes accepts.
const MAX_NAME: usize = 253;
const BASE62: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Go's `big.Int.SetBytes(b).Text(62)`: the big-endian bytes as a base-62 number.
pub fn base62(bytes: &[u8]) -> String {
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    if number.is_empty() {
        return "0".to_string();
    }
    let mut digits = Vec::new();
    while !number.is_empty() {
        let mut remainder: u32 = 0;
        let mut quotient = Vec::with_capacity(number.len());
        for byte in &number {
            let value = (remainder << 8) | u32::from(*byte);
            let q = value / 62;
            remainder = value % 62;
            if !(quotient.is_empty() && q == 0) {
                quotient.push(q as u8);
            }
        }
        digits.push(BASE62[remainder as usize]);
        number = quotient;
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// `olm.og.<name>.<suffix>-<base62(sha224("<ns>/<name>/<suffix>"))>`, the group name cut so the whole fits 253.
pub fn group_cluster_role(namespace: &str, name: &str, suffix: Suffix) -> String {
    let hash = base62(&Sha224::digest(
        format!("{namespace}/{name}/{}", suffix.as_str()).as_bytes(),
    ));
    let fixed = "olm.og.".len() + 1 + suffix.as_str().len() + 1 + hash.len();
    let room = MAX_NAME.saturating_sub(fixed);
    let cut = match name.char_indices().nth(room) {
        Some((end, _)) => &name[..end],
        None => name,
    };
    format!("olm.og.{cut}.{}-{hash}", suffix.as_str())
}

/// Hex FNV-64a of `Kind.version.group`, unpadded.
pub fn gvk_hash(api: &str) -> String {
    let hash = api.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:x}")
}

/// `olm.opgroup.permissions/aggregate-to-<gvkhash>-<suffix>`.
pub fn aggregation_label(api: &str, suffix: Suffix) -> String {
    format!(
        "olm.opgroup.permissions/aggregate-to-{}-{}",
        gvk_hash(api),
        suffix.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::zero_is_zero(&[0], "0")]
    #[case::sixty_one_is_the_last_digit(&[61], "Z")]
    #[case::sixty_two_carries(&[62], "10")]
    #[case::two_bytes_are_one_number(&[1, 0], "48")]
    #[case::leading_zero_bytes_do_not_count(&[0, 0, 62], "10")]
    fn base62_matches_gos_big_int_text(#[case] bytes: &[u8], #[case] expected: &str) {
        assert_eq!(base62(bytes), expected);
    }

    #[test]
    fn fnv64a_hashes_are_unpadded_hex() {
        assert_eq!(gvk_hash(""), "cbf29ce484222325");
        assert_eq!(gvk_hash("a"), "af63dc4c8601ec8c");
        assert_eq!(gvk_hash("foobar"), "85944171f73967e8");
        assert_eq!(
            aggregation_label("a", Suffix::View),
            "olm.opgroup.permissions/aggregate-to-af63dc4c8601ec8c-view"
        );
    }

    #[test]
    fn group_role_names_are_stable_distinct_and_bounded() {
        let admin = group_cluster_role("ns", "og", Suffix::Admin);
        assert!(admin.starts_with("olm.og.og.admin-"), "{admin}");
        assert_eq!(admin, group_cluster_role("ns", "og", Suffix::Admin));
        assert_ne!(admin, group_cluster_role("ns2", "og", Suffix::Admin));
        assert_ne!(admin, group_cluster_role("ns", "og", Suffix::View));
        let long = group_cluster_role("ns", &"x".repeat(400), Suffix::Edit);
        assert_eq!(long.len(), 253);
    }

    #[test]
    fn sha224_is_the_standard_one() {
        let digest = Sha224::digest(b"abc");
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"
        );
    }
}
