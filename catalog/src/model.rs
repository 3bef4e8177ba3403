//! The in-memory catalog model: packages, channels (with their upgrade edges) and bundles.
//!
//! Every loader (FBC, package manifests, registry+v1 bundle folders, ConfigMaps) produces this
//! same model. Bundle manifests stay inline as `olm.bundle.object` properties (base64 of the
//! manifest JSON), exactly as FBC stores them, so a server needs no image unpacking.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::property::{self, PackageValue, PropertyType};

/// Where a piece of the catalog came from: a file and the 1-based index of the document in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: Arc<Path>,
    pub doc: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (document {})", self.file.display(), self.doc)
    }
}

/// A whole catalog: packages by name, plus blobs of custom (non-`olm.*`) schemas.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub packages: BTreeMap<String, Package>,
    pub custom: Vec<CustomBlob>,
    /// Changes a loader made to legacy content to fit the model (shown as warnings).
    pub notes: Vec<String>,
}

/// A document with a schema the catalog does not interpret (served by the experimental RPC).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomBlob {
    pub schema: String,
    /// The package it belongs to (`name` for an `olm.package`-like blob, else `package`); may be empty.
    pub package: String,
    pub blob: Value,
    pub origin: Option<Origin>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icon {
    pub base64data: String,
    pub mediatype: String,
}

#[derive(Debug, Clone)]
pub struct Package {
    pub name: String,
    pub default_channel: String,
    pub description: Option<String>,
    pub icon: Option<Icon>,
    pub properties: Vec<Property>,
    pub deprecation: Option<String>,
    pub channels: BTreeMap<String, Channel>,
    pub bundles: BTreeMap<String, Bundle>,
    pub origin: Option<Origin>,
}

impl Package {
    pub fn new(name: impl Into<String>) -> Self {
        Package {
            name: name.into(),
            default_channel: String::new(),
            description: None,
            icon: None,
            properties: Vec::new(),
            deprecation: None,
            channels: BTreeMap::new(),
            bundles: BTreeMap::new(),
            origin: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub entries: Vec<ChannelEntry>,
    pub deprecation: Option<String>,
    pub origin: Option<Origin>,
}

impl Channel {
    pub fn new(name: impl Into<String>) -> Self {
        Channel {
            name: name.into(),
            entries: Vec::new(),
            deprecation: None,
            origin: None,
        }
    }

    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Entries that are never the target of another entry's `replaces` or `skips`.
    /// A valid channel has exactly one (see `crate::graph`).
    pub fn heads(&self) -> Vec<&ChannelEntry> {
        let replaced: std::collections::HashSet<&str> = self
            .entries
            .iter()
            .flat_map(|e| e.replaces.iter().chain(e.skips.iter()))
            .map(String::as_str)
            .collect();
        self.entries
            .iter()
            .filter(|e| !replaced.contains(e.name.as_str()))
            .collect()
    }

    /// The single head, if there is exactly one.
    pub fn head(&self) -> Option<&ChannelEntry> {
        match self.heads().as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
}

/// One bundle's membership in a channel, with its upgrade edges in that channel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChannelEntry {
    pub name: String,
    pub replaces: Option<String>,
    pub skips: Vec<String>,
    pub skip_range: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedImage {
    pub name: String,
    pub image: String,
}

#[derive(Debug, Clone)]
pub struct Bundle {
    pub name: String,
    pub package: String,
    pub image: String,
    pub properties: Vec<Property>,
    pub related_images: Vec<RelatedImage>,
    pub deprecation: Option<String>,
    pub origin: Option<Origin>,
}

/// A bundle property: a type and any JSON value.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub type_: String,
    pub value: Value,
}

impl Property {
    pub fn new(kind: PropertyType, value: Value) -> Self {
        Property {
            type_: kind.as_str().to_string(),
            value,
        }
    }

    pub fn kind(&self) -> PropertyType {
        PropertyType::from_wire(&self.type_)
    }
}

impl Bundle {
    pub fn properties_of(&self, kind: PropertyType) -> impl Iterator<Item = &Property> {
        self.properties.iter().filter(move |p| p.kind() == kind)
    }

    /// The `olm.package` property, when there is exactly one and it parses.
    pub fn package_property(&self) -> Option<PackageValue> {
        let mut it = self.properties_of(PropertyType::Package);
        match (it.next(), it.next()) {
            (Some(p), None) => property::package_value(&p.value).ok(),
            _ => None,
        }
    }

    /// The version string from `olm.package` (empty if missing).
    pub fn version(&self) -> String {
        self.package_property()
            .map(|p| p.version)
            .unwrap_or_default()
    }

    /// Decoded inline manifests (`olm.bundle.object`), as JSON strings, in property order.
    /// Undecodable objects are reported by validation and skipped here.
    pub fn objects(&self) -> Vec<String> {
        self.properties_of(PropertyType::BundleObject)
            .filter_map(|p| property::bundle_object_json(&p.value).ok())
            .collect()
    }

    pub fn has_objects(&self) -> bool {
        self.properties_of(PropertyType::BundleObject)
            .next()
            .is_some()
    }
}

impl Catalog {
    pub fn bundle_count(&self) -> usize {
        self.packages.values().map(|p| p.bundles.len()).sum()
    }

    pub fn channel_count(&self) -> usize {
        self.packages.values().map(|p| p.channels.len()).sum()
    }

    /// Adds the packages of `other`; a package already present is an error (returned as its name).
    pub fn merge(&mut self, other: Catalog) -> Result<(), String> {
        for (name, pkg) in other.packages {
            if self.packages.contains_key(&name) {
                return Err(name);
            }
            self.packages.insert(name, pkg);
        }
        self.custom.extend(other.custom);
        self.notes.extend(other.notes);
        Ok(())
    }
}
