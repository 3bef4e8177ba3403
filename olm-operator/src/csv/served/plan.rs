//! Which deployments of a CSV serve webhooks or API services, and under which names and ports (OLM's
//! `certResourcesForDeployment`, `getServicePorts`, `ServiceName`, `SecretName`, `HostnamesForService`).

use k8s_openapi::api::core::v1::ServicePort;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use messages::crd::csv::ClusterServiceVersion;

/// One deployment that serves webhooks or API services.
#[derive(Clone, Debug, PartialEq)]
pub struct Serving {
    pub deployment: String,
    pub service: String,
    pub secret: String,
    pub ports: Vec<ServicePort>,
}

impl Serving {
    /// The DNS names its serving certificate covers.
    pub fn hosts(&self, namespace: &str) -> Vec<String> {
        hosts_for_service(&self.service, namespace)
    }
}

/// The Service of a deployment: `<deployment with . → ->-service` (a Service name cannot hold dots; OLM's
/// webhooks use the same `DomainName() + "-service"`).
pub fn service_name(deployment: &str) -> String {
    format!("{}-service", deployment.replace('.', "-"))
}

/// The Secret (and its Role/RoleBinding) of a Service: `<service>-cert`.
pub fn secret_name(service: &str) -> String {
    format!("{service}-cert")
}

/// The ClusterRoleBinding to `system:auth-delegator`: `<service>-system:auth-delegator`.
pub fn auth_delegator_name(service: &str) -> String {
    format!("{service}-system:auth-delegator")
}

/// The RoleBinding in kube-system to `extension-apiserver-authentication-reader`: `<service>-auth-reader`.
pub fn auth_reader_name(service: &str) -> String {
    format!("{service}-auth-reader")
}

pub fn hosts_for_service(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

fn port(container_port: Option<i32>, target: Option<IntOrString>) -> ServicePort {
    let port = container_port.filter(|p| *p > 0).unwrap_or(443);
    ServicePort {
        name: Some(port.to_string()),
        port,
        target_port: Some(target.unwrap_or(IntOrString::Int(port))),
        ..ServicePort::default()
    }
}

/// The serving deployments of the CSV's strategy, in strategy order, each with its distinct ports
/// (API services first, then webhooks, as OLM lists them). Descriptions naming a deployment the strategy
/// lacks are not here (`webhooks::validate` and `api_services::validate` report them).
pub fn of(csv: &ClusterServiceVersion) -> Vec<Serving> {
    let Some(details) = csv.spec.install.spec.as_ref() else {
        return Vec::new();
    };
    let owned = csv
        .spec
        .api_service_definitions
        .as_ref()
        .and_then(|d| d.owned.clone())
        .unwrap_or_default();
    let webhooks = csv.spec.webhook_definitions.clone().unwrap_or_default();
    let mut out = Vec::new();
    for d in &details.deployments {
        let name = d.name.as_str();
        let mut ports: Vec<ServicePort> = Vec::new();
        let wanted = owned
            .iter()
            .filter(|a| a.deployment_name.as_deref() == Some(name))
            .map(|a| port(a.container_port, None))
            .chain(
                webhooks
                    .iter()
                    .filter(|w| w.deployment_name.as_deref() == Some(name))
                    .map(|w| port(w.container_port, w.target_port.clone())),
            );
        for p in wanted {
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        if ports.is_empty() {
            continue;
        }
        let service = service_name(name);
        out.push(Serving {
            deployment: name.to_string(),
            secret: secret_name(&service),
            service,
            ports,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn csv(webhooks: serde_json::Value, api_services: serde_json::Value) -> ClusterServiceVersion {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "op.v1", "namespace": "ns"},
            "spec": {
                "install": {"strategy": "deployment", "spec": {"deployments": [
                    {"name": "op.ctrl", "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {}}},
                    {"name": "plain", "spec": {"selector": {"matchLabels": {"a": "c"}}, "template": {}}}
                ]}},
                "webhookdefinitions": webhooks,
                "apiservicedefinitions": {"owned": api_services}
            }
        }))
        .expect("a CSV")
    }

    #[rstest]
    #[case::no_webhooks_no_service(serde_json::json!([]), serde_json::json!([]), vec![])]
    #[case::a_webhook_defaults_to_443(serde_json::json!([{"generateName": "v.x.io", "type": "ValidatingAdmissionWebhook", "deploymentName": "op.ctrl"}]), serde_json::json!([]), vec![(443, IntOrString::Int(443))])]
    #[case::a_target_port_is_kept(serde_json::json!([{"generateName": "v.x.io", "type": "ValidatingAdmissionWebhook", "deploymentName": "op.ctrl", "containerPort": 9443, "targetPort": "https"}]), serde_json::json!([]), vec![(9443, IntOrString::String("https".into()))])]
    #[case::equal_ports_are_one(serde_json::json!([{"generateName": "v.x.io", "type": "ValidatingAdmissionWebhook", "deploymentName": "op.ctrl", "containerPort": 8443}, {"generateName": "m.x.io", "type": "MutatingAdmissionWebhook", "deploymentName": "op.ctrl", "containerPort": 8443}]), serde_json::json!([]), vec![(8443, IntOrString::Int(8443))])]
    #[case::api_services_come_first(serde_json::json!([{"generateName": "v.x.io", "type": "ValidatingAdmissionWebhook", "deploymentName": "op.ctrl", "containerPort": 9443}]), serde_json::json!([{"name": "w", "group": "x.io", "version": "v1", "kind": "W", "deploymentName": "op.ctrl", "containerPort": 5443}]), vec![(5443, IntOrString::Int(5443)), (9443, IntOrString::Int(9443))])]
    #[case::an_unknown_deployment_serves_nothing(serde_json::json!([{"generateName": "v.x.io", "type": "ValidatingAdmissionWebhook", "deploymentName": "ghost"}]), serde_json::json!([]), vec![])]
    fn serving_deployments_and_their_ports(
        #[case] webhooks: serde_json::Value,
        #[case] api_services: serde_json::Value,
        #[case] ports: Vec<(i32, IntOrString)>,
    ) {
        let plan = of(&csv(webhooks, api_services));
        if ports.is_empty() {
            assert!(plan.is_empty(), "{plan:?}");
            return;
        }
        assert_eq!(plan.len(), 1, "{plan:?}");
        let s = &plan[0];
        assert_eq!(
            (s.deployment.as_str(), s.service.as_str(), s.secret.as_str()),
            ("op.ctrl", "op-ctrl-service", "op-ctrl-service-cert")
        );
        let got: Vec<(i32, IntOrString)> = s
            .ports
            .iter()
            .map(|p| (p.port, p.target_port.clone().expect("a target port")))
            .collect();
        assert_eq!(got, ports);
    }

    #[test]
    fn the_certificate_names_the_service_three_ways() {
        assert_eq!(
            hosts_for_service("s", "ns"),
            vec!["s.ns", "s.ns.svc", "s.ns.svc.cluster.local"]
        );
    }
}
