//! The `packages.operators.coreos.com/v1` PackageManifest as OLM's packageserver serves it (field names and
//! JSON shapes of `pkg/package-server/apis/operators/v1/packagemanifest_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const GROUP: &str = "packages.operators.coreos.com";
pub const VERSION: &str = "v1";
pub const API_VERSION: &str = "packages.operators.coreos.com/v1";
pub const KIND: &str = "PackageManifest";
pub const LIST_KIND: &str = "PackageManifestList";
pub const RESOURCE: &str = "packagemanifests";
pub const SINGULAR: &str = "packagemanifest";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifest {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PackageManifestSpec,
    #[serde(default)]
    pub status: PackageManifestStatus,
}

/// Always empty, as upstream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PackageManifestSpec {}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifestStatus {
    pub catalog_source: String,
    pub catalog_source_display_name: String,
    pub catalog_source_publisher: String,
    pub catalog_source_namespace: String,
    #[serde(default)]
    pub provider: AppLink,
    pub package_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    #[serde(default)]
    pub channels: Vec<PackageChannel>,
    pub default_channel: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Deprecation {
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageChannel {
    pub name: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    #[serde(rename = "currentCSVDesc", default)]
    pub current_csv_desc: CsvDescription,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    #[serde(default)]
    pub entries: Vec<ChannelEntry>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelEntry {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
}

/// `currentCSVDesc`: what a console shows about a channel's head without reading the bundle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvDescription {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icon: Vec<Icon>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default)]
    pub provider: AppLink,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<AppLink>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub maturity: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    #[serde(default)]
    pub customresourcedefinitions: CrdDescriptions,
    #[serde(default)]
    pub apiservicedefinitions: ApiServiceDescriptions,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native_apis: Vec<GroupVersionKind>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub min_kube_version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppLink {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    #[serde(
        rename = "base64data",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub base64_data: String,
    #[serde(
        rename = "mediatype",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub media_type: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstallMode {
    #[serde(rename = "type")]
    pub mode: String,
    pub supported: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CrdDescriptions {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<CrdDescription>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<CrdDescription>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    pub name: String,
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiServiceDescriptions {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<ApiServiceDescription>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<ApiServiceDescription>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDescription {
    pub name: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifestList {
    pub api_version: String,
    pub kind: String,
    pub metadata: ListMeta,
    pub items: Vec<PackageManifest>,
}
