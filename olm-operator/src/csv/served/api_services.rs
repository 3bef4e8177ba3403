//! A CSV's owned APIServices, pure: the object OLM creates (`<version>.<group>`, group priority 2000,
//! version priority 15, the Service of the serving deployment at its `containerPort`, the CA bundle, owner
//! labels and `olm.managed=true`), and OLM's adoption rule (`IsAPIServiceAdoptable`): an existing
//! APIService may be taken over only when its owner labels name this CSV, the CSV it replaces, or a current
//! owner that is itself Replacing or Deleting. Anything else is an owner conflict (reason `OwnerConflict`,
//! message "unable to adopt APIService").

use super::plan;
use crate::strategy::owner_labels;
use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use messages::crd::annotations;
use messages::crd::csv::{ApiServiceDescription, ClusterServiceVersion, CsvPhase};
use std::collections::BTreeMap;

/// The owned descriptions.
pub fn owned(csv: &ClusterServiceVersion) -> Vec<ApiServiceDescription> {
    csv.spec
        .api_service_definitions
        .as_ref()
        .and_then(|d| d.owned.clone())
        .unwrap_or_default()
}

/// The APIService for `desc`, served by the CSV in `namespace`, trusting `ca`. `annotations` are the
/// installing Subscription's `spec.config.annotations` (OLM sets them on creation).
pub fn build(
    csv_name: &str,
    namespace: &str,
    desc: &ApiServiceDescription,
    ca: &[u8],
    annotations: Option<BTreeMap<String, String>>,
) -> APIService {
    APIService {
        metadata: ObjectMeta {
            name: Some(desc.api_service_name()),
            labels: Some(owner_labels(csv_name, namespace)),
            annotations,
            ..ObjectMeta::default()
        },
        spec: Some(APIServiceSpec {
            group: Some(desc.group.clone()),
            version: Some(desc.version.clone()),
            group_priority_minimum: 2000,
            version_priority: 15,
            service: Some(ServiceReference {
                name: Some(plan::service_name(
                    desc.deployment_name.as_deref().unwrap_or_default(),
                )),
                namespace: Some(namespace.into()),
                port: Some(desc.container_port.filter(|p| *p > 0).unwrap_or(443)),
            }),
            ca_bundle: Some(ByteString(ca.to_vec())),
            insecure_skip_tls_verify: None,
        }),
        status: None,
    }
}

/// The CSV that may already own an APIService: its name and phase when it exists.
pub struct Owners<'a> {
    pub csv_name: &'a str,
    pub namespace: &'a str,
    /// The CSV `spec.replaces` names, when it exists.
    pub replaces: Option<&'a str>,
    /// The phase of the CSV the APIService's owner labels name, when that CSV exists.
    pub current_owner_phase: Option<CsvPhase>,
}

/// OLM's `IsAPIServiceAdoptable` over the live APIService's labels.
pub fn adoptable(labels: Option<&BTreeMap<String, String>>, owners: &Owners<'_>) -> bool {
    let get = |k: &str| {
        labels
            .and_then(|l| l.get(k))
            .map(String::as_str)
            .unwrap_or_default()
    };
    let (kind, name, namespace) = (
        get(annotations::OWNER_KIND),
        get(annotations::OWNER),
        get(annotations::OWNER_NAMESPACE),
    );
    if kind.is_empty() || name.is_empty() || namespace.is_empty() {
        return false;
    }
    if kind != "ClusterServiceVersion" {
        return false;
    }
    let ours =
        namespace == owners.namespace && (name == owners.csv_name || Some(name) == owners.replaces);
    let leaving = matches!(
        owners.current_owner_phase,
        Some(CsvPhase::Replacing | CsvPhase::Deleting)
    );
    ours || leaving
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn labels(kind: &str, name: &str, namespace: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (annotations::OWNER_KIND.to_string(), kind.to_string()),
            (annotations::OWNER.to_string(), name.to_string()),
            (
                annotations::OWNER_NAMESPACE.to_string(),
                namespace.to_string(),
            ),
        ])
    }

    #[rstest]
    #[case::its_own(Some(labels("ClusterServiceVersion", "op.v2", "ns")), None, true)]
    #[case::the_csv_it_replaces(Some(labels("ClusterServiceVersion", "op.v1", "ns")), None, true)]
    #[case::another_csv(
        Some(labels("ClusterServiceVersion", "other.v1", "ns")),
        Some(CsvPhase::Succeeded),
        false
    )]
    #[case::another_csv_being_replaced(
        Some(labels("ClusterServiceVersion", "other.v1", "ns")),
        Some(CsvPhase::Replacing),
        true
    )]
    #[case::the_same_name_in_another_namespace(
        Some(labels("ClusterServiceVersion", "op.v2", "elsewhere")),
        Some(CsvPhase::Succeeded),
        false
    )]
    #[case::no_owner_labels(None, None, false)]
    #[case::another_kind(Some(labels("Deployment", "op.v2", "ns")), None, false)]
    fn adoption_follows_olm(
        #[case] live: Option<BTreeMap<String, String>>,
        #[case] owner_phase: Option<CsvPhase>,
        #[case] expected: bool,
    ) {
        let owners = Owners {
            csv_name: "op.v2",
            namespace: "ns",
            replaces: Some("op.v1"),
            current_owner_phase: owner_phase,
        };
        assert_eq!(adoptable(live.as_ref(), &owners), expected);
    }

    #[test]
    fn the_api_service_points_at_the_deployment_service_with_the_ca() {
        let desc = ApiServiceDescription {
            name: "widgets".into(),
            group: "x.io".into(),
            version: "v1alpha1".into(),
            kind: "Widget".into(),
            deployment_name: Some("api.server".into()),
            container_port: Some(5443),
            ..ApiServiceDescription::default()
        };
        let a = build("op.v1", "ns", &desc, b"CA", None);
        assert_eq!(a.metadata.name.as_deref(), Some("v1alpha1.x.io"));
        assert_eq!(
            a.metadata
                .labels
                .expect("labels")
                .get(annotations::OWNER)
                .map(String::as_str),
            Some("op.v1")
        );
        let spec = a.spec.expect("spec");
        assert_eq!(
            (spec.group_priority_minimum, spec.version_priority),
            (2000, 15)
        );
        let service = spec.service.expect("service");
        assert_eq!(
            (
                service.name.as_deref(),
                service.namespace.as_deref(),
                service.port
            ),
            (Some("api-server-service"), Some("ns"), Some(5443))
        );
        assert_eq!(spec.ca_bundle, Some(ByteString(b"CA".to_vec())));
    }
}
