//! A channel head's CSV (the `csvJson` of `GetBundleForChannel`) read into `currentCSVDesc`, as OLM's
//! `CreateCSVDescription` does: display fields, CRD and APIService descriptions trimmed to their names and
//! texts, and the related images (operator deployments' containers plus `spec.relatedImages`). Every field is
//! optional; a CSV that is not JSON, or whose fields have the wrong types, is an error (its channel is elided).

use crate::types::{
    ApiServiceDescription, ApiServiceDescriptions, AppLink, CrdDescription, CrdDescriptions,
    CsvDescription, GroupVersionKind, Icon, InstallMode, Maintainer,
};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The parts of a CSV the PackageManifest shows.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CsvView {
    pub metadata: CsvMeta,
    pub spec: CsvSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CsvMeta {
    pub name: String,
    pub annotations: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CsvSpec {
    display_name: String,
    description: String,
    version: String,
    pub provider: AppLink,
    keywords: Vec<String>,
    links: Vec<AppLink>,
    maintainers: Vec<Maintainer>,
    maturity: String,
    icon: Vec<CsvIcon>,
    install_modes: Vec<InstallMode>,
    customresourcedefinitions: CrdDescriptions,
    apiservicedefinitions: ApiServiceDescriptions,
    #[serde(rename = "nativeAPIs")]
    native_apis: Vec<GroupVersionKind>,
    min_kube_version: String,
    related_images: Vec<RelatedImage>,
    install: Install,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CsvIcon {
    base64data: String,
    mediatype: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RelatedImage {
    image: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Install {
    spec: InstallSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InstallSpec {
    deployments: Vec<StrategyDeployment>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StrategyDeployment {
    spec: DeploymentSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeploymentSpec {
    template: PodTemplate,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PodTemplate {
    spec: PodSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PodSpec {
    containers: Vec<Container>,
    init_containers: Vec<Container>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Container {
    image: String,
}

/// Parse a bundle's `csvJson`.
/// The CSV as OLM v0's package-server reads it: Go's decoding rules ([`messages::go_json`]), so a `null` list or
/// map (what Go writes for an empty one: `opm serve` sends CSVs it re-encoded from `olm.csv.metadata`) is empty.
pub fn parse(csv_json: &str) -> Result<CsvView, messages::go_json::DecodeError> {
    let value: serde_json::Value =
        serde_json::from_str(csv_json).map_err(|e| messages::go_json::DecodeError {
            path: String::new(),
            message: format!("not JSON: {e}"),
        })?;
    messages::go_json::from_value(&value)
}

impl CsvView {
    /// `currentCSVDesc` of a channel whose head is this CSV.
    pub fn description(&self) -> CsvDescription {
        let s = &self.spec;
        let trim_crd = |c: &CrdDescription| CrdDescription {
            name: c.name.clone(),
            version: c.version.clone(),
            kind: c.kind.clone(),
            display_name: c.display_name.clone(),
            description: c.description.clone(),
        };
        let trim_api = |a: &ApiServiceDescription| ApiServiceDescription {
            name: a.name.clone(),
            group: a.group.clone(),
            version: a.version.clone(),
            kind: a.kind.clone(),
            display_name: a.display_name.clone(),
            description: a.description.clone(),
        };
        CsvDescription {
            display_name: s.display_name.clone(),
            icon: s
                .icon
                .iter()
                .map(|i| Icon {
                    base64_data: i.base64data.clone(),
                    media_type: i.mediatype.clone(),
                })
                .collect(),
            version: s.version.clone(),
            provider: s.provider.clone(),
            annotations: self.metadata.annotations.clone(),
            keywords: s.keywords.clone(),
            links: s.links.clone(),
            maintainers: s.maintainers.clone(),
            maturity: s.maturity.clone(),
            description: s.description.clone(),
            install_modes: s.install_modes.clone(),
            customresourcedefinitions: CrdDescriptions {
                owned: s
                    .customresourcedefinitions
                    .owned
                    .iter()
                    .map(trim_crd)
                    .collect(),
                required: s
                    .customresourcedefinitions
                    .required
                    .iter()
                    .map(trim_crd)
                    .collect(),
            },
            apiservicedefinitions: ApiServiceDescriptions {
                owned: s.apiservicedefinitions.owned.iter().map(trim_api).collect(),
                required: s
                    .apiservicedefinitions
                    .required
                    .iter()
                    .map(trim_api)
                    .collect(),
            },
            native_apis: s.native_apis.clone(),
            min_kube_version: s.min_kube_version.clone(),
            related_images: self.images(),
        }
    }

    /// The operator's own images and its related images, sorted, each once.
    fn images(&self) -> Vec<String> {
        let s = &self.spec;
        let operator = s.install.spec.deployments.iter().flat_map(|d| {
            let pod = &d.spec.template.spec;
            pod.containers.iter().chain(pod.init_containers.iter())
        });
        operator
            .map(|c| c.image.as_str())
            .chain(s.related_images.iter().map(|r| r.image.as_str()))
            .filter(|i| !i.is_empty())
            .map(str::to_string)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const FULL: &str = r#"{"metadata":{"name":"etcd.v0.9.2","annotations":{"alm-examples":"[]","categories":"Database"},
      "labels":{"operatorframework.io/arch.arm64":"supported"}},
      "spec":{"displayName":"etcd","description":"A key value store","version":"0.9.2",
        "provider":{"name":"CNCF","url":"https://cncf.io"},"keywords":["etcd","kv"],"maturity":"alpha",
        "icon":[{"base64data":"iVBO","mediatype":"image/png"}],
        "installModes":[{"type":"OwnNamespace","supported":true},{"type":"AllNamespaces","supported":false}],
        "customresourcedefinitions":{"owned":[{"name":"etcdclusters.etcd.database.coreos.com","version":"v1beta2",
          "kind":"EtcdCluster","displayName":"etcd Cluster","description":"Represents a cluster","specDescriptors":[{"path":"size"}]}]},
        "relatedImages":[{"name":"backup","image":"quay.io/coreos/etcd-backup:1"}],
        "install":{"strategy":"deployment","spec":{"deployments":[{"name":"etcd-operator","spec":{"template":{"spec":{
          "containers":[{"name":"etcd-operator","image":"quay.io/coreos/etcd-operator:0.9.2"}],
          "initContainers":[{"name":"init","image":"quay.io/coreos/etcd-backup:1"}]}}}}]}}}}"#;

    #[test]
    fn a_full_csv_gives_every_description_field_with_crds_trimmed() {
        let view = parse(FULL).expect("parse");
        let d = view.description();
        assert_eq!(view.metadata.name, "etcd.v0.9.2");
        assert_eq!(d.display_name, "etcd");
        assert_eq!(d.version, "0.9.2");
        assert_eq!(d.provider.name, "CNCF");
        assert_eq!(
            d.annotations.get("alm-examples").map(String::as_str),
            Some("[]")
        );
        assert_eq!(d.install_modes.len(), 2);
        assert_eq!(d.customresourcedefinitions.owned[0].kind, "EtcdCluster");
        let json = serde_json::to_value(&d).expect("json");
        assert!(
            json["customresourcedefinitions"]["owned"][0]
                .get("specDescriptors")
                .is_none()
        );
        assert_eq!(
            d.related_images,
            [
                "quay.io/coreos/etcd-backup:1",
                "quay.io/coreos/etcd-operator:0.9.2"
            ]
        );
        assert_eq!(d.icon[0].media_type, "image/png");
    }

    #[rstest]
    #[case::not_json("{", true)]
    #[case::wrong_type(r#"{"spec":{"version":3}}"#, true)]
    #[case::empty_object("{}", false)]
    #[case::unknown_fields(r#"{"spec":{"whatever":{"a":1}}}"#, false)]
    #[case::go_nulls_as_opm_serve_sends_them(
        r#"{"metadata":{"annotations":null},"spec":{"keywords":null,"maintainers":null,"installModes":null,"icon":null,"customresourcedefinitions":{"owned":null}}}"#,
        false
    )]
    fn bad_csvs_are_errors_and_sparse_ones_are_fine(#[case] json: &str, #[case] fails: bool) {
        assert_eq!(parse(json).is_err(), fails);
    }
}
