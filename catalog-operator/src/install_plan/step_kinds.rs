//! Every kind an InstallPlan step may create, with the API group and resource catalog-operator's RBAC must
//! grant for it (deploy/rbac/catalog-operator.yaml; the can-i table of tests/tests/rbac_least_privilege.rs walks
//! this list), and the API version each step is applied with ([`applied_gvk`]). Pure.

use super::crd_version;
use messages::crd::install_plan::Step;
use serde_json::Value;

/// (step kind, API group, resource). `BundleSecret` is created as a Secret.
pub const ALL: &[(&str, &str, &str)] = &[
    (
        "ClusterServiceVersion",
        "operators.coreos.com",
        "clusterserviceversions",
    ),
    (
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ),
    ("Subscription", "operators.coreos.com", "subscriptions"),
    ("BundleSecret", "", "secrets"),
    ("Secret", "", "secrets"),
    ("ClusterRole", "rbac.authorization.k8s.io", "clusterroles"),
    (
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
    ),
    ("Role", "rbac.authorization.k8s.io", "roles"),
    ("RoleBinding", "rbac.authorization.k8s.io", "rolebindings"),
    ("ServiceAccount", "", "serviceaccounts"),
    ("Service", "", "services"),
    ("ConfigMap", "", "configmaps"),
    ("PrometheusRule", "monitoring.coreos.com", "prometheusrules"),
    ("ServiceMonitor", "monitoring.coreos.com", "servicemonitors"),
    ("PodDisruptionBudget", "policy", "poddisruptionbudgets"),
    ("PriorityClass", "scheduling.k8s.io", "priorityclasses"),
    (
        "VerticalPodAutoscaler",
        "autoscaling.k8s.io",
        "verticalpodautoscalers",
    ),
    (
        "ConsoleYAMLSample",
        "console.openshift.io",
        "consoleyamlsamples",
    ),
    (
        "ConsoleQuickStart",
        "console.openshift.io",
        "consolequickstarts",
    ),
    (
        "ConsoleCLIDownload",
        "console.openshift.io",
        "consoleclidownloads",
    ),
    ("ConsoleLink", "console.openshift.io", "consolelinks"),
    ("ConsolePlugin", "console.openshift.io", "consoleplugins"),
    ("NetworkPolicy", "networking.k8s.io", "networkpolicies"),
];

/// Kinds whose existing object is left as it is (create only); the others are merge-patched when present, but
/// [`REPLACED`].
pub const CREATE_ONLY: &[&str] = &[
    "ClusterServiceVersion",
    "Subscription",
    "BundleSecret",
    "Secret",
];

/// Kinds whose existing object is replaced (`update`) after the upgrade checks, never patched.
pub const REPLACED: &[&str] = &["CustomResourceDefinition"];

/// Kinds OLM's `ExecutePlan` decodes into a typed object and creates through a typed client (its `StepEnsurer`),
/// so the apiVersion the manifest names does not matter: a ClusterRole written as `rbac.authorization.k8s.io/v1beta1`
/// (not served since Kubernetes 1.22), or with no apiVersion at all (cluster-aas-operator 0.1.5 ships two), is
/// created as v1. (step kind, group, version, kind created).
pub const TYPED: &[(&str, &str, &str, &str)] = &[
    (
        "ClusterServiceVersion",
        "operators.coreos.com",
        "v1alpha1",
        "ClusterServiceVersion",
    ),
    (
        "Subscription",
        "operators.coreos.com",
        "v1alpha1",
        "Subscription",
    ),
    ("BundleSecret", "", "v1", "Secret"),
    ("Secret", "", "v1", "Secret"),
    (
        "ClusterRole",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
    ),
    (
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
    ),
    ("Role", "rbac.authorization.k8s.io", "v1", "Role"),
    (
        "RoleBinding",
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
    ),
    ("ServiceAccount", "", "v1", "ServiceAccount"),
    ("Service", "", "v1", "Service"),
    ("ConfigMap", "", "v1", "ConfigMap"),
];

/// (group, version, kind) a step is applied with, as OLM picks its client: the typed kinds' own version; for a CRD
/// the version its manifest names (`crdlib.Version`); for the other kinds the step's group and version.
pub fn applied_gvk(step: &Step, manifest: &Value) -> Result<(String, String, String), String> {
    let kind = step.resource.kind.as_str();
    if let Some((_, group, version, created)) = TYPED.iter().find(|(k, ..)| *k == kind) {
        return Ok((group.to_string(), version.to_string(), created.to_string()));
    }
    if kind == "CustomResourceDefinition" {
        let version = crd_version::of_manifest(manifest)?.version();
        return Ok(("apiextensions.k8s.io".into(), version.into(), kind.into()));
    }
    Ok((
        step.resource.group.clone(),
        step.resource.version.clone(),
        kind.to_string(),
    ))
}

/// `resource.group` as `kubectl auth can-i` takes it.
pub fn can_i_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::{StepResource, StepStatus};
    use rstest::rstest;
    use serde_json::json;

    /// A step as `steps.rs` builds it from the object (group and version from its apiVersion, if any).
    fn step_of(obj: &Value) -> Step {
        let (group, version) =
            crate::steps::group_version(obj["apiVersion"].as_str().unwrap_or_default());
        Step {
            resolving: "a.v1".into(),
            resource: StepResource {
                group,
                version,
                kind: obj["kind"].as_str().unwrap_or_default().into(),
                name: obj["metadata"]["name"].as_str().unwrap_or_default().into(),
                manifest: obj.to_string(),
                ..Default::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    fn gvk(group: &str, version: &str, kind: &str) -> Result<(String, String, String), String> {
        Ok((group.into(), version.into(), kind.into()))
    }

    #[rstest]
    // cluster-aas-operator 0.1.5, manifests/argo_cd_cluster_role.yaml: no apiVersion.
    #[case::a_cluster_role_without_api_version_is_created_as_v1(json!({"kind": "ClusterRole", "metadata": {"name": "claas-argocd-cluster-role"}}), gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"))]
    // nexus-operator-m88i 0.4.0, manifests/nexus-operator-metrics-reader_rbac.authorization.k8s.io_v1beta1_clusterrole.yaml.
    #[case::a_v1beta1_cluster_role_is_created_as_v1(json!({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "ClusterRole", "metadata": {"name": "nexus-operator-metrics-reader"}}), gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"))]
    #[case::a_bundle_secret_is_a_secret(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}), gvk("", "v1", "Secret"))]
    #[case::a_v1beta1_crd_goes_through_v1beta1(json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}}), gvk("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition"))]
    #[case::a_crd_of_an_unknown_version_is_refused(json!({"apiVersion": "apiextensions.k8s.io/v2", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}}), Err("CRD APIVersion from manifest not supported: v2".to_string()))]
    #[case::a_generic_kind_keeps_its_version(json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}}), gvk("policy", "v1beta1", "PodDisruptionBudget"))]
    fn each_step_is_applied_through_the_api_olm_would_use(
        #[case] obj: Value,
        #[case] want: Result<(String, String, String), String>,
    ) {
        let mut step = step_of(&obj);
        if step.resource.kind == "Secret" {
            step.resource.kind = "BundleSecret".into();
        }
        assert_eq!(applied_gvk(&step, &obj), want);
    }

    #[test]
    fn every_typed_kind_is_supported() {
        for (kind, ..) in TYPED {
            assert!(super::super::execute::SUPPORTED.contains(kind), "{kind}");
        }
    }

    #[test]
    fn every_supported_step_kind_has_its_resource() {
        let listed: Vec<&str> = ALL.iter().map(|(k, _, _)| *k).collect();
        assert_eq!(listed, super::super::execute::SUPPORTED);
    }
}
