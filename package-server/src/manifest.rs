//! One PackageManifest from a catalog's answers (pure): OLM's `newPackageManifest` and the channel entries of
//! its `refreshCache`. Channels are sorted by name; a channel whose head cannot be read or parsed is elided (and
//! when that was the default channel, the first remaining one becomes the default); a package left with no
//! channel is elided; `entries` list each channel's bundles newest first by semver, without `olm.deprecated`
//! bundles; labels are the catalog's, `catalog`, `catalog-namespace`, `provider`, `provider-url`, the default
//! channel head's CSV labels, and `operatorframework.io/{os.linux,arch.amd64}=supported` unless the CSV names an
//! OS or an architecture.

use crate::csv_desc;
use crate::types::{
    API_VERSION, ChannelEntry, Deprecation, KIND, PackageChannel, PackageManifest,
    PackageManifestSpec, PackageManifestStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use registry::api;
use std::collections::BTreeMap;

pub const OS_LABEL_PREFIX: &str = "operatorframework.io/os";
pub const ARCH_LABEL_PREFIX: &str = "operatorframework.io/arch";
pub const DEFAULT_OS_LABEL: &str = "operatorframework.io/os.linux";
pub const DEFAULT_ARCH_LABEL: &str = "operatorframework.io/arch.amd64";
const DEPRECATED_PROPERTY: &str = "olm.deprecated";

/// The CatalogSource a manifest comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CatalogInfo {
    pub name: String,
    pub namespace: String,
    pub display_name: String,
    pub publisher: String,
    pub labels: BTreeMap<String, String>,
    pub created: Option<Time>,
}

/// Channel name → its entries, newest first.
pub type EntriesByChannel = BTreeMap<String, Vec<ChannelEntry>>;

/// One channel of a package with the answer of `GetBundleForChannel` for it (the head's `csvJson`, or why not).
#[derive(Clone, Debug)]
pub struct ChannelHead {
    pub name: String,
    pub deprecation: Option<Deprecation>,
    pub csv_json: Result<String, String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Elided {
    #[error("package {0} has no valid channels")]
    NoChannels(String),
}

fn deprecation(d: Option<&api::Deprecation>) -> Option<Deprecation> {
    d.map(|d| Deprecation {
        message: d.message.clone(),
    })
}

/// `ListBundles` grouped by package and channel (OLM's `refreshCache`).
pub fn entries_by_package(bundles: &[api::Bundle]) -> BTreeMap<String, EntriesByChannel> {
    let mut out: BTreeMap<String, EntriesByChannel> = BTreeMap::new();
    for b in bundles {
        if b.properties.iter().any(|p| p.r#type == DEPRECATED_PROPERTY) {
            continue;
        }
        out.entry(b.package_name.clone())
            .or_default()
            .entry(b.channel_name.clone())
            .or_default()
            .push(ChannelEntry {
                name: b.csv_name.clone(),
                version: b.version.clone(),
                deprecation: deprecation(b.deprecation.as_ref()),
            });
    }
    let zero = semver::Version::new(0, 0, 0);
    for channels in out.values_mut() {
        for entries in channels.values_mut() {
            entries.sort_by(|a, b| {
                let va = semver::Version::parse(&a.version).unwrap_or_else(|_| zero.clone());
                let vb = semver::Version::parse(&b.version).unwrap_or_else(|_| zero.clone());
                vb.cmp(&va)
            });
        }
    }
    out
}

/// The heads to ask for: the package's channels sorted by name.
pub fn channels_sorted(package: &api::Package) -> Vec<(String, Option<Deprecation>)> {
    let mut channels: Vec<_> = package
        .channels
        .iter()
        .map(|c| (c.name.clone(), deprecation(c.deprecation.as_ref())))
        .collect();
    channels.sort_by(|a, b| a.0.cmp(&b.0));
    channels
}

/// Build the manifest of `package` (its `heads` in the order of [`channels_sorted`]).
pub fn build(
    catalog: &CatalogInfo,
    package: &api::Package,
    heads: Vec<ChannelHead>,
    entries: Option<&EntriesByChannel>,
) -> Result<PackageManifest, Elided> {
    let mut labels = catalog.labels.clone();
    labels.insert("catalog".into(), catalog.name.clone());
    labels.insert("catalog-namespace".into(), catalog.namespace.clone());
    let mut status = PackageManifestStatus {
        catalog_source: catalog.name.clone(),
        catalog_source_display_name: catalog.display_name.clone(),
        catalog_source_publisher: catalog.publisher.clone(),
        catalog_source_namespace: catalog.namespace.clone(),
        package_name: package.name.clone(),
        default_channel: package.default_channel_name.clone(),
        deprecation: deprecation(package.deprecation.as_ref()),
        ..Default::default()
    };
    let mut provider_set = false;
    let mut default_elided = false;
    let mut default_labels: Option<BTreeMap<String, String>> = None;
    for head in heads {
        let is_default = head.name == status.default_channel;
        let view = match head.csv_json.as_deref().map(csv_desc::parse) {
            Ok(Ok(view)) => view,
            Ok(Err(error)) => {
                tracing::warn!(package = %package.name, channel = %head.name, error = &error as &dyn std::error::Error, "eliding channel: its head CSV does not parse");
                default_elided |= is_default;
                continue;
            }
            Err(error) => {
                tracing::warn!(package = %package.name, channel = %head.name, %error, "eliding channel: no head bundle");
                default_elided |= is_default;
                continue;
            }
        };
        if default_labels.is_none() || is_default {
            default_labels = Some(view.metadata.labels.clone());
        }
        if (!status.default_channel.is_empty() && is_default) || !provider_set {
            status.provider = view.spec.provider.clone();
            labels.insert("provider".into(), status.provider.name.clone());
            labels.insert("provider-url".into(), status.provider.url.clone());
            provider_set = true;
        }
        let mut desc = view.description();
        // As OLM's storage: icons are not part of list/get answers.
        desc.icon.clear();
        status.channels.push(PackageChannel {
            name: head.name.clone(),
            current_csv: view.metadata.name.clone(),
            current_csv_desc: desc,
            deprecation: head.deprecation,
            entries: entries
                .and_then(|e| e.get(&head.name))
                .cloned()
                .unwrap_or_default(),
        });
    }
    let Some(first) = status.channels.first() else {
        return Err(Elided::NoChannels(package.name.clone()));
    };
    if default_elided {
        status.default_channel = first.name.clone();
    }
    labels.extend(default_labels.unwrap_or_default());
    if !labels.keys().any(|k| k.starts_with(OS_LABEL_PREFIX)) {
        labels.insert(DEFAULT_OS_LABEL.into(), "supported".into());
    }
    if !labels.keys().any(|k| k.starts_with(ARCH_LABEL_PREFIX)) {
        labels.insert(DEFAULT_ARCH_LABEL.into(), "supported".into());
    }
    Ok(PackageManifest {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata: ObjectMeta {
            name: Some(package.name.clone()),
            namespace: Some(catalog.namespace.clone()),
            labels: Some(labels),
            creation_timestamp: catalog.created.clone(),
            ..Default::default()
        },
        spec: PackageManifestSpec {},
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn catalog() -> CatalogInfo {
        CatalogInfo {
            name: "community".into(),
            namespace: "olm".into(),
            display_name: "Community Operators".into(),
            publisher: "Red Hat".into(),
            labels: BTreeMap::from([("team".to_string(), "a".to_string())]),
            created: None,
        }
    }

    fn package(default: &str, channels: &[&str]) -> api::Package {
        api::Package {
            name: "etcd".into(),
            channels: channels
                .iter()
                .map(|c| api::Channel {
                    name: (*c).into(),
                    csv_name: format!("etcd.{c}"),
                    deprecation: None,
                })
                .collect(),
            default_channel_name: default.into(),
            deprecation: None,
        }
    }

    fn csv(name: &str, provider: &str, labels: &str) -> String {
        format!(
            r#"{{"metadata":{{"name":"{name}","labels":{{{labels}}}}},"spec":{{"version":"1.0.0","provider":{{"name":"{provider}","url":"https://{provider}"}},"icon":[{{"base64data":"AA","mediatype":"image/png"}}]}}}}"#
        )
    }

    fn head(name: &str, json: Result<String, String>) -> ChannelHead {
        ChannelHead {
            name: name.into(),
            deprecation: None,
            csv_json: json,
        }
    }

    fn bundle(pkg: &str, ch: &str, csv: &str, version: &str, deprecated: bool) -> api::Bundle {
        api::Bundle {
            csv_name: csv.into(),
            package_name: pkg.into(),
            channel_name: ch.into(),
            version: version.into(),
            properties: if deprecated {
                vec![api::Property {
                    r#type: "olm.deprecated".into(),
                    value: "{}".into(),
                }]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_package_gets_olms_labels_status_and_channels_sorted() {
        let heads = vec![
            head("alpha", Ok(csv("etcd.v1", "Alpha Inc", ""))),
            head(
                "stable",
                Ok(csv("etcd.v2", "Stable Inc", r#""tier":"gold""#)),
            ),
        ];
        let entries = entries_by_package(&[
            bundle("etcd", "stable", "etcd.v1", "1.0.0", false),
            bundle("etcd", "stable", "etcd.v10", "10.0.0", false),
            bundle("etcd", "stable", "etcd.v2", "2.0.0", false),
            bundle("etcd", "stable", "etcd.old", "0.1.0", true),
        ]);
        let m = build(
            &catalog(),
            &package("stable", &["stable", "alpha"]),
            heads,
            entries.get("etcd"),
        )
        .expect("built");
        let labels = m.metadata.labels.clone().unwrap_or_default();
        let get = |k: &str| labels.get(k).map(String::as_str);
        assert_eq!(get("catalog"), Some("community"));
        assert_eq!(get("catalog-namespace"), Some("olm"));
        assert_eq!(get("team"), Some("a"));
        assert_eq!(
            get("provider"),
            Some("Stable Inc"),
            "the default channel's provider wins"
        );
        assert_eq!(get("provider-url"), Some("https://Stable Inc"));
        assert_eq!(
            get("tier"),
            Some("gold"),
            "the default channel head's labels"
        );
        assert_eq!(get(DEFAULT_OS_LABEL), Some("supported"));
        assert_eq!(get(DEFAULT_ARCH_LABEL), Some("supported"));
        assert_eq!(m.status.default_channel, "stable");
        assert_eq!(m.status.catalog_source_display_name, "Community Operators");
        let names: Vec<_> = m.status.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alpha", "stable"]);
        let stable = &m.status.channels[1];
        assert_eq!(stable.current_csv, "etcd.v2");
        assert!(
            stable.current_csv_desc.icon.is_empty(),
            "icons are not served in lists"
        );
        let versions: Vec<_> = stable.entries.iter().map(|e| e.version.as_str()).collect();
        assert_eq!(
            versions,
            ["10.0.0", "2.0.0", "1.0.0"],
            "newest first, deprecated bundles left out"
        );
    }

    #[rstest]
    #[case::default_head_missing(vec![head("alpha", Ok(csv("a", "P", ""))), head("stable", Err("no bundle".into()))], Ok("alpha"))]
    #[case::default_head_garbage(vec![head("alpha", Ok(csv("a", "P", ""))), head("stable", Ok("{".into()))], Ok("alpha"))]
    #[case::other_head_missing(vec![head("alpha", Err("gone".into())), head("stable", Ok(csv("s", "P", "")))], Ok("stable"))]
    #[case::no_head_at_all(vec![head("alpha", Err("gone".into())), head("stable", Err("gone".into()))], Err(Elided::NoChannels("etcd".into())))]
    #[case::no_channels(vec![], Err(Elided::NoChannels("etcd".into())))]
    fn elided_channels_and_packages(
        #[case] heads: Vec<ChannelHead>,
        #[case] want_default: Result<&str, Elided>,
    ) {
        let got = build(
            &catalog(),
            &package("stable", &["alpha", "stable"]),
            heads,
            None,
        );
        assert_eq!(
            got.map(|m| m.status.default_channel),
            want_default.map(str::to_string)
        );
    }

    #[rstest]
    #[case::os_named(r#""operatorframework.io/os.zos":"supported""#, false, true)]
    #[case::arch_named(r#""operatorframework.io/arch.s390x":"supported""#, true, false)]
    #[case::none_named("", true, true)]
    fn default_os_and_arch_labels_only_when_none_is_named(
        #[case] csv_labels: &str,
        #[case] linux: bool,
        #[case] amd64: bool,
    ) {
        let m = build(
            &catalog(),
            &package("stable", &["stable"]),
            vec![head("stable", Ok(csv("s", "P", csv_labels)))],
            None,
        )
        .expect("built");
        let labels = m.metadata.labels.unwrap_or_default();
        assert_eq!(labels.contains_key(DEFAULT_OS_LABEL), linux);
        assert_eq!(labels.contains_key(DEFAULT_ARCH_LABEL), amd64);
    }
}
