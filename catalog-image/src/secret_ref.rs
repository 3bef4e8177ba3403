//! A Secret named on the command line (`--global-pull-secret NAMESPACE/NAME`). Pure.

/// A Secret named on the command line (`NAMESPACE/NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// Parses `NAMESPACE/NAME`.
pub fn parse_secret_ref(s: &str) -> Result<SecretRef, String> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(SecretRef {
                namespace: ns.to_string(),
                name: name.to_string(),
            })
        }
        _ => Err(format!("{s:?}: expected NAMESPACE/NAME")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::good("olm/pull-secret", Some(("olm", "pull-secret")))]
    #[case::no_namespace("pull-secret", None)]
    #[case::empty_name("olm/", None)]
    #[case::too_many("a/b/c", None)]
    fn secret_references_are_namespace_slash_name(
        #[case] text: &str,
        #[case] want: Option<(&str, &str)>,
    ) {
        let got = parse_secret_ref(text).ok();
        assert_eq!(
            got,
            want.map(|(n, m)| SecretRef {
                namespace: n.into(),
                name: m.into()
            })
        );
    }
}
