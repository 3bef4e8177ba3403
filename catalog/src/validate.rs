//! Semantic validation of a catalog, following opm's model rules: package names and default
//! channels, channel heads, replaces chains (cycles, stranded entries), skipRange and version
//! syntax, the `olm.package` property, unique versions, and known property shapes.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::diagnostic::{Diagnostic, Diagnostics, Problem, Scope};
use crate::model::{Bundle, Catalog, Channel, Package};
use crate::property::{self, PropertyType};
use crate::range::VersionRange;

/// Runs every check; `Ok` when nothing was found.
pub fn validate(catalog: &Catalog) -> Result<(), Diagnostics> {
    let found: Vec<Diagnostic> = catalog.packages.values().flat_map(check_package).collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(found))
    }
}

/// True for a DNS-1123 label: lowercase alphanumerics and '-', alphanumeric at both ends, ≤ 63.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| ok(c) || *c == b'-')
        && b.first().is_some_and(ok)
        && b.last().is_some_and(ok)
}

pub fn check_package(pkg: &Package) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let at_pkg = |problem| Diagnostic {
        origin: pkg.origin.clone(),
        scope: Scope::Package {
            package: pkg.name.clone(),
        },
        problem,
    };
    if !is_dns1123_label(&pkg.name) {
        out.push(at_pkg(Problem::InvalidPackageName(pkg.name.clone())));
    }
    if pkg.channels.is_empty() {
        out.push(at_pkg(Problem::NoChannels));
    } else if pkg.default_channel.is_empty() {
        out.push(at_pkg(Problem::NoDefaultChannel));
    } else if !pkg.channels.contains_key(&pkg.default_channel) {
        out.push(at_pkg(Problem::DefaultChannelMissing(
            pkg.default_channel.clone(),
        )));
    }
    for channel in pkg.channels.values() {
        out.extend(
            check_channel(pkg, channel)
                .into_iter()
                .map(|problem| Diagnostic {
                    origin: channel.origin.clone(),
                    scope: Scope::Channel {
                        package: pkg.name.clone(),
                        channel: channel.name.clone(),
                    },
                    problem,
                }),
        );
    }
    let in_channels: HashSet<&str> = pkg
        .channels
        .values()
        .flat_map(|c| c.entries.iter().map(|e| e.name.as_str()))
        .collect();
    let mut versions: BTreeMap<String, &str> = BTreeMap::new();
    for bundle in pkg.bundles.values() {
        let mut problems = check_bundle(pkg, bundle);
        if !in_channels.contains(bundle.name.as_str()) {
            problems.push(Problem::BundleInNoChannel);
        }
        if let Some(p) = bundle.package_property() {
            let key = match &p.release {
                Some(r) => format!("{}-{}", p.version, r),
                None => p.version.clone(),
            };
            if let Some(other) = versions.insert(key.clone(), &bundle.name) {
                problems.push(Problem::DuplicateVersion {
                    version: key,
                    other: other.to_string(),
                });
            }
        }
        out.extend(problems.into_iter().map(|problem| Diagnostic {
            origin: bundle.origin.clone(),
            scope: Scope::Bundle {
                package: pkg.name.clone(),
                bundle: bundle.name.clone(),
            },
            problem,
        }));
    }
    out
}

fn check_bundle(pkg: &Package, bundle: &Bundle) -> Vec<Problem> {
    let mut out = Vec::new();
    let packages: Vec<_> = bundle.properties_of(PropertyType::Package).collect();
    if packages.len() != 1 {
        out.push(Problem::PackagePropertyCount(packages.len()));
    }
    for p in &bundle.properties {
        let kind = p.kind();
        let invalid = |message: String| Problem::InvalidProperty {
            type_: p.type_.clone(),
            message,
        };
        match kind {
            PropertyType::Package => match property::package_value(&p.value) {
                Ok(v) => {
                    if v.package_name != pkg.name {
                        out.push(Problem::PackagePropertyMismatch(v.package_name.clone()));
                    }
                    if let Err(e) = semver::Version::parse(&v.version) {
                        out.push(Problem::InvalidVersion {
                            version: v.version,
                            message: e.to_string(),
                        });
                    }
                }
                Err(e) => out.push(invalid(e.to_string())),
            },
            PropertyType::Gvk | PropertyType::GvkRequired => {
                if let Err(e) = property::gvk_value(&p.value) {
                    out.push(invalid(e.to_string()));
                }
            }
            PropertyType::PackageRequired => match property::package_required_value(&p.value) {
                Ok(v) => {
                    if let Err(e) = VersionRange::parse(&v.version_range) {
                        out.push(invalid(format!("versionRange {:?}: {e}", v.version_range)));
                    }
                }
                Err(e) => out.push(invalid(e.to_string())),
            },
            PropertyType::BundleObject => {
                if let Err(e) = property::bundle_object_json(&p.value) {
                    out.push(invalid(e.to_string()));
                }
            }
            PropertyType::CsvMetadata => {
                if !p.value.is_object() {
                    out.push(invalid("value must be an object".into()));
                }
            }
            PropertyType::SkipRange
            | PropertyType::Constraint
            | PropertyType::Label
            | PropertyType::LabelRequired
            | PropertyType::Deprecated
            | PropertyType::Channel
            | PropertyType::Other => {}
        }
    }
    if bundle.image.is_empty() && !bundle.has_objects() {
        out.push(Problem::EmptyImage);
    }
    out
}

/// Checks one channel: names, entries, skipRange syntax and the replaces graph.
pub fn check_channel(pkg: &Package, channel: &Channel) -> Vec<Problem> {
    let mut out = Vec::new();
    if channel.name.is_empty() {
        out.push(Problem::EmptyChannelName);
    }
    if channel.entries.is_empty() {
        out.push(Problem::EmptyChannel);
        return out;
    }
    let mut seen = HashSet::new();
    for e in &channel.entries {
        if !seen.insert(e.name.as_str()) {
            out.push(Problem::DuplicateEntry(e.name.clone()));
        }
        if !pkg.bundles.contains_key(&e.name) {
            out.push(Problem::EntryWithoutBundle(e.name.clone()));
        }
        if e.skips.iter().any(String::is_empty) {
            out.push(Problem::EmptySkip(e.name.clone()));
        }
        if let Some(r) = &e.skip_range
            && let Err(err) = VersionRange::parse(r)
        {
            out.push(Problem::InvalidSkipRange {
                entry: e.name.clone(),
                range: r.clone(),
                message: err.to_string(),
            });
        }
    }
    out.extend(check_graph(channel));
    out
}

/// opm's `validateReplacesChain`: exactly one head; following `replaces` from the head
/// (stopping at a skipped name) reaches every entry that is not skipped; no cycles.
pub fn check_graph(channel: &Channel) -> Vec<Problem> {
    let heads = channel.heads();
    let head = match heads.as_slice() {
        [] => return vec![Problem::NoHead],
        [one] => *one,
        many => {
            let mut names: Vec<String> = many.iter().map(|e| e.name.clone()).collect();
            names.sort();
            return vec![Problem::SeveralHeads(names)];
        }
    };
    let by_name: HashMap<&str, _> = channel
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let skipped: HashSet<&str> = channel
        .entries
        .iter()
        .flat_map(|e| e.skips.iter().map(String::as_str))
        .collect();
    let mut chain: Vec<&str> = Vec::new();
    let mut in_chain = HashSet::new();
    let mut cur = Some(head);
    let mut broke_at: Option<(String, String)> = None;
    while let Some(entry) = cur {
        if !in_chain.insert(entry.name.as_str()) {
            let mut cycle: Vec<String> = chain.iter().map(|s| s.to_string()).collect();
            cycle.push(entry.name.clone());
            return vec![Problem::Cycle(cycle)];
        }
        chain.push(&entry.name);
        cur = match entry.replaces.as_deref() {
            None => None,
            Some(next) if skipped.contains(next) => None,
            Some(next) => match by_name.get(next) {
                Some(e) => Some(*e),
                None => {
                    broke_at = Some((entry.name.clone(), next.to_string()));
                    None
                }
            },
        };
    }
    let mut stranded: Vec<String> = channel
        .entries
        .iter()
        .filter(|e| !in_chain.contains(e.name.as_str()) && !skipped.contains(e.name.as_str()))
        .map(|e| e.name.clone())
        .collect();
    if stranded.is_empty() {
        return Vec::new();
    }
    stranded.sort();
    match broke_at {
        Some((entry, target)) => vec![Problem::ReplacesMissing {
            entry,
            target,
            stranded,
        }],
        None => vec![Problem::Stranded(stranded)],
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use crate::model::ChannelEntry;
    use rstest::rstest;

    fn entry(spec: &str) -> ChannelEntry {
        // "name<replaces|skip1,skip2"
        let (name, rest) = spec.split_once('<').unwrap_or((spec, ""));
        let (replaces, skips) = rest.split_once('|').unwrap_or((rest, ""));
        ChannelEntry {
            name: name.into(),
            replaces: (!replaces.is_empty()).then(|| replaces.into()),
            skips: skips
                .split(',')
                .filter(|s| !s.is_empty())
                .map(Into::into)
                .collect(),
            skip_range: None,
        }
    }

    fn channel(specs: &[&str]) -> Channel {
        let mut c = Channel::new("stable");
        c.entries = specs.iter().map(|s| entry(s)).collect();
        c
    }

    #[rstest]
    #[case::linear_chain_is_valid(&["c<b", "b<a", "a"], vec![])]
    #[case::tail_may_replace_a_missing_bundle(&["b<a", "a<gone"], vec![])]
    #[case::skipped_entries_are_not_stranded(&["c<a|b", "b<a", "a"], vec![])]
    #[case::two_unrelated_entries_are_two_heads(&["a", "b"], vec![Problem::SeveralHeads(vec!["a".into(), "b".into()])])]
    #[case::a_loop_leaves_no_head(&["a<b", "b<a"], vec![Problem::NoHead])]
    #[case::cycle_below_the_head(&["c<b", "b<a", "a<b"], vec![Problem::Cycle(vec!["c".into(), "b".into(), "a".into(), "b".into()])])]
    #[case::missing_link_strands_older_entries(&["c<x", "b<|a", "a"], vec![Problem::SeveralHeads(vec!["b".into(), "c".into()])])]
    #[case::broken_chain_names_the_missing_target(&["c<x|b", "b<a", "a"], vec![Problem::ReplacesMissing{ entry: "c".into(), target: "x".into(), stranded: vec!["a".into()] }])]
    fn channel_graphs_follow_opm_rules(#[case] specs: &[&str], #[case] want: Vec<Problem>) {
        assert_eq!(check_graph(&channel(specs)), want);
    }

    #[rstest]
    #[case::simple_name("etcd", true)]
    #[case::dashes_inside("my-operator-2", true)]
    #[case::uppercase_is_rejected("Etcd", false)]
    #[case::leading_dash_is_rejected("-etcd", false)]
    #[case::dots_are_rejected("etcd.io", false)]
    #[case::empty_is_rejected("", false)]
    fn package_names_must_be_dns_labels(#[case] name: &str, #[case] want: bool) {
        assert_eq!(is_dns1123_label(name), want);
    }
}
