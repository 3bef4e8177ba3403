//! The options of one Subscription, most preferred first.
//!
//! - Installed (its installedCSV `C` is in the namespace): entries that replace `C`, skip `C`, or whose
//!   `olm.skipRange` contains `C`'s version, head first, from the Subscription's source; then the same from
//!   the other visible catalogs (catalog preference order); then `C` itself (stay put). One hop per resolution.
//! - Otherwise, with `startingCSV`: exactly that entry of the channel.
//! - Otherwise: every entry of the channel, head first (so the head is preferred).
//!
//! Entries another entry of the channel skips are not variables at all, so they are never offered.

use crate::explain::NoCandidates;
use crate::model::SubscriptionSpec;
use crate::problem::{ChannelKey, Problem, VarId};

pub(crate) struct SubCandidates {
    pub options: Vec<VarId>,
    /// The installed CSV this Subscription owns, if present.
    pub current: Option<VarId>,
    pub no_candidates: Option<NoCandidates>,
}

pub(crate) fn for_subscription(p: &Problem<'_>, sub: &SubscriptionSpec) -> SubCandidates {
    let current = sub
        .installed_csv
        .as_deref()
        .and_then(|n| p.installed.get(n).copied());
    let home = p.catalog_index(&sub.catalog());
    match current {
        Some(c) => upgrades(p, sub, home, c),
        None => fresh(p, sub, home),
    }
}

fn upgrades(
    p: &Problem<'_>,
    sub: &SubscriptionSpec,
    home: Option<usize>,
    cur: VarId,
) -> SubCandidates {
    let c = &p.vars[cur as usize];
    let mut options = Vec::new();
    let order = home
        .into_iter()
        .chain((0..p.catalogs.len()).filter(|&i| Some(i) != home));
    for cat in order {
        for key in p.sub_channels(cat, &sub.package, &sub.channel) {
            for &v in p.channels.get(&key).into_iter().flatten() {
                let e = &p.vars[v as usize];
                let upgrades_it = e.name != c.name
                    && (e.replaces.as_deref() == Some(c.name.as_str())
                        || e.skips.iter().any(|s| s == &c.name)
                        || e.skip_range
                            .as_ref()
                            .is_some_and(|r| r.contains(&c.version)));
                if upgrades_it && !options.contains(&v) {
                    options.push(v);
                }
            }
        }
    }
    options.push(cur);
    SubCandidates {
        options,
        current: Some(cur),
        no_candidates: None,
    }
}

fn fresh(p: &Problem<'_>, sub: &SubscriptionSpec, home: Option<usize>) -> SubCandidates {
    let none = |why| SubCandidates {
        options: vec![],
        current: None,
        no_candidates: Some(why),
    };
    let Some(cat) = home else {
        return none(NoCandidates::CatalogMissing {
            catalog: sub.catalog(),
        });
    };
    let keys: Vec<ChannelKey> = p.sub_channels(cat, &sub.package, &sub.channel);
    if !p.channels.keys().any(|k| k.0 == cat && k.1 == sub.package) {
        return none(NoCandidates::PackageMissing);
    }
    if !keys.iter().any(|k| p.channels.contains_key(k)) {
        return none(NoCandidates::ChannelMissing);
    }
    if let Some(err) = keys.iter().find_map(|k| p.channel_errors.get(k)) {
        return none(NoCandidates::ChannelInvalid { error: err.clone() });
    }
    let mut options = Vec::new();
    for key in &keys {
        for &v in p.channels.get(key).into_iter().flatten() {
            let wanted = sub
                .starting_csv
                .as_deref()
                .is_none_or(|s| s == p.vars[v as usize].name);
            if wanted && !options.contains(&v) {
                options.push(v);
            }
        }
    }
    if options.is_empty() {
        if let Some(s) = &sub.starting_csv {
            let skipped = keys
                .iter()
                .any(|k| p.skipped.get(k).is_some_and(|names| names.contains(s)));
            return none(NoCandidates::StartingCsvMissing {
                starting_csv: s.clone(),
                skipped,
            });
        }
        return none(NoCandidates::ChannelMissing);
    }
    SubCandidates {
        options,
        current: None,
        no_candidates: None,
    }
}
