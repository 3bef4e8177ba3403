//! The repo's `test-webhook` image as a CSV's Deployment, for the full-cluster webhook tests: one replica on 9443,
//! hardened like our operators' pods (non-root, RuntimeDefault seccomp, no capabilities, read-only root), Ready
//! through its HTTPS `/healthz`.

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{
    Capabilities, ContainerPort, EnvVar, HTTPGetAction, PodSecurityContext, Probe,
    ResourceRequirements, SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

pub const TEST_WEBHOOK_IMAGE: &str = "localhost/olm-rs/test-webhook:dev";

/// The port test-webhook serves on unless `WEBHOOK_PORT` says otherwise.
pub const TEST_WEBHOOK_PORT: i32 = 9443;

/// Deployment `deployment` (selected by `app: <deployment>`) running test-webhook in container `webhook` with
/// `env` (none when empty), 5m CPU and 8Mi requested, 64Mi at most.
pub fn test_webhook_deployment(deployment: &str, env: &[(&str, &str)]) -> DeploymentSpec {
    let mut spec = messages::testing::app_deployment(deployment, "webhook", TEST_WEBHOOK_IMAGE);
    spec.replicas = Some(1);
    if let Some(pod) = spec.template.spec.as_mut() {
        pod.security_context = Some(PodSecurityContext {
            run_as_user: Some(65532),
            ..non_root_pod()
        });
        for container in &mut pod.containers {
            container.ports = Some(vec![ContainerPort {
                container_port: TEST_WEBHOOK_PORT,
                ..ContainerPort::default()
            }]);
            container.env = (!env.is_empty()).then(|| {
                env.iter()
                    .map(|(name, value)| EnvVar {
                        name: (*name).to_string(),
                        value: Some((*value).to_string()),
                        ..EnvVar::default()
                    })
                    .collect()
            });
            container.readiness_probe = Some(https_ready_probe(TEST_WEBHOOK_PORT));
            container.security_context = Some(restricted_container());
            container.resources = Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    ("cpu".to_string(), Quantity("5m".into())),
                    ("memory".to_string(), Quantity("8Mi".into())),
                ])),
                limits: Some(BTreeMap::from([(
                    "memory".to_string(),
                    Quantity("64Mi".into()),
                )])),
                ..ResourceRequirements::default()
            });
        }
    }
    spec
}

/// A pod that runs as non-root under the RuntimeDefault seccomp profile.
pub fn non_root_pod() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..SeccompProfile::default()
        }),
        ..PodSecurityContext::default()
    }
}

/// A container without privilege escalation, capabilities or a writable root.
pub fn restricted_container() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Capabilities::default()
        }),
        ..SecurityContext::default()
    }
}

/// Ready when `GET https://:<port>/healthz` answers, probed every second.
pub fn https_ready_probe(port: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/healthz".into()),
            port: IntOrString::Int(port),
            scheme: Some("HTTPS".into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(1),
        ..Probe::default()
    }
}
