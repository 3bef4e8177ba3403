//! Order of the entries of one channel: the replacement chain walked from the head.
//!
//! The head is the entry nobody replaces. Entries named in any `skips` of the channel are left out
//! (they are never chosen). OLM requires exactly one head and no cycle; when that fails we still
//! return an order (head candidates by descending version, then unreached entries) and say what is wrong.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::model::BundleEntry;
use crate::range::precedence;

/// What is wrong with a channel's graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "problem", rename_all = "camelCase")]
pub enum ChannelError {
    #[error("channel {channel} of package {package} has {} heads ({}); exactly one is required", heads.len(), heads.join(", "))]
    ManyHeads {
        package: String,
        channel: String,
        heads: Vec<String>,
    },
    #[error("channel {channel} of package {package} has no head: its replaces chain is a cycle")]
    Cycle { package: String, channel: String },
}

/// The entries of one channel, head first.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelOrder {
    /// Indices into the slice given to [`order`], head first; skipped entries are absent.
    pub order: Vec<usize>,
    /// Indices of entries left out because another entry skips them.
    pub skipped: Vec<usize>,
    pub error: Option<ChannelError>,
}

/// Order `entries` (all of one package and channel) head first.
pub fn order(entries: &[&BundleEntry]) -> ChannelOrder {
    let skipped_names: HashSet<&str> = entries
        .iter()
        .flat_map(|e| e.skips.iter().map(String::as_str))
        .collect();
    // A name listed twice is one entry (the first); a registry would not serve both.
    let mut names_seen = HashSet::new();
    let unique: Vec<usize> = (0..entries.len())
        .filter(|&i| names_seen.insert(entries[i].name.as_str()))
        .collect();
    let (kept, skipped): (Vec<usize>, Vec<usize>) = unique
        .into_iter()
        .partition(|&i| !skipped_names.contains(entries[i].name.as_str()));
    let by_name: HashMap<&str, usize> = kept
        .iter()
        .map(|&i| (entries[i].name.as_str(), i))
        .collect();
    let replaced: HashSet<&str> = kept
        .iter()
        .filter_map(|&i| entries[i].replaces.as_deref())
        .collect();
    let mut heads: Vec<usize> = kept
        .iter()
        .copied()
        .filter(|&i| !replaced.contains(entries[i].name.as_str()))
        .collect();
    heads.sort_by(|&a, &b| {
        precedence(&entries[b].version, &entries[a].version)
            .then_with(|| entries[a].name.cmp(&entries[b].name))
    });

    let (package, channel) = entries
        .first()
        .map(|e| (e.package.clone(), e.channel.clone()))
        .unwrap_or_default();
    let error = match heads.len() {
        0 if !kept.is_empty() => Some(ChannelError::Cycle { package, channel }),
        0 | 1 => None,
        _ => Some(ChannelError::ManyHeads {
            package,
            channel,
            heads: heads.iter().map(|&i| entries[i].name.clone()).collect(),
        }),
    };

    let mut seen: HashSet<usize> = HashSet::new();
    let mut out = Vec::with_capacity(kept.len());
    for &head in &heads {
        let mut cur = Some(head);
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            out.push(i);
            cur = entries[i]
                .replaces
                .as_deref()
                .and_then(|r| by_name.get(r).copied());
        }
    }
    let mut rest: Vec<usize> = kept.iter().copied().filter(|i| !seen.contains(i)).collect();
    rest.sort_by(|&a, &b| {
        precedence(&entries[b].version, &entries[a].version)
            .then_with(|| entries[a].name.cmp(&entries[b].name))
    });
    out.extend(rest);
    ChannelOrder {
        order: out,
        skipped,
        error,
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
    use semver::Version;

    fn e(name: &str, version: &str, replaces: Option<&str>, skips: &[&str]) -> BundleEntry {
        BundleEntry {
            name: name.into(),
            package: "a".into(),
            channel: "alpha".into(),
            version: Version::parse(version).unwrap(),
            replaces: replaces.map(Into::into),
            skips: skips.iter().map(|s| (*s).into()).collect(),
            skip_range: None,
            provided_apis: vec![],
            required_apis: vec![],
            properties: vec![],
            bundle_path: String::new(),
            deprecated: false,
        }
    }

    fn names(entries: &[BundleEntry], idx: &[usize]) -> Vec<String> {
        idx.iter().map(|&i| entries[i].name.clone()).collect()
    }

    #[rstest]
    #[case::a_linear_chain_is_walked_from_the_head(
        vec![e("a.v1", "1.0.0", None, &[]), e("a.v3", "3.0.0", Some("a.v2"), &[]), e("a.v2", "2.0.0", Some("a.v1"), &[])],
        vec!["a.v3", "a.v2", "a.v1"], vec![], None)]
    #[case::a_skipped_entry_is_left_out(
        vec![e("a.v1", "1.0.0", None, &[]), e("a.v2", "2.0.0", Some("a.v1"), &[]), e("a.v3", "3.0.0", Some("a.v1"), &["a.v2"])],
        vec!["a.v3", "a.v1"], vec!["a.v2"], None)]
    #[case::two_heads_are_reported(
        vec![e("a.v1", "1.0.0", None, &[]), e("a.v2", "2.0.0", Some("a.v1"), &[]), e("b.v2", "2.1.0", Some("a.v1"), &[])],
        vec!["b.v2", "a.v1", "a.v2"], vec![],
        Some(ChannelError::ManyHeads { package: "a".into(), channel: "alpha".into(), heads: vec!["b.v2".into(), "a.v2".into()] }))]
    #[case::a_cycle_is_reported(
        vec![e("a.v1", "1.0.0", Some("a.v2"), &[]), e("a.v2", "2.0.0", Some("a.v1"), &[])],
        vec!["a.v2", "a.v1"], vec![], Some(ChannelError::Cycle { package: "a".into(), channel: "alpha".into() }))]
    #[case::a_tail_replacing_a_missing_bundle_is_fine(
        vec![e("a.v2", "2.0.0", Some("a.v1"), &[])], vec!["a.v2"], vec![], None)]
    fn channels_are_ordered_head_first(
        #[case] entries: Vec<BundleEntry>,
        #[case] expected: Vec<&str>,
        #[case] expected_skipped: Vec<&str>,
        #[case] expected_error: Option<ChannelError>,
    ) {
        let refs: Vec<&BundleEntry> = entries.iter().collect();
        let o = order(&refs);
        assert_eq!(names(&entries, &o.order), expected);
        assert_eq!(names(&entries, &o.skipped), expected_skipped);
        assert_eq!(o.error, expected_error);
    }
}
