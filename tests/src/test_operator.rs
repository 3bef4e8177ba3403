//! The test operator's CSV (the `localhost/olm-rs/test-operator` image, a static httpd): one package whose operator
//! runs hardened like ours, for the full-cluster tests' catalogs.

use serde_json::{Value, json};

/// The CSV `<package>.v1.0.0` whose Deployment `<package>-operator` runs the test-operator image.
pub fn test_operator_csv(package: &str) -> Value {
    let deploy = format!("{package}-operator");
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": format!("{package}.v1.0.0")},
        "spec": {
            "displayName": package, "version": "1.0.0",
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true},
                             {"type": "MultiNamespace", "supported": false}, {"type": "AllNamespaces", "supported": false}],
            "install": {"strategy": "deployment", "spec": {
                "permissions": [{"serviceAccountName": deploy, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}],
                "deployments": [{"name": deploy, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": deploy}},
                    "template": {"metadata": {"labels": {"app": deploy}}, "spec": {
                        "serviceAccountName": deploy,
                        "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "operator", "image": "localhost/olm-rs/test-operator:dev", "imagePullPolicy": "IfNotPresent",
                            "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
                            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
                            "resources": {"requests": {"cpu": "5m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}}}]}}}}]}}
        }
    })
}
