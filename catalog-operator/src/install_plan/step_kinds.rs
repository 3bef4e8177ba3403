//! Every kind an InstallPlan step may create, with the API group and resource catalog-operator's RBAC must
//! grant for it (deploy/rbac/catalog-operator.yaml; the can-i table of tests/tests/rbac_least_privilege.rs walks
//! this list). Pure.

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

/// Kinds whose existing object is left as it is (create only); the others are merge-patched when present.
pub const CREATE_ONLY: &[&str] = &[
    "ClusterServiceVersion",
    "Subscription",
    "BundleSecret",
    "Secret",
];

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

    #[test]
    fn every_supported_step_kind_has_its_resource() {
        let listed: Vec<&str> = ALL.iter().map(|(k, _, _)| *k).collect();
        assert_eq!(listed, super::super::execute::SUPPORTED);
    }
}
