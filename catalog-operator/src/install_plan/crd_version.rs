//! The apiextensions API a CustomResourceDefinition step is written for, and what that means on this cluster
//! (OLM `pkg/lib/crd/version.go` `Version`, `catalog/step.go` `builder.create`). OLM v0 converts nothing: the
//! manifest's `apiVersion` picks the client, v1 manifests go through `apiextensions.k8s.io/v1`, v1beta1 manifests
//! through `apiextensions.k8s.io/v1beta1`, anything else fails with "CRD APIVersion from manifest not supported".
//! Kubernetes 1.22 and later do not serve v1beta1: OLM's create then answers 404 and its discovery check turns it
//! into the not-found error of [`super::not_served`]. We decide the same before creating anything. Pure.

use super::not_served;
use messages::crd::install_plan::Step;
use serde_json::Value;

/// The apiextensions version a CRD manifest is written in (OLM `crdlib.V1Version` / `V1Beta1Version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrdApi {
    V1,
    V1Beta1,
}

impl CrdApi {
    pub fn version(self) -> &'static str {
        match self {
            CrdApi::V1 => "v1",
            CrdApi::V1Beta1 => "v1beta1",
        }
    }
}

/// What to do with a CRD step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrdStep {
    /// Create or update it through `apiextensions.k8s.io/<version>`, the manifest as written.
    Apply(CrdApi),
    /// Do not send it; fail the pass with this message (retried until the plan's retry window ends).
    Refuse(String),
}

/// OLM `crdlib.Version`: only the version part of the manifest's `apiVersion` counts.
pub fn of_manifest(obj: &Value) -> Result<CrdApi, String> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    match version {
        "v1" => Ok(CrdApi::V1),
        "v1beta1" => Ok(CrdApi::V1Beta1),
        other => Err(format!(
            "CRD APIVersion from manifest not supported: {other}"
        )),
    }
}

/// The decision for one CRD step, given whether the cluster serves `apiextensions.k8s.io/v1beta1`
/// CustomResourceDefinitions (no Kubernetes since 1.22 does; v1 is served by every version we support).
pub fn decide(step: &Step, v1beta1_served: bool) -> CrdStep {
    let obj: Value = match serde_json::from_str(&step.resource.manifest) {
        Ok(obj) => obj,
        Err(e) => {
            return CrdStep::Refuse(format!(
                "the InstallPlan contains invalid data: step {}: {e}",
                step.resource.name
            ));
        }
    };
    match of_manifest(&obj) {
        Ok(CrdApi::V1) => CrdStep::Apply(CrdApi::V1),
        Ok(CrdApi::V1Beta1) if v1beta1_served => CrdStep::Apply(CrdApi::V1Beta1),
        Ok(CrdApi::V1Beta1) => CrdStep::Refuse(not_served::message(
            step,
            "apiextensions.k8s.io",
            CrdApi::V1Beta1.version(),
        )),
        Err(message) => CrdStep::Refuse(message),
    }
}

/// Whether the step's manifest is written as `apiextensions.k8s.io/v1beta1` (the one case that needs discovery).
pub fn is_v1beta1(step: &Step) -> bool {
    serde_json::from_str::<Value>(&step.resource.manifest)
        .is_ok_and(|obj| of_manifest(&obj) == Ok(CrdApi::V1Beta1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::{StepResource, StepStatus};
    use rstest::rstest;

    /// A CRD step as `steps.rs` builds it from a bundle's YAML manifest (the step carries JSON).
    fn crd_step(resolving: &str, yaml: &str) -> Step {
        let docs = catalog::yaml::parse_yaml_documents(yaml).expect("fixture is YAML");
        let obj = docs.into_iter().next().expect("one document");
        let (group, version) =
            crate::steps::group_version(obj["apiVersion"].as_str().unwrap_or_default());
        Step {
            resolving: resolving.into(),
            resource: StepResource {
                group,
                version,
                kind: "CustomResourceDefinition".into(),
                name: obj["metadata"]["name"].as_str().unwrap_or_default().into(),
                manifest: obj.to_string(),
                ..Default::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    const ETCD_V1BETA1: &str = include_str!("../../tests/fixtures/crds/etcdbackups.v1beta1.yaml");
    const ETCD_V1: &str = include_str!("../../tests/fixtures/crds/etcdbackups.v1.yaml");
    const APICURITO: &str = include_str!("../../tests/fixtures/crds/apicuritos.v1beta1.yaml");
    const COCKROACH: &str = include_str!("../../tests/fixtures/crds/cockroachdbs.v1beta1.yaml");
    const AQUA: &str = include_str!("../../tests/fixtures/crds/aquakubeenforcers.v1beta1.yaml");

    fn refused(bundle: &str, crd: &str) -> CrdStep {
        CrdStep::Refuse(format!(
            "api-server resource not found installing CustomResourceDefinition {crd}: GroupVersionKind \
             apiextensions.k8s.io/v1beta1, Kind=CustomResourceDefinition not found on the cluster. This API may have \
             been deprecated and removed, see https://kubernetes.io/docs/reference/using-api/deprecation-guide/ for \
             more information. Bundle {bundle} ships CustomResourceDefinition {crd} as apiextensions.k8s.io/v1beta1, \
             which Kubernetes 1.22 and later no longer serve, so it cannot be installed on this cluster; a version \
             of the operator whose CRDs are apiextensions.k8s.io/v1 can."
        ))
    }

    #[rstest]
    #[case::a_v1_crd_is_applied_as_v1(
        "etcdoperator.v0.9.4",
        ETCD_V1,
        false,
        CrdStep::Apply(CrdApi::V1)
    )]
    #[case::a_v1_crd_is_applied_as_v1_where_v1beta1_is_still_served(
        "etcdoperator.v0.9.4",
        ETCD_V1,
        true,
        CrdStep::Apply(CrdApi::V1)
    )]
    #[case::a_v1beta1_crd_with_only_spec_version_is_refused(
        "etcdoperator.v0.9.2",
        ETCD_V1BETA1,
        false,
        refused("etcdoperator.v0.9.2", "etcdbackups.etcd.database.coreos.com")
    )]
    #[case::a_v1beta1_crd_with_validation_and_versions_is_refused(
        "apicuritooperator.v0.1.0",
        APICURITO,
        false,
        refused("apicuritooperator.v0.1.0", "apicuritos.apicur.io")
    )]
    #[case::a_v1beta1_crd_with_a_status_subresource_is_refused(
        "cockroachdb.v2.0.9",
        COCKROACH,
        false,
        refused("cockroachdb.v2.0.9", "cockroachdbs.charts.helm.k8s.io")
    )]
    #[case::a_v1beta1_crd_with_kind_first_and_conversion_none_is_refused(
        "aqua-operator.v5.3.0",
        AQUA,
        false,
        refused("aqua-operator.v5.3.0", "aquakubeenforcers.operator.aquasec.com")
    )]
    #[case::a_v1beta1_crd_is_applied_as_written_where_v1beta1_is_served(
        "etcdoperator.v0.9.2",
        ETCD_V1BETA1,
        true,
        CrdStep::Apply(CrdApi::V1Beta1)
    )]
    fn a_real_crd_step_is_applied_or_refused_by_its_apiextensions_version(
        #[case] bundle: &str,
        #[case] yaml: &str,
        #[case] v1beta1_served: bool,
        #[case] want: CrdStep,
    ) {
        assert_eq!(decide(&crd_step(bundle, yaml), v1beta1_served), want);
    }

    #[rstest]
    #[case::an_apiextensions_version_olm_does_not_know(
        r#"{"apiVersion":"apiextensions.k8s.io/v1alpha1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"}}"#,
        "CRD APIVersion from manifest not supported: v1alpha1"
    )]
    #[case::a_manifest_without_api_version(
        r#"{"kind":"CustomResourceDefinition","metadata":{"name":"a.b"}}"#,
        "CRD APIVersion from manifest not supported: "
    )]
    fn a_crd_manifest_olm_cannot_read_is_refused_with_olms_words(
        #[case] manifest: &str,
        #[case] want: &str,
    ) {
        let mut s = crd_step("a.v1", ETCD_V1);
        s.resource.manifest = manifest.into();
        assert_eq!(decide(&s, false), CrdStep::Refuse(want.into()));
    }

    #[test]
    fn a_manifest_that_is_not_json_is_invalid_data() {
        let mut s = crd_step("a.v1", ETCD_V1);
        s.resource.manifest = "apiVersion: [".into();
        let CrdStep::Refuse(message) = decide(&s, false) else {
            panic!("applied a manifest that is not JSON");
        };
        assert!(
            message.starts_with("the InstallPlan contains invalid data: "),
            "{message}"
        );
    }
}
