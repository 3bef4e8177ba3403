//! Version ranges as OLM writes them (`olm.skipRange`, `olm.package.required` `versionRange`): the one
//! parser of the workspace, used by catalog validation and by the resolver.
//!
//! The grammar is blang/semver v4's `ParseRange`, which the `semver` crate's `VersionReq` does not accept:
//! comparators separated by whitespace are ANDed, `||` separates ORed alternatives, a bare version means
//! exactly that version, operators are `=`, `==`, `!=`, `!`, `>`, `>=`, `<`, `<=`, and the minor or patch
//! part may be a wildcard (`1.2.x`, `1.x`, `1.x.x`). Comparison follows semver precedence and ignores build
//! metadata. As in blang, a version needs all three parts unless a wildcard stands for the missing ones
//! (`<1.0` and `>=0.12` are errors) and the major part cannot be a wildcard (`*` is an error).
//! Leniencies beyond blang, kept from the two parsers this one replaced: a leading `v` (`v0.1.0`, seen in
//! real catalogs), `X` and `*` as wildcards in the minor or patch part. Stricter than blang: `!=` with a wildcard is an error (blang
//! expands it to two ANDed bounds that no version meets).

use std::cmp::Ordering;
use std::fmt;

use semver::{BuildMetadata, Prerelease, Version};
use serde::{Deserialize, Serialize};

/// Why a range text could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("version range is empty")]
    Empty,
    #[error("empty alternative around `||` in version range")]
    EmptyAlternative,
    #[error("comparator `{0}` has an operator but no version")]
    MissingVersion(String),
    #[error("`{text}` is not a version: {reason}")]
    BadVersion { text: String, reason: String },
    #[error("wildcard `{0}` cannot be used with `!=`")]
    WildcardNotEqual(String),
}

/// A comparison operator of one comparator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "=")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }
}

/// One `<op><version>` test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparator {
    pub op: Op,
    pub version: Version,
}

impl Comparator {
    pub fn matches(&self, v: &Version) -> bool {
        let ord = precedence(v, &self.version);
        match self.op {
            Op::Eq => ord == Ordering::Equal,
            Op::Ne => ord != Ordering::Equal,
            Op::Gt => ord == Ordering::Greater,
            Op::Ge => ord != Ordering::Less,
            Op::Lt => ord == Ordering::Less,
            Op::Le => ord != Ordering::Greater,
        }
    }
}

/// A parsed range: OR over alternatives, each an AND of comparators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRange {
    /// The text it was parsed from, kept for messages.
    pub text: String,
    pub alternatives: Vec<Vec<Comparator>>,
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl VersionRange {
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(RangeError::Empty);
        }
        let mut alternatives = Vec::new();
        for alt in trimmed.split("||") {
            let tokens = tokens(alt);
            if tokens.is_empty() {
                return Err(RangeError::EmptyAlternative);
            }
            let mut all = Vec::new();
            for tok in tokens {
                all.extend(parse_comparator(&tok)?);
            }
            alternatives.push(all);
        }
        Ok(Self {
            text: trimmed.to_owned(),
            alternatives,
        })
    }

    pub fn contains(&self, v: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|c| c.matches(v)))
    }
}

/// Semver precedence without build metadata (as blang/semver compares).
pub fn precedence(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| a.pre.cmp(&b.pre))
}

/// Split one alternative into comparator tokens, joining an operator written apart from its version (`>= 1.0`).
fn tokens(alt: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending_op: Option<String> = None;
    for word in alt.split_whitespace() {
        let is_bare_op =
            !word.is_empty() && word.chars().all(|c| matches!(c, '<' | '>' | '=' | '!'));
        match (pending_op.take(), is_bare_op) {
            (Some(op), false) => out.push(format!("{op}{word}")),
            (Some(op), true) => {
                out.push(op);
                pending_op = Some(word.to_owned());
            }
            (None, true) => pending_op = Some(word.to_owned()),
            (None, false) => out.push(word.to_owned()),
        }
    }
    if let Some(op) = pending_op {
        out.push(op);
    }
    out
}

fn parse_comparator(tok: &str) -> Result<Vec<Comparator>, RangeError> {
    let (op, rest) = split_op(tok);
    if rest.is_empty() {
        return Err(RangeError::MissingVersion(tok.to_owned()));
    }
    let partial = parse_partial(rest)?;
    let Some(wild_at) = partial.wildcard_at else {
        let v = partial.version();
        return Ok(vec![Comparator {
            op: op.unwrap_or(Op::Eq),
            version: v,
        }]);
    };
    // A wildcard: the matched set is [low, high) where high bumps the last fixed part.
    let low = partial.version();
    let high = partial.bump(wild_at);
    let c = |op, version| Comparator { op, version };
    Ok(match op.unwrap_or(Op::Eq) {
        Op::Eq => vec![c(Op::Ge, low), c(Op::Lt, high)],
        Op::Ne => return Err(RangeError::WildcardNotEqual(tok.to_owned())),
        Op::Ge => vec![c(Op::Ge, low)],
        Op::Lt => vec![c(Op::Lt, low)],
        Op::Gt => vec![c(Op::Ge, high)],
        Op::Le => vec![c(Op::Lt, high)],
    })
}

fn split_op(tok: &str) -> (Option<Op>, &str) {
    for (prefix, op) in [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
        ("!", Op::Ne),
    ] {
        if let Some(rest) = tok.strip_prefix(prefix) {
            return (Some(op), rest.trim_start());
        }
    }
    (None, tok)
}

struct Partial {
    parts: [u64; 3],
    /// Index of the first wildcard (1 for minor, 2 for patch), if any; later parts are wildcards too.
    wildcard_at: Option<usize>,
    pre: Prerelease,
}

impl Partial {
    fn version(&self) -> Version {
        Version {
            major: self.parts[0],
            minor: self.parts[1],
            patch: self.parts[2],
            pre: self.pre.clone(),
            build: BuildMetadata::EMPTY,
        }
    }

    /// The first version above every version matching the wildcard.
    fn bump(&self, wild_at: usize) -> Version {
        if wild_at <= 1 {
            Version::new(self.parts[0].saturating_add(1), 0, 0)
        } else {
            Version::new(self.parts[0], self.parts[1].saturating_add(1), 0)
        }
    }
}

fn parse_partial(text: &str) -> Result<Partial, RangeError> {
    let bad = |reason: &str| RangeError::BadVersion {
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let body = text.strip_prefix('v').unwrap_or(text);
    // Build metadata plays no part in precedence, so it is dropped.
    let core = body.split_once('+').map_or(body, |(core, _build)| core);
    let (numbers, pre) = match core.split_once('-') {
        Some((n, p)) => (n, Some(p)),
        None => (core, None),
    };
    let fields: Vec<&str> = numbers.split('.').collect();
    if fields.len() > 3 {
        return Err(bad("more than three numeric parts"));
    }
    let mut parts = [0u64; 3];
    let mut wildcard_at = None;
    for (i, part) in parts.iter_mut().enumerate() {
        match fields.get(i) {
            None if wildcard_at.is_some() => {}
            None => {
                return Err(bad(
                    "a version needs major.minor.patch (or a wildcard such as `1.x`)",
                ));
            }
            Some(f) if matches!(*f, "x" | "X" | "*") => {
                if i == 0 {
                    return Err(bad("the major version cannot be a wildcard"));
                }
                wildcard_at.get_or_insert(i);
            }
            Some(f) => {
                if wildcard_at.is_some() {
                    return Err(bad("a number follows a wildcard"));
                }
                if f.is_empty() || !f.chars().all(|c| c.is_ascii_digit()) {
                    return Err(bad(&format!("`{f}` is not a number")));
                }
                if f.len() > 1 && f.starts_with('0') {
                    return Err(bad(&format!("`{f}` has a leading zero")));
                }
                *part = f.parse().map_err(|_| bad(&format!("`{f}` is too large")))?;
            }
        }
    }
    let pre = match pre {
        None => Prerelease::EMPTY,
        Some(p) => {
            if wildcard_at.is_some() {
                return Err(bad("a pre-release needs a full major.minor.patch"));
            }
            Prerelease::new(p).map_err(|e| bad(&e.to_string()))?
        }
    };
    Ok(Partial {
        parts,
        wildcard_at,
        pre,
    })
}

impl fmt::Display for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op.as_str(), self.version)
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "test inputs are literals; a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[rstest]
    #[case::and_of_two_comparators_includes_the_lower_bound(">=4.1.0 <4.2.0", "4.1.0", true)]
    #[case::and_of_two_comparators_excludes_the_upper_bound(">=4.1.0 <4.2.0", "4.2.0", false)]
    #[case::a_version_inside_a_closed_range_matches(">=1.0.0 <2.0.0", "1.5.0", true)]
    #[case::the_upper_bound_is_exclusive(">=1.0.0 <2.0.0", "2.0.0", false)]
    #[case::a_single_upper_bound_includes_zero("<1.0.0", "0.0.0", true)]
    #[case::a_single_upper_bound_excludes_itself("<1.0.0", "1.0.0", false)]
    #[case::a_bare_version_means_exactly_that_version("1.2.3", "1.2.3", true)]
    #[case::a_bare_version_excludes_others("1.2.3", "1.2.4", false)]
    #[case::a_plain_version_is_equality("0.9.2", "0.9.2", true)]
    #[case::or_takes_either_alternative("<1.0.0 || >=2.0.0", "2.1.0", true)]
    #[case::or_excludes_the_gap("<1.0.0 || >=2.0.0", "1.5.0", false)]
    #[case::either_side_of_an_or_matches("<0.6.0 || >=1.0.0", "1.2.0", true)]
    #[case::the_gap_between_or_groups_does_not_match("<0.6.0 || >=1.0.0", "0.7.0", false)]
    #[case::greater_than_a_zero_prerelease_includes_the_release(">1.0.0-0", "1.0.0", true)]
    #[case::greater_than_a_zero_prerelease_includes_later_prereleases(
        ">1.0.0-0",
        "1.0.0-alpha",
        true
    )]
    #[case::prereleases_sort_below_their_release("<1.0.0", "1.0.0-rc.1", true)]
    #[case::a_prerelease_of_the_upper_bound_is_inside(">=4.8.0 <4.9.0", "4.9.0-rc.1", true)]
    #[case::wildcard_lower_bound_is_the_minor_start(">=2.1.x <2.2.1", "2.1.0", true)]
    #[case::wildcard_lower_bound_excludes_the_previous_minor(">=2.1.x <2.2.1", "2.0.9", false)]
    #[case::bare_wildcard_covers_the_minor("1.2.x", "1.2.9", true)]
    #[case::bare_wildcard_stops_at_the_next_minor("1.2.x", "1.3.0", false)]
    #[case::a_minor_wildcard_covers_the_major("1.x", "1.9.3", true)]
    #[case::a_minor_wildcard_excludes_the_next_major("1.x", "2.0.0", false)]
    #[case::greater_than_a_major_wildcard_starts_at_the_next_major(">1.x", "2.0.0", true)]
    #[case::greater_than_a_major_wildcard_excludes_the_major(">1.x", "1.9.0", false)]
    #[case::operator_apart_from_its_version_is_joined(">= 1.0.0 < 2.0.0", "1.5.0", true)]
    #[case::operators_apart_from_their_versions_are_joined(">= 0.1.0 < 0.3.0", "0.2.0", true)]
    #[case::not_equal_excludes_one_version(">=1.0.0 !1.2.0", "1.2.0", false)]
    #[case::not_equal_written_with_bang_equals_excludes_it("!=1.0.0", "1.0.0", false)]
    #[case::build_metadata_is_ignored("1.2.3", "1.2.3+build.7", true)]
    #[case::a_leading_v_is_tolerated("v0.1.0", "0.1.0", true)]
    fn ranges_match_as_olm_reads_them(
        #[case] range: &str,
        #[case] version: &str,
        #[case] expected: bool,
    ) {
        let r = VersionRange::parse(range).unwrap();
        assert_eq!(
            r.contains(&v(version)),
            expected,
            "{range} contains {version}"
        );
    }

    fn bad_version(text: &str, reason: &str) -> RangeError {
        RangeError::BadVersion {
            text: text.into(),
            reason: reason.into(),
        }
    }

    const NEEDS_THREE_PARTS: &str =
        "a version needs major.minor.patch (or a wildcard such as `1.x`)";

    #[rstest]
    #[case::empty_text_is_an_error("", RangeError::Empty)]
    #[case::blank_text_is_an_error("   ", RangeError::Empty)]
    #[case::a_dangling_or_is_an_error(">=1.0.0 ||", RangeError::EmptyAlternative)]
    #[case::an_operator_without_version_is_an_error(">=", RangeError::MissingVersion(">=".into()))]
    #[case::words_are_not_versions("latest", bad_version("latest", "`latest` is not a number"))]
    #[case::garbage_is_not_a_version(
        "not-a-range",
        bad_version("not-a-range", "`not` is not a number")
    )]
    #[case::four_parts_are_not_a_version(
        "1.2.3.4",
        bad_version("1.2.3.4", "more than three numeric parts")
    )]
    #[case::a_two_part_version_is_an_error("<1.0", bad_version("1.0", NEEDS_THREE_PARTS))]
    #[case::a_two_part_lower_bound_is_an_error(">=0.12", bad_version("0.12", NEEDS_THREE_PARTS))]
    #[case::a_wildcard_major_is_an_error(
        "*",
        bad_version("*", "the major version cannot be a wildcard")
    )]
    #[case::not_equal_to_a_wildcard_is_an_error("!=1.x", RangeError::WildcardNotEqual("!=1.x".into()))]
    fn bad_ranges_give_clear_errors(#[case] range: &str, #[case] expected: RangeError) {
        assert_eq!(VersionRange::parse(range), Err(expected));
    }
}
