//! The resolver's input: catalog snapshots, installed operators and Subscriptions of one namespace.
//!
//! These mirror what the catalog operator reads from the operator-registry gRPC API (`api.Bundle`:
//! one entry per bundle and channel) and from the cluster (CSVs, Subscriptions). They are plain serde
//! types so callers can build them from any source; nothing here does I/O.

use std::fmt;

use semver::Version;
use serde::{Deserialize, Serialize};

/// A catalog, named as a CatalogSource is: `name` in `namespace`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CatalogKey {
    pub name: String,
    pub namespace: String,
}

impl CatalogKey {
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            namespace: namespace.into(),
        }
    }
}

impl fmt::Display for CatalogKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A group/version/kind. `plural` is informative only; matching uses group, version and kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plural: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: String::new(),
        }
    }
    fn key(&self) -> (&str, &str, &str) {
        (&self.group, &self.version, &self.kind)
    }
}

impl PartialEq for Gvk {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Gvk {}
impl std::hash::Hash for Gvk {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}
impl PartialOrd for Gvk {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Gvk {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Display for Gvk {
    /// OLM's spelling in its uniqueness constraints: `Kind (group/version)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}/{})", self.kind, self.group, self.version)
    }
}

/// A bundle property as served by the registry (`type` plus a JSON value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Property {
    #[serde(rename = "type")]
    pub type_: String,
    pub value: serde_json::Value,
}

/// One bundle in one channel of a catalog (the registry's `api.Bundle`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleEntry {
    /// The CSV name, e.g. `etcdoperator.v0.9.2`.
    pub name: String,
    pub package: String,
    pub channel: String,
    pub version: Version,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// The raw `olm.skipRange` text; parsed by the resolver (an unparseable one is ignored with a warning, as OLM does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_range: Option<String>,
    #[serde(default)]
    pub provided_apis: Vec<Gvk>,
    #[serde(default)]
    pub required_apis: Vec<Gvk>,
    /// Registry properties: `olm.gvk`, `olm.package.required`, `olm.gvk.required`, `olm.constraint`, ...
    #[serde(default)]
    pub properties: Vec<Property>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bundle_path: String,
    /// Marked by an `olm.deprecated` property; never chosen. (A catalog's `olm.deprecations` notice is only
    /// reported on the Subscription, as in OLM v0.)
    #[serde(default)]
    pub deprecated: bool,
}

/// A package's default channel, as `GetPackage` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageInfo {
    pub name: String,
    pub default_channel: String,
}

/// Everything one catalog serves, with its CatalogSource priority.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogSnapshot {
    pub key: CatalogKey,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub packages: Vec<PackageInfo>,
    pub bundles: Vec<BundleEntry>,
}

/// The phase of an installed CSV, as far as resolution cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CsvPhase {
    #[default]
    #[serde(rename = "Succeeded")]
    Succeeded,
    #[serde(rename = "Replacing")]
    Replacing,
    #[serde(rename = "Failed")]
    Failed,
    /// Any other phase (Pending, Installing, ...).
    #[serde(rename = "Other")]
    Other,
}

/// A (non-copied) CSV present in the namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstalledOperator {
    pub name: String,
    /// From the CSV's `olm.package` property, or inferred from the Subscription whose installedCSV it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    pub version: Version,
    #[serde(default)]
    pub provided_apis: Vec<Gvk>,
    #[serde(default)]
    pub required_apis: Vec<Gvk>,
    #[serde(default)]
    pub properties: Vec<Property>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    #[serde(default)]
    pub phase: CsvPhase,
}

/// A Subscription's spec and the part of its status the resolver reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionSpec {
    pub name: String,
    pub package: String,
    /// Empty means every channel (default channel first).
    #[serde(default)]
    pub channel: String,
    pub source: String,
    pub source_namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_csv: Option<String>,
    /// `status.installedCSV`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_csv: Option<String>,
    /// `status.currentCSV`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_csv: Option<String>,
}

impl SubscriptionSpec {
    pub fn catalog(&self) -> CatalogKey {
        CatalogKey::new(&self.source, &self.source_namespace)
    }
}

/// One namespace's resolution problem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Namespace {
    pub name: String,
    pub subscriptions: Vec<SubscriptionSpec>,
    pub installed: Vec<InstalledOperator>,
    /// Catalogs visible to the namespace: its own and the global catalog namespace.
    pub catalogs: Vec<CatalogSnapshot>,
    /// OperatorGroup `upgradeStrategy: UnsafeFailForward`.
    #[serde(default)]
    pub fail_forward: bool,
}
