//! ClusterServiceVersion (`operators.coreos.com/v1alpha1`, namespaced): the custom resource and
//! its spec (API `clusterserviceversion_types.go`, spec §1.1).
//!
//! Fields that Go marks `omitempty` are `Option`s here so that an explicit empty value read from
//! the cluster is written back unchanged; fields Go always writes are plain values.

mod descriptions;
mod install;
mod install_modes;
mod status;

pub use descriptions::*;
pub use install::*;
pub use install_modes::*;
pub use status::*;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Name of the only install strategy OLM knows.
pub const INSTALL_STRATEGY_NAME_DEPLOYMENT: &str = "deployment";
/// Conditions kept in `status.conditions` (`ConditionsLengthLimit`).
pub const CONDITIONS_LENGTH_LIMIT: usize = 20;

/// `spec` of a ClusterServiceVersion.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "ClusterServiceVersion",
    plural = "clusterserviceversions",
    singular = "clusterserviceversion",
    namespaced,
    status = "ClusterServiceVersionStatus",
    shortname = "csv",
    shortname = "csvs",
    category = "olm",
    derive = "PartialEq",
    doc = "ClusterServiceVersion is a Custom Resource of type `ClusterServiceVersionSpec`.",
    printcolumn = r#"{"name":"Display","type":"string","description":"The name of the CSV","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Version","type":"string","description":"The version of the CSV","jsonPath":".spec.version"}"#,
    printcolumn = r#"{"name":"Replaces","type":"string","description":"The name of a CSV that this one replaces","jsonPath":".spec.replaces"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionSpec {
    /// How to install the operator (`install.strategy: deployment`). Go always writes it;
    /// a missing one (test fixtures) reads as empty.
    #[serde(rename = "install", default)]
    pub install: NamedInstallStrategy,
    /// The operator's semantic version, kept as the string read; see [`ClusterServiceVersion::semver`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_string::option"
    )]
    pub version: Option<String>,
    /// Optional release qualifier (`OperatorRelease`, newer API field; no OLM logic reads it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_string::option"
    )]
    pub release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    #[serde(
        rename = "customresourcedefinitions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub custom_resource_definitions: Option<CustomResourceDefinitions>,
    #[serde(
        rename = "apiservicedefinitions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_service_definitions: Option<ApiServiceDefinitions>,
    #[serde(
        rename = "webhookdefinitions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub webhook_definitions: Option<Vec<WebhookDescription>>,
    #[serde(
        rename = "nativeAPIs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub native_apis: Option<Vec<GroupVersionKind>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_string::option"
    )]
    pub min_kube_version: Option<String>,
    /// Human-readable name; Go always writes it.
    #[serde(default)]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainers: Option<Vec<Maintainer>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AppLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<AppLink>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Vec<Icon>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_modes: Option<Vec<InstallMode>>,
    /// Name of the CSV this one replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Declared in the API, read by no OLM controller (spec §1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupSpec>,
    /// Names of CSVs this one may skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skips: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_images: Option<Vec<RelatedImage>>,
}

/// `spec.nativeAPIs[]` (metav1 `GroupVersionKind`, which k8s-openapi does not model).
#[derive(
    Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema,
)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Maintainer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AppLink {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Icon {
    #[serde(rename = "base64data", default)]
    pub data: String,
    #[serde(rename = "mediatype", default)]
    pub media_type: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedImage {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub image: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct CleanupSpec {
    #[serde(default)]
    pub enabled: bool,
}

/// Errors of CSV helpers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("spec.version is not set")]
    MissingVersion,
    #[error("spec.version {version:?} is not a semantic version")]
    InvalidVersion {
        version: String,
        #[source]
        source: semver::Error,
    },
}

impl ClusterServiceVersion {
    /// `spec.version` parsed as semver. A bad value is a status problem, never a decode error.
    pub fn semver(&self) -> Result<semver::Version, Error> {
        let raw = self.spec.version.as_deref().ok_or(Error::MissingVersion)?;
        semver::Version::parse(raw).map_err(|source| Error::InvalidVersion {
            version: raw.to_owned(),
            source,
        })
    }
}

/// Deserializers that accept a YAML scalar where Go's `sigs.k8s.io/yaml` would give a string.
///
/// Go's YAML decoder turns an unquoted scalar into a string when the Go field is a string
/// (`version: 1.0` reads as `"1.0"`). Our corpus goes YAML → JSON value → type, so a number or
/// bool may arrive here for a string field; we keep its text.
pub mod lenient_string {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Str(String),
        Int(i64),
        Uint(u64),
        Float(f64),
        Bool(bool),
    }

    /// An optional string that may have been written as a number or bool.
    pub fn option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
        let value = Option::<Scalar>::deserialize(deserializer)?;
        Ok(value.map(|scalar| match scalar {
            Scalar::Str(s) => s,
            Scalar::Int(i) => i.to_string(),
            Scalar::Uint(u) => u.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_semver_parses(serde_json::json!("1.2.3"), Some("1.2.3"))]
    #[case::a_prerelease_parses(serde_json::json!("0.1.0-alpha.1"), Some("0.1.0-alpha.1"))]
    #[case::a_two_part_version_is_kept_but_not_semver(serde_json::json!("1.2"), None)]
    #[case::a_yaml_number_is_kept_as_text(serde_json::json!(2), None)]
    fn version_decodes_anything_and_semver_reports_errors(
        #[case] raw: serde_json::Value,
        #[case] semver: Option<&str>,
    ) {
        let spec = serde_json::json!({"displayName": "x", "install": {"strategy": "deployment"}, "version": raw});
        let csv = ClusterServiceVersion::new("a", serde_json::from_value(spec).expect("decodes"));
        assert!(csv.spec.version.is_some());
        assert_eq!(csv.semver().ok().map(|v| v.to_string()).as_deref(), semver);
    }
}
