//! Semver ranges in the blang/semver syntax OLM uses for `olm.skipRange` and
//! `olm.package.required`: space-separated comparators are ANDed, `||` ORs groups,
//! and `x` wildcards expand (`1.x` = `>=1.0.0 <2.0.0`). Pre-releases compare as plain semver.

use std::fmt;

use semver::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: Version,
}

impl Comparator {
    fn matches(&self, v: &Version) -> bool {
        match self.op {
            Op::Eq => v == &self.version,
            Op::Ne => v != &self.version,
            Op::Gt => v > &self.version,
            Op::Ge => v >= &self.version,
            Op::Lt => v < &self.version,
            Op::Le => v <= &self.version,
        }
    }
}

/// A parsed range: a disjunction of conjunctions of comparators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    any_of: Vec<Vec<Comparator>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("range is empty")]
    Empty,
    #[error("{part:?} has an operator but no version")]
    DanglingOperator { part: String },
    #[error("{part:?} is not a valid version: {message}")]
    BadVersion { part: String, message: String },
    #[error("{part:?}: wildcard ranges cannot use !=")]
    WildcardNotEqual { part: String },
}

impl Range {
    pub fn parse(s: &str) -> Result<Range, RangeError> {
        if s.trim().is_empty() {
            return Err(RangeError::Empty);
        }
        let mut any_of = Vec::new();
        for group in s.split("||") {
            let mut all_of = Vec::new();
            for token in join_operators(group)? {
                all_of.extend(parse_comparator(&token)?);
            }
            if all_of.is_empty() {
                return Err(RangeError::Empty);
            }
            any_of.push(all_of);
        }
        Ok(Range { any_of })
    }

    pub fn matches(&self, v: &Version) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|c| c.matches(v)))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups: Vec<String> = self
            .any_of
            .iter()
            .map(|all| {
                all.iter()
                    .map(|c| format!("{}{}", op_str(c.op), c.version))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        f.write_str(&groups.join(" || "))
    }
}

fn op_str(op: Op) -> &'static str {
    match op {
        Op::Eq => "=",
        Op::Ne => "!=",
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::Lt => "<",
        Op::Le => "<=",
    }
}

/// Splits a group on whitespace, gluing a bare operator (`>= 1.0.0`) to the next token.
fn join_operators(group: &str) -> Result<Vec<String>, RangeError> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for tok in group.split_whitespace() {
        match pending.take() {
            Some(op) => out.push(format!("{op}{tok}")),
            None if tok.chars().all(|c| "<>=!".contains(c)) => pending = Some(tok.to_string()),
            None => out.push(tok.to_string()),
        }
    }
    if let Some(op) = pending {
        return Err(RangeError::DanglingOperator { part: op });
    }
    Ok(out)
}

fn split_op(token: &str) -> (Op, &str) {
    for (prefix, op) in [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("!=", Op::Ne),
        ("==", Op::Eq),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ] {
        if let Some(rest) = token.strip_prefix(prefix) {
            return (op, rest);
        }
    }
    (Op::Eq, token)
}

fn parse_comparator(token: &str) -> Result<Vec<Comparator>, RangeError> {
    let (op, raw) = split_op(token);
    // Tolerate a leading `v` (`v0.1.0`), as real catalogs use it.
    let raw = raw.strip_prefix('v').unwrap_or(raw);
    let bad = |message: String| RangeError::BadVersion {
        part: token.to_string(),
        message,
    };
    if raw.is_empty() {
        return Err(RangeError::DanglingOperator {
            part: token.to_string(),
        });
    }
    let parts: Vec<&str> = raw.splitn(3, '.').collect();
    let is_wild = |p: &str| p == "x" || p == "X" || p == "*";
    if parts.iter().any(|p| is_wild(p)) {
        // Expand wildcards the way blang does.
        let major: u64 = parts[0].parse().map_err(|_| bad("wildcard major".into()))?;
        let minor_wild = parts.len() < 2 || is_wild(parts[1]);
        let minor: u64 = if minor_wild {
            0
        } else {
            parts[1].parse().map_err(|_| bad("minor".into()))?
        };
        let low = Version::new(major, minor, 0);
        let high = if minor_wild {
            Version::new(major + 1, 0, 0)
        } else {
            Version::new(major, minor + 1, 0)
        };
        let c = |op, version| Comparator { op, version };
        return match op {
            Op::Eq => Ok(vec![c(Op::Ge, low), c(Op::Lt, high)]),
            Op::Ne => Err(RangeError::WildcardNotEqual {
                part: token.to_string(),
            }),
            Op::Gt | Op::Le => Ok(vec![c(if op == Op::Gt { Op::Ge } else { Op::Lt }, high)]),
            Op::Ge | Op::Lt => Ok(vec![c(op, low)]),
        };
    }
    let version = Version::parse(raw).map_err(|e| bad(e.to_string()))?;
    Ok(vec![Comparator { op, version }])
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
    #[case::version_inside_a_closed_range(">=1.0.0 <2.0.0", "1.5.0", true)]
    #[case::upper_bound_is_exclusive(">=1.0.0 <2.0.0", "2.0.0", false)]
    #[case::operator_separated_by_a_space(">= 0.1.0 < 0.3.0", "0.2.0", true)]
    #[case::either_side_of_an_or("<0.6.0 || >=1.0.0", "1.2.0", true)]
    #[case::gap_between_or_groups("<0.6.0 || >=1.0.0", "0.7.0", false)]
    #[case::prerelease_below_release(">=4.8.0 <4.9.0", "4.9.0-rc.1", true)]
    #[case::wildcard_minor("1.x", "1.9.3", true)]
    #[case::wildcard_excludes_next_major("1.x", "2.0.0", false)]
    #[case::plain_version_is_equality("0.9.2", "0.9.2", true)]
    #[case::not_equal("!=1.0.0", "1.0.0", false)]
    #[case::leading_v_is_tolerated("v0.1.0", "0.1.0", true)]
    fn ranges_match_like_blang(#[case] range: &str, #[case] v: &str, #[case] want: bool) {
        let r = Range::parse(range).unwrap();
        assert_eq!(
            r.matches(&Version::parse(v).unwrap()),
            want,
            "{range} vs {v}"
        );
    }

    #[rstest]
    #[case::empty_string("")]
    #[case::garbage("not-a-range")]
    #[case::dangling_operator(">=")]
    #[case::two_part_version("<1.0")]
    fn invalid_ranges_are_rejected(#[case] range: &str) {
        assert!(Range::parse(range).is_err(), "{range} should fail");
    }
}
