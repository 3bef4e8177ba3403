//! Catalog deprecation notices on a Subscription, as OLM v0 reports them (`updateDeprecatedStatus`).
//!
//! A file-based catalog's `olm.deprecations` entry marks a package, a channel or a bundle deprecated with a
//! message; the registry API carries those messages on `api.Package`, `api.Channel` and `api.Bundle`. OLM v0
//! does not refuse such bundles (only the `olm.deprecated` *property* makes a bundle unselectable, see
//! [`crate::snapshot`]); it reports them on the Subscription whose installed CSV they concern:
//! `PackageDeprecated`, `ChannelDeprecated` (not when the Subscription names no channel) and `BundleDeprecated`,
//! each `True` with the catalog's message, and a `Deprecated` roll-up joining the messages with "; ". Pure.

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::subscription::{
    SubscriptionCondition, SubscriptionConditionType as T, SubscriptionReason, SubscriptionStatus,
};
use registry::api;
use resolver::CatalogSnapshot;

/// The deprecation messages that apply to one installed bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notices {
    pub package: Option<String>,
    pub channel: Option<String>,
    pub bundle: Option<String>,
}

/// One catalog's deprecation messages by package, (package, channel) and (package, bundle).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeprecationIndex {
    packages: HashMap<String, String>,
    channels: HashMap<(String, String), String>,
    bundles: HashMap<(String, String), String>,
}

impl DeprecationIndex {
    pub fn build(packages: &[api::Package], bundles: &[api::Bundle]) -> Self {
        let mut index = Self::default();
        for p in packages {
            if let Some(d) = &p.deprecation {
                index.packages.insert(p.name.clone(), d.message.clone());
            }
            for c in &p.channels {
                if let Some(d) = &c.deprecation {
                    index
                        .channels
                        .insert((p.name.clone(), c.name.clone()), d.message.clone());
                }
            }
        }
        for b in bundles {
            index.add_bundle(b);
        }
        index
    }

    /// Adds the notice of one more bundle (a catalog read one bundle at a time).
    pub fn add_bundle(&mut self, b: &api::Bundle) {
        if let Some(d) = &b.deprecation {
            self.bundles.insert(
                (b.package_name.clone(), b.csv_name.clone()),
                d.message.clone(),
            );
        }
    }

    /// The notices for `bundle` of `package` reached through `channel`.
    pub fn notices(&self, package: &str, channel: &str, bundle: &str) -> Notices {
        Notices {
            package: self.packages.get(package).cloned(),
            channel: self
                .channels
                .get(&(package.to_owned(), channel.to_owned()))
                .cloned(),
            bundle: self
                .bundles
                .get(&(package.to_owned(), bundle.to_owned()))
                .cloned(),
        }
    }
}

/// The notices for a Subscription's installed CSV as OLM finds them (`Find(PkgPredicate, ChannelPredicate)` over
/// the catalog's entries, then the entry named `installed`): `None` when the catalog's content has no bundle of
/// that name in the Subscription's package and channel (any channel when it names none), or no content at all.
pub fn lookup(
    snapshot: Option<&CatalogSnapshot>,
    index: &DeprecationIndex,
    package: &str,
    channel: &str,
    installed: &str,
) -> Option<Notices> {
    if installed.is_empty() {
        return None;
    }
    let entry = snapshot?.bundles.iter().find(|b| {
        b.name == installed && b.package == package && (channel.is_empty() || b.channel == channel)
    })?;
    Some(index.notices(package, &entry.channel, installed))
}

/// Applies the notices to a Subscription's status; `None` when the catalog has no entry for its installed CSV
/// (then nothing changes, as in OLM). `spec_channel` is the Subscription's `spec.channel`. Returns whether the
/// status changed.
pub fn apply(
    status: &mut SubscriptionStatus,
    spec_channel: &str,
    notices: Option<&Notices>,
    now: &Time,
) -> bool {
    let Some(notices) = notices else {
        return false;
    };
    let mut changed = false;
    let mut rollup = Vec::new();
    for (type_, message) in [
        (T::PackageDeprecated, &notices.package),
        (T::ChannelDeprecated, &notices.channel),
        (T::BundleDeprecated, &notices.bundle),
    ] {
        let was_true = status.condition(&type_).is_some_and(|c| c.status == "True");
        let message = message
            .as_ref()
            .filter(|_| !(type_ == T::ChannelDeprecated && spec_channel.is_empty()));
        match message {
            Some(message) => {
                rollup.push(message.clone());
                let same = status
                    .condition(&type_)
                    .is_some_and(|c| &c.message == message);
                if !same {
                    status.set_condition(condition(type_, message.clone(), now));
                    changed = true;
                }
            }
            None => {
                if status.condition(&type_).is_some() {
                    status.remove_conditions(&[type_]);
                    changed |= was_true;
                }
            }
        }
    }
    if !changed {
        return false;
    }
    if rollup.is_empty() {
        status.remove_conditions(&[T::Deprecated]);
    } else {
        status.set_condition(condition(T::Deprecated, rollup.join("; "), now));
    }
    true
}

fn condition(type_: T, message: String, now: &Time) -> SubscriptionCondition {
    SubscriptionCondition {
        type_,
        status: "True".to_owned(),
        reason: SubscriptionReason::None,
        message,
        last_heartbeat_time: None,
        last_transition_time: Some(now.clone()),
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

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn notices(package: Option<&str>, channel: Option<&str>, bundle: Option<&str>) -> Notices {
        Notices {
            package: package.map(str::to_owned),
            channel: channel.map(str::to_owned),
            bundle: bundle.map(str::to_owned),
        }
    }

    fn with(conditions: &[(T, &str)]) -> SubscriptionStatus {
        let mut status = SubscriptionStatus::default();
        for (t, m) in conditions {
            status.set_condition(condition(t.clone(), (*m).to_owned(), &now()));
        }
        status
    }

    fn shown(status: &SubscriptionStatus) -> Vec<(T, String)> {
        let mut out: Vec<(T, String)> = status
            .conditions
            .iter()
            .map(|c| (c.type_.clone(), c.message.clone()))
            .collect();
        out.sort_by_key(|(t, _)| format!("{t:?}"));
        out
    }

    #[rstest]
    #[case::every_level_deprecated_rolls_up_in_order(
        with(&[]), "stable", Some(notices(Some("pkg gone"), Some("use fast"), Some("v1 is old"))), true,
        vec![(T::BundleDeprecated, "v1 is old"), (T::ChannelDeprecated, "use fast"),
             (T::Deprecated, "pkg gone; use fast; v1 is old"), (T::PackageDeprecated, "pkg gone")])]
    #[case::no_channel_in_the_spec_hides_a_channel_deprecation(
        with(&[]), "", Some(notices(None, Some("use fast"), None)), false, vec![])]
    #[case::a_notice_withdrawn_from_the_catalog_removes_its_condition_and_the_rollup(
        with(&[(T::BundleDeprecated, "v1 is old"), (T::Deprecated, "v1 is old")]), "stable",
        Some(notices(None, None, None)), true, vec![])]
    #[case::unchanged_notices_change_nothing(
        with(&[(T::BundleDeprecated, "v1 is old"), (T::Deprecated, "v1 is old")]), "stable",
        Some(notices(None, None, Some("v1 is old"))), false,
        vec![(T::BundleDeprecated, "v1 is old"), (T::Deprecated, "v1 is old")])]
    #[case::a_changed_message_is_rewritten(
        with(&[(T::PackageDeprecated, "old text"), (T::Deprecated, "old text")]), "stable",
        Some(notices(Some("new text"), None, None)), true,
        vec![(T::Deprecated, "new text"), (T::PackageDeprecated, "new text")])]
    #[case::no_catalog_entry_for_the_installed_csv_changes_nothing(
        with(&[(T::PackageDeprecated, "kept")]), "stable", None, false,
        vec![(T::PackageDeprecated, "kept")])]
    fn deprecations_are_reported_as_olm_reports_them(
        #[case] mut status: SubscriptionStatus,
        #[case] channel: &str,
        #[case] found: Option<Notices>,
        #[case] changed: bool,
        #[case] expected: Vec<(T, &str)>,
    ) {
        assert_eq!(apply(&mut status, channel, found.as_ref(), &now()), changed);
        let expected: Vec<(T, String)> = expected
            .into_iter()
            .map(|(t, m)| (t, m.to_owned()))
            .collect();
        assert_eq!(shown(&status), expected);
        assert!(status.conditions.iter().all(|c| c.status == "True"));
    }

    fn snapshot(bundles: &[(&str, &str, &str)]) -> CatalogSnapshot {
        CatalogSnapshot {
            key: resolver::CatalogKey::new("cat", "ns"),
            priority: 0,
            packages: Vec::new(),
            bundles: bundles
                .iter()
                .map(|(name, package, channel)| resolver::BundleEntry {
                    name: (*name).into(),
                    package: (*package).into(),
                    channel: (*channel).into(),
                    version: semver::Version::new(1, 0, 0),
                    replaces: None,
                    skips: Vec::new(),
                    skip_range: None,
                    provided_apis: Vec::new(),
                    required_apis: Vec::new(),
                    properties: Vec::new(),
                    bundle_path: String::new(),
                    deprecated: false,
                })
                .collect(),
        }
    }

    fn index() -> DeprecationIndex {
        let deprecation = |m: &str| Some(api::Deprecation { message: m.into() });
        let packages = [api::Package {
            name: "etcd".into(),
            deprecation: deprecation("etcd is retired"),
            channels: vec![
                api::Channel {
                    name: "alpha".into(),
                    deprecation: deprecation("alpha is frozen"),
                    ..Default::default()
                },
                api::Channel {
                    name: "beta".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }];
        let bundles = [api::Bundle {
            csv_name: "etcd.v0.9.0".into(),
            package_name: "etcd".into(),
            deprecation: deprecation("0.9.0 has a CVE"),
            ..Default::default()
        }];
        DeprecationIndex::build(&packages, &bundles)
    }

    #[rstest]
    #[case::the_installed_bundle_in_the_subscribed_channel(
        "alpha",
        "etcd.v0.9.0",
        Some(notices(
            Some("etcd is retired"),
            Some("alpha is frozen"),
            Some("0.9.0 has a CVE")
        ))
    )]
    #[case::another_channel_has_its_own_notice(
        "beta",
        "etcd.v0.9.0",
        Some(notices(Some("etcd is retired"), None, Some("0.9.0 has a CVE")))
    )]
    #[case::no_channel_named_takes_the_first_entry_found(
        "",
        "etcd.v0.9.0",
        Some(notices(
            Some("etcd is retired"),
            Some("alpha is frozen"),
            Some("0.9.0 has a CVE")
        ))
    )]
    #[case::a_channel_without_the_bundle_finds_nothing("gamma", "etcd.v0.9.0", None)]
    #[case::a_bundle_the_catalog_dropped_finds_nothing("alpha", "etcd.v0.8.0", None)]
    #[case::nothing_installed_finds_nothing("alpha", "", None)]
    fn the_installed_bundle_is_found_as_olm_finds_it(
        #[case] channel: &str,
        #[case] installed: &str,
        #[case] want: Option<Notices>,
    ) {
        let snap = snapshot(&[
            ("etcd.v0.9.0", "etcd", "alpha"),
            ("etcd.v0.9.0", "etcd", "beta"),
        ]);
        assert_eq!(
            lookup(Some(&snap), &index(), "etcd", channel, installed),
            want
        );
        assert_eq!(lookup(None, &index(), "etcd", channel, installed), None);
    }

    #[test]
    fn the_index_reads_package_channel_and_bundle_messages() {
        let deprecation = |m: &str| Some(api::Deprecation { message: m.into() });
        let packages = [api::Package {
            name: "etcd".into(),
            deprecation: deprecation("etcd is retired"),
            channels: vec![api::Channel {
                name: "alpha".into(),
                deprecation: deprecation("alpha is frozen"),
                ..Default::default()
            }],
            ..Default::default()
        }];
        let bundles = [api::Bundle {
            csv_name: "etcd.v0.9.0".into(),
            package_name: "etcd".into(),
            deprecation: deprecation("0.9.0 has a CVE"),
            ..Default::default()
        }];
        let index = DeprecationIndex::build(&packages, &bundles);
        assert_eq!(
            index.notices("etcd", "alpha", "etcd.v0.9.0"),
            notices(
                Some("etcd is retired"),
                Some("alpha is frozen"),
                Some("0.9.0 has a CVE")
            )
        );
        assert_eq!(
            index.notices("etcd", "beta", "etcd.v0.9.4"),
            notices(Some("etcd is retired"), None, None)
        );
    }
}
