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

/// The registry+v1 bundle folder `root/<package>/1.0.0` of [`test_operator_csv`], in channel `stable`.
pub fn write_test_operator_bundle(root: &std::path::Path, package: &str) -> anyhow::Result<()> {
    let bundle = root.join(package).join("1.0.0");
    std::fs::create_dir_all(bundle.join("manifests"))?;
    std::fs::create_dir_all(bundle.join("metadata"))?;
    std::fs::write(
        bundle.join(format!("manifests/{package}.clusterserviceversion.yaml")),
        serde_json::to_vec_pretty(&test_operator_csv(package))?,
    )?;
    std::fs::write(
        bundle.join("metadata/annotations.yaml"),
        format!(
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
             operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
             operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
             operators.operatorframework.io.bundle.package.v1: {package}\n  \
             operators.operatorframework.io.bundle.channels.v1: stable\n  \
             operators.operatorframework.io.bundle.channel.default.v1: stable\n"
        ),
    )?;
    Ok(())
}

/// Whether `pod` reports Ready.
pub fn pod_ready(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The one Ready pod of `package`'s test operator in `ns`, waited for up to `deadline`.
pub async fn await_ready_operator_pod(
    client: &kube::Client,
    ns: &str,
    package: &str,
    deadline: std::time::Duration,
) -> anyhow::Result<k8s_openapi::api::core::v1::Pod> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let label = format!("app={package}-operator");
    crate::eventually(deadline, "one Ready operator pod", || {
        let (pods, label) = (pods.clone(), label.clone());
        async move {
            let list = pods.list(&ListParams::default().labels(&label)).await?;
            Ok(match list.items.as_slice() {
                [pod] if pod_ready(pod) => Some(pod.clone()),
                _ => None,
            })
        }
    })
    .await
}

/// CSV `name` in `ns` once it is `Succeeded`, waited for up to `deadline`.
pub async fn await_csv_succeeded(
    client: &kube::Client,
    ns: &str,
    name: &str,
    deadline: std::time::Duration,
) -> anyhow::Result<messages::crd::csv::ClusterServiceVersion> {
    use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
    let csvs: kube::Api<ClusterServiceVersion> = kube::Api::namespaced(client.clone(), ns);
    crate::await_object(&csvs, name, deadline, "Succeeded", |c| {
        c.and_then(|c| c.status.as_ref())
            .is_some_and(|s| s.phase == CsvPhase::Succeeded)
    })
    .await
}
