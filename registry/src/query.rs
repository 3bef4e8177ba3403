//! The answers of every `api.Registry` RPC, computed from the [`Store`] without any gRPC,
//! following `opm serve` (FBC backend). Error texts are opm's; the service sends them with
//! status UNKNOWN as opm does.
//!
//! Choices where opm is unspecified or, in our view, wrong:
//! - Orders opm leaves to Go map iteration (ListPackages, the `*ThatProvide` streams,
//!   GetChannelEntriesThatReplace) are sorted here: package, channel, bundle name.
//! - GetBundleThatReplaces with several matches returns the highest version (opm: undefined).
//! - GetChannelEntriesThatReplace: for a bundle that *skips* `csvName`, opm's FBC server sends
//!   the bundle's own `replaces` in the entry; we send `csvName` (the SQLite server's answer),
//!   treating the FBC behaviour as a bug: the entry should say what it replaces.

use crate::api;
use crate::store::{Gvk, Store, StoredChannel, StoredEntry, StoredPackage};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("package {0:?} not found")]
    PackageNotFound(String),
    #[error("package {package:?}, channel {channel:?} not found")]
    ChannelNotFound { package: String, channel: String },
    #[error("package {package:?}, channel {channel:?}, bundle {bundle:?} not found")]
    BundleNotFound {
        package: String,
        channel: String,
        bundle: String,
    },
    #[error("no entry found for package {package:?}, channel {channel:?}")]
    NoReplacement { package: String, channel: String },
    #[error("no channel entries found that replace {0}")]
    NothingReplaces(String),
    #[error("no channel entries found that provide {0}")]
    NothingProvides(Gvk),
    #[error("no entry found that provides {0}")]
    NoDefaultProvider(Gvk),
    #[error("cannot read bundle data: {0}")]
    Storage(String),
}

impl From<crate::bodies::BodyError> for QueryError {
    fn from(e: crate::bodies::BodyError) -> Self {
        let mut text = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            text.push_str(&format!(": {s}"));
            src = s.source();
        }
        QueryError::Storage(text)
    }
}

fn entry(
    pkg: &StoredPackage,
    ch: &StoredChannel,
    store: &Store,
    e: &StoredEntry,
    replaces: Option<&str>,
) -> api::ChannelEntry {
    api::ChannelEntry {
        package_name: pkg.name.to_string(),
        channel_name: ch.name.to_string(),
        bundle_name: store.bundle(e.bundle).name.to_string(),
        replaces: replaces.unwrap_or_default().to_string(),
    }
}

fn channels(store: &Store) -> impl Iterator<Item = (&StoredPackage, &StoredChannel)> {
    store
        .packages()
        .iter()
        .flat_map(|p| p.channels.iter().map(move |c| (p, c)))
}

pub fn list_packages(store: &Store) -> Vec<api::PackageName> {
    store
        .packages()
        .iter()
        .map(|p| api::PackageName {
            name: p.name.to_string(),
        })
        .collect()
}

pub fn get_package(store: &Store, name: &str) -> Result<api::Package, QueryError> {
    let pkg = store
        .package(name)
        .ok_or_else(|| QueryError::PackageNotFound(name.to_string()))?;
    Ok(api::Package {
        name: pkg.name.to_string(),
        channels: pkg
            .channels
            .iter()
            .map(|c| api::Channel {
                name: c.name.to_string(),
                csv_name: store.bundle(c.head().bundle).name.to_string(),
                deprecation: c.deprecation.as_ref().map(|m| api::Deprecation {
                    message: m.to_string(),
                }),
            })
            .collect(),
        default_channel_name: pkg.default_channel.to_string(),
        deprecation: pkg.deprecation.as_ref().map(|m| api::Deprecation {
            message: m.to_string(),
        }),
    })
}

fn package_channel<'a>(
    store: &'a Store,
    package: &str,
    channel: &str,
) -> Result<(&'a StoredPackage, &'a StoredChannel), QueryError> {
    let pkg = store
        .package(package)
        .ok_or_else(|| QueryError::PackageNotFound(package.to_string()))?;
    let ch = pkg
        .channel(channel)
        .ok_or_else(|| QueryError::ChannelNotFound {
            package: package.to_string(),
            channel: channel.to_string(),
        })?;
    Ok((pkg, ch))
}

pub fn get_bundle(
    store: &Store,
    package: &str,
    channel: &str,
    csv_name: &str,
) -> Result<api::Bundle, QueryError> {
    let (pkg, ch) = package_channel(store, package, channel)?;
    let e = ch
        .entry(store, csv_name)
        .ok_or_else(|| QueryError::BundleNotFound {
            package: package.to_string(),
            channel: channel.to_string(),
            bundle: csv_name.to_string(),
        })?;
    Ok(store.wire_bundle(pkg, ch, e, true, false)?)
}

pub fn get_bundle_for_channel(
    store: &Store,
    package: &str,
    channel: &str,
) -> Result<api::Bundle, QueryError> {
    let (pkg, ch) = package_channel(store, package, channel)?;
    Ok(store.wire_bundle(pkg, ch, ch.head(), true, false)?)
}

fn replaces_or_skips(e: &StoredEntry, name: &str) -> bool {
    e.replaces.as_deref() == Some(name) || e.skips.iter().any(|s| &**s == name)
}

pub fn get_bundle_that_replaces(
    store: &Store,
    csv_name: &str,
    package: &str,
    channel: &str,
) -> Result<api::Bundle, QueryError> {
    let none = || QueryError::NoReplacement {
        package: package.to_string(),
        channel: channel.to_string(),
    };
    let (pkg, ch) = package_channel(store, package, channel).map_err(|_| none())?;
    let best = ch
        .entries
        .iter()
        .filter(|e| replaces_or_skips(e, csv_name))
        .max_by(|a, b| {
            store
                .bundle(a.bundle)
                .semver
                .cmp(&store.bundle(b.bundle).semver)
        })
        .ok_or_else(none)?;
    Ok(store.wire_bundle(pkg, ch, best, true, false)?)
}

pub fn get_channel_entries_that_replace(
    store: &Store,
    csv_name: &str,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    let mut out = Vec::new();
    for (pkg, ch) in channels(store) {
        for e in ch.entries.iter() {
            if replaces_or_skips(e, csv_name) {
                out.push(entry(pkg, ch, store, e, Some(csv_name)));
            }
        }
    }
    if out.is_empty() {
        Err(QueryError::NothingReplaces(csv_name.to_string()))
    } else {
        Ok(out)
    }
}

fn provides(store: &Store, e: &StoredEntry, gvk: &Gvk) -> bool {
    store.bundle(e.bundle).provided.iter().any(|g| g == gvk)
}

/// The entry itself, then one entry per skip (except a skip equal to `replaces`).
fn with_skips(
    pkg: &StoredPackage,
    ch: &StoredChannel,
    store: &Store,
    e: &StoredEntry,
    only_members: bool,
    out: &mut Vec<api::ChannelEntry>,
) {
    out.push(entry(pkg, ch, store, e, e.replaces.as_deref()));
    for s in e.skips.iter() {
        if e.replaces.as_deref() == Some(&**s) || (only_members && ch.entry(store, s).is_none()) {
            continue;
        }
        out.push(entry(pkg, ch, store, e, Some(s)));
    }
}

pub fn get_channel_entries_that_provide(
    store: &Store,
    gvk: &Gvk,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    let mut out = Vec::new();
    for (pkg, ch) in channels(store) {
        for e in ch.entries.iter().filter(|e| provides(store, e, gvk)) {
            with_skips(pkg, ch, store, e, false, &mut out);
        }
    }
    if out.is_empty() {
        Err(QueryError::NothingProvides(gvk.clone()))
    } else {
        Ok(out)
    }
}

pub fn get_latest_channel_entries_that_provide(
    store: &Store,
    gvk: &Gvk,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    let mut out = Vec::new();
    for (pkg, ch) in channels(store) {
        let head = ch.head();
        if provides(store, head, gvk) {
            with_skips(pkg, ch, store, head, true, &mut out);
        }
    }
    if out.is_empty() {
        Err(QueryError::NothingProvides(gvk.clone()))
    } else {
        Ok(out)
    }
}

pub fn get_default_bundle_that_provides(
    store: &Store,
    gvk: &Gvk,
) -> Result<api::Bundle, QueryError> {
    let none = || QueryError::NoDefaultProvider(gvk.clone());
    let latest = get_latest_channel_entries_that_provide(store, gvk).map_err(|_| none())?;
    // Already in package-name order; take the first entry in its package's default channel.
    for e in latest {
        let Some(pkg) = store.package(&e.package_name) else {
            continue;
        };
        if *pkg.default_channel == *e.channel_name {
            return match get_bundle(store, &e.package_name, &e.channel_name, &e.bundle_name) {
                Err(QueryError::Storage(s)) => Err(QueryError::Storage(s)),
                other => other.map_err(|_| none()),
            };
        }
    }
    Err(none())
}

/// ListBundles, lazily: the i-th bundle in (channel, package, name) order.
pub fn list_bundle_at(store: &Store, i: usize) -> Option<Result<api::Bundle, QueryError>> {
    let (p, c, e) = *store.list_order().get(i)?;
    let pkg = &store.packages()[p as usize];
    let ch = &pkg.channels[c as usize];
    Some(
        store
            .wire_bundle(pkg, ch, &ch.entries[e as usize], false, true)
            .map_err(QueryError::from),
    )
}
