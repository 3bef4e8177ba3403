//! Steps whose API the cluster does not serve (OLM `pkg/controller/operators/catalog/not_found.go`): when a
//! step's request answers 404 and discovery does not list the step's GroupVersionKind, OLM fails the pass with
//! its `gvkNotFoundError`, retried like any step error until `--install-plan-retry-timeout`, then the plan is
//! `Failed` with reason `InstallComponentFailed`. Its text is kept word for word here; for a CustomResourceDefinition
//! written as `apiextensions.k8s.io/v1beta1` (which Kubernetes 1.22 and later no longer serve) one sentence names
//! the bundle that ships it and says why it cannot install. Pure.

use messages::crd::install_plan::Step;
use olm_runtime::error::{self as api_error, Class};

/// The API version OLM v0 still knows for CRDs but current Kubernetes no longer serves.
pub const V1BETA1_CRD_API: &str = "apiextensions.k8s.io/v1beta1";

/// kube's answer when discovery does not serve a GroupVersionKind: the group/version is unknown (404), or it is
/// served without the kind.
pub fn is_not_served(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => api_error::classify_status(s) == Class::NotFound,
        kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(_)) => true,
        _ => false,
    }
}

/// Go's `schema.GroupVersionKind.String()`: `group/version, Kind=Kind` (the core group prints as `/v1`).
fn gvk_text(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// OLM's `gvkNotFoundError` for the step as written, then, for a v1beta1 CRD, which bundle ships it and why it
/// cannot be installed. `version` is the API version the step was applied with (for CRDs, the manifest's).
pub fn message(step: &Step, group: &str, version: &str) -> String {
    let kind = step.resource.kind.as_str();
    let name = step.resource.name.as_str();
    let mut text = format!(
        "api-server resource not found installing {kind} {name}: GroupVersionKind {} not found on the cluster. \
         This API may have been deprecated and removed, see https://kubernetes.io/docs/reference/using-api/deprecation-guide/ for more information.",
        gvk_text(group, version, kind)
    );
    if kind == "CustomResourceDefinition" && format!("{group}/{version}") == V1BETA1_CRD_API {
        text.push_str(&format!(
            " Bundle {} ships CustomResourceDefinition {name} as {V1BETA1_CRD_API}, which Kubernetes 1.22 and later \
             no longer serve, so it cannot be installed on this cluster; a version of the operator whose CRDs are \
             apiextensions.k8s.io/v1 can.",
            step.resolving
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::{StepResource, StepStatus};
    use rstest::rstest;

    fn step(resolving: &str, group: &str, version: &str, kind: &str, name: &str) -> Step {
        Step {
            resolving: resolving.into(),
            resource: StepResource {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                name: name.into(),
                ..Default::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    #[test]
    fn a_missing_api_reads_as_olms_e2e_test_expects() {
        // OLM test/e2e/deprecated_e2e_test.go, "the ip enters a failed state with a helpful error message".
        let s = step(
            "test-csv",
            "verticalpodautoscalers.autoscaling.k8s.io",
            "v1",
            "VerticalPodAutoscaler",
            "my.thing",
        );
        let got = message(&s, &s.resource.group, &s.resource.version);
        assert_eq!(
            got,
            "api-server resource not found installing VerticalPodAutoscaler my.thing: GroupVersionKind \
             verticalpodautoscalers.autoscaling.k8s.io/v1, Kind=VerticalPodAutoscaler not found on the cluster. \
             This API may have been deprecated and removed, see \
             https://kubernetes.io/docs/reference/using-api/deprecation-guide/ for more information."
        );
    }

    #[test]
    fn a_v1beta1_crd_names_its_bundle_and_why() {
        let s = step(
            "etcdoperator.v0.9.2",
            "apiextensions.k8s.io",
            "v1beta1",
            "CustomResourceDefinition",
            "etcdbackups.etcd.database.coreos.com",
        );
        let got = message(&s, "apiextensions.k8s.io", "v1beta1");
        assert_eq!(
            got,
            "api-server resource not found installing CustomResourceDefinition etcdbackups.etcd.database.coreos.com: \
             GroupVersionKind apiextensions.k8s.io/v1beta1, Kind=CustomResourceDefinition not found on the cluster. \
             This API may have been deprecated and removed, see \
             https://kubernetes.io/docs/reference/using-api/deprecation-guide/ for more information. \
             Bundle etcdoperator.v0.9.2 ships CustomResourceDefinition etcdbackups.etcd.database.coreos.com as \
             apiextensions.k8s.io/v1beta1, which Kubernetes 1.22 and later no longer serve, so it cannot be installed \
             on this cluster; a version of the operator whose CRDs are apiextensions.k8s.io/v1 can."
        );
    }

    #[test]
    fn the_core_group_prints_as_go_prints_it() {
        let s = step("a.v1", "", "v2", "Service", "svc");
        assert!(
            message(&s, "", "v2").contains("GroupVersionKind /v2, Kind=Service not found"),
            "{}",
            message(&s, "", "v2")
        );
    }

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: "the server could not find the requested resource".into(),
            ..Default::default()
        }))
    }

    #[rstest]
    #[case::an_unknown_group_version(api(404), true)]
    #[case::a_group_version_without_the_kind(kube::Error::Discovery(kube::error::DiscoveryError::MissingKind("GroupVersionKind { .. }".into())), true)]
    #[case::a_forbidden_discovery(api(403), false)]
    #[case::a_server_error(api(503), false)]
    fn which_discovery_errors_mean_not_served(#[case] e: kube::Error, #[case] want: bool) {
        assert_eq!(is_not_served(&e), want);
    }
}
