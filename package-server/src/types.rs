//! The `packages.operators.coreos.com/v1` PackageManifest as OLM's packageserver serves it (field names and
//! JSON shapes of `pkg/package-server/apis/operators/v1/packagemanifest_types.go`). The OpenAPI documents are
//! generated from these types (`schema.rs`): the doc comments are the fields' descriptions, and each type's
//! `schemars(rename)` is the model name OLM's documents use.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const GROUP: &str = "packages.operators.coreos.com";
pub const VERSION: &str = "v1";
pub const API_VERSION: &str = "packages.operators.coreos.com/v1";
pub const KIND: &str = "PackageManifest";
pub const LIST_KIND: &str = "PackageManifestList";
pub const RESOURCE: &str = "packagemanifests";
pub const SINGULAR: &str = "packagemanifest";

/// PackageManifest holds information about a package, which is a reference to one (or more) channels under a single package.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifest"
)]
pub struct PackageManifest {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default)]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default)]
    pub kind: String,
    /// Standard object's metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Always empty.
    #[serde(default)]
    pub spec: PackageManifestSpec,
    /// The package as its catalog offers it: the catalog, the channels and their heads.
    #[serde(default)]
    pub status: PackageManifestStatus,
}

/// PackageManifestSpec defines the desired state of PackageManifest: always empty, as upstream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifestSpec"
)]
pub struct PackageManifestSpec {}

/// PackageManifestStatus represents the current status of the PackageManifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifestStatus"
)]
pub struct PackageManifestStatus {
    /// CatalogSource is the name of the CatalogSource this package belongs to.
    pub catalog_source: String,
    /// The display name of the CatalogSource.
    pub catalog_source_display_name: String,
    /// The publisher of the CatalogSource.
    pub catalog_source_publisher: String,
    /// CatalogSourceNamespace is the namespace of the owning CatalogSource.
    pub catalog_source_namespace: String,
    /// Provider is the provider of the PackageManifest's default CSV.
    #[serde(default)]
    pub provider: AppLink,
    /// PackageName is the name of the overall package, ala `etcd`.
    pub package_name: String,
    /// Deprecation is set when the package is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// Channels are the declared channels for the package, ala `stable` or `alpha`.
    #[serde(default)]
    pub channels: Vec<PackageChannel>,
    /// DefaultChannel is, if specified, the name of the default channel for the package. The default channel will be installed if no other channel is explicitly given. If the package has a single channel, then that channel is implicitly the default.
    pub default_channel: String,
}

/// Deprecation conveys information regarding a deprecated resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.Deprecation"
)]
pub struct Deprecation {
    /// Message is a human readable message describing the deprecation.
    pub message: String,
}

/// PackageChannel defines a single channel under a package, pointing to a version of that package.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageChannel"
)]
pub struct PackageChannel {
    /// Name is the name of the channel, e.g. `alpha` or `stable`.
    pub name: String,
    /// CurrentCSV defines a reference to the CSV holding the version of this package currently for the channel.
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    /// CurrentCSVDesc describes the channel's current CSV.
    #[serde(rename = "currentCSVDesc", default)]
    pub current_csv_desc: CsvDescription,
    /// Deprecation is set when the channel is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// Entries lists all CSVs in the channel, with their upgrade edges.
    #[serde(default)]
    pub entries: Vec<ChannelEntry>,
}

/// ChannelEntry defines a member of a package channel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.ChannelEntry"
)]
pub struct ChannelEntry {
    /// Name is the name of the bundle for this entry.
    pub name: String,
    /// Version is the version of the bundle for this entry.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Deprecation is set when the channel entry is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
}

/// CSVDescription defines a description of a CSV: what a console shows about a channel's head without reading the bundle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.CSVDescription"
)]
pub struct CsvDescription {
    /// DisplayName is the CSV's display name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Icon is the CSV's base64 encoded icon.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icon: Vec<Icon>,
    /// Version is the CSV's semantic version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Provider is the CSV's provider.
    #[serde(default)]
    pub provider: AppLink,
    /// The CSV's annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The CSV's keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// The CSV's links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<AppLink>,
    /// The CSV's maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// The CSV's maturity, e.g. `alpha` or `stable`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub maturity: String,
    /// LongDescription is the CSV's description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// InstallModes specify supported installation types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    /// The CustomResourceDefinitions the CSV owns and requires.
    #[serde(default)]
    pub customresourcedefinitions: CrdDescriptions,
    /// The APIServices the CSV owns and requires.
    #[serde(default)]
    pub apiservicedefinitions: ApiServiceDescriptions,
    /// The Kubernetes APIs the CSV needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native_apis: Vec<GroupVersionKind>,
    /// Minimum Kubernetes version for operator installation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub min_kube_version: String,
    /// List of related images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<String>,
}

/// AppLink defines a link to an application.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.AppLink"
)]
pub struct AppLink {
    /// The link's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The link's URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// Maintainer defines a project maintainer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.Maintainer"
)]
pub struct Maintainer {
    /// The maintainer's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The maintainer's email address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
}

/// Icon defines a base64 encoded icon and media type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.Icon"
)]
pub struct Icon {
    /// The icon, base64 encoded.
    #[serde(
        rename = "base64data",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub base64_data: String,
    /// The icon's media type, e.g. `image/svg+xml`.
    #[serde(
        rename = "mediatype",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub media_type: String,
}

/// InstallMode associates an InstallModeType with a flag representing if the CSV supports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.InstallMode")]
pub struct InstallMode {
    /// OwnNamespace, SingleNamespace, MultiNamespace or AllNamespaces.
    #[serde(rename = "type")]
    pub mode: String,
    /// Whether the CSV supports this install mode.
    pub supported: bool,
}

/// CustomResourceDefinitions declares all of the CRDs managed or required by an operator being ran by ClusterServiceVersion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.CustomResourceDefinitions"
)]
pub struct CrdDescriptions {
    /// The CRDs the operator owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<CrdDescription>,
    /// The CRDs the operator requires.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<CrdDescription>,
}

/// CRDDescription provides details to OLM about the CRDs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.CRDDescription")]
pub struct CrdDescription {
    /// The CRD's name, `<plural>.<group>`.
    pub name: String,
    /// The CRD version.
    pub version: String,
    /// The CRD's kind.
    pub kind: String,
    /// A human-readable name of the CRD.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// A description of the CRD.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// APIServiceDefinitions declares all of the extension apis managed or required by an operator being ran by ClusterServiceVersion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.APIServiceDefinitions"
)]
pub struct ApiServiceDescriptions {
    /// The APIServices the operator owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<ApiServiceDescription>,
    /// The APIServices the operator requires.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<ApiServiceDescription>,
}

/// APIServiceDescription provides details to OLM about apis provided via aggregation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.APIServiceDescription"
)]
pub struct ApiServiceDescription {
    /// The APIService's name.
    pub name: String,
    /// The API group served.
    pub group: String,
    /// The API version served.
    pub version: String,
    /// The kind served.
    pub kind: String,
    /// A human-readable name of the API.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// A description of the API.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// GroupVersionKind unambiguously identifies a kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.k8s.apimachinery.pkg.apis.meta.v1.GroupVersionKind")]
pub struct GroupVersionKind {
    /// The API group.
    #[serde(default)]
    pub group: String,
    /// The API version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
}

/// PackageManifestList is a list of PackageManifest objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifestList"
)]
pub struct PackageManifestList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default)]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default)]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The PackageManifests.
    pub items: Vec<PackageManifest>,
}
