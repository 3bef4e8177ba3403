//! The leader's EndpointSlice for the catalog Service (`--catalog-serve-service`). Only the leader loads catalog
//! images and listens on `--catalog-serve-addr`; a Service selecting the pods would send about half of
//! package-server's connections to the standby, which refuses them. So the Service has no selector, and the
//! leader, once it listens, applies one EndpointSlice (`<service>-leader`, labelled
//! `kubernetes.io/service-name`) naming its own pod IP and port; a new leader overwrites it. A leader whose
//! write fails keeps serving and retries with a growing pause (at most [`MAX_PAUSE`]), logging each failure; a
//! slice the API server refuses as invalid (a loopback `POD_IP`) is logged as an error and not retried.
//! [`slice`] is pure.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use olm_runtime::error::{self as api_error, Class};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

/// The Service port name the slice's port carries (the Service's port of the same name routes to it).
pub const PORT_NAME: &str = "catalogs";
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "catalog-operator.olm-rs";
const FIELD_MANAGER: &str = "catalog-operator";
/// The longest pause between two attempts of a failing write.
pub const MAX_PAUSE: Duration = Duration::from_secs(30);

/// Who serves: the Service it serves for, and this pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub service: String,
    pub namespace: String,
    pub pod_name: Option<String>,
    pub pod_ip: IpAddr,
    pub port: u16,
}

/// The slice's name for `service`.
pub fn slice_name(service: &str) -> String {
    format!("{service}-leader")
}

/// The EndpointSlice routing `server.service` to this pod alone.
pub fn slice(server: &Server) -> EndpointSlice {
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(slice_name(&server.service)),
            namespace: Some(server.namespace.clone()),
            labels: Some(BTreeMap::from([
                (SERVICE_NAME_LABEL.to_string(), server.service.clone()),
                (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
            ])),
            ..Default::default()
        },
        address_type: match server.pod_ip {
            IpAddr::V4(_) => "IPv4",
            IpAddr::V6(_) => "IPv6",
        }
        .to_string(),
        endpoints: vec![Endpoint {
            addresses: vec![server.pod_ip.to_string()],
            conditions: Some(EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            }),
            target_ref: server.pod_name.as_ref().map(|name| ObjectReference {
                kind: Some("Pod".into()),
                name: Some(name.clone()),
                namespace: Some(server.namespace.clone()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ports: Some(vec![EndpointPort {
            name: Some(PORT_NAME.into()),
            port: Some(i32::from(server.port)),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }]),
    }
}

/// Apply the slice, retrying until it is written.
pub async fn publish(client: kube::Client, server: Server) {
    let api: Api<EndpointSlice> = Api::namespaced(client, &server.namespace);
    let wanted = slice(&server);
    let name = slice_name(&server.service);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut pause = Duration::from_secs(1);
    loop {
        match api.patch(&name, &params, &Patch::Apply(&wanted)).await {
            Ok(_) => {
                tracing::info!(slice = %name, address = %server.pod_ip, port = server.port, "the catalog Service routes to this pod");
                return;
            }
            Err(e) if api_error::is(&e, Class::Invalid) => {
                // The address itself is refused (e.g. a loopback `POD_IP`): trying again cannot help.
                tracing::error!(slice = %name, error = &e as &dyn std::error::Error, "cannot route the catalog Service to this pod: the API server refuses the slice");
                return;
            }
            Err(e) => {
                tracing::warn!(slice = %name, error = &e as &dyn std::error::Error, retry_in = ?pause, "cannot route the catalog Service to this pod");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn server(ip: &str, pod: Option<&str>) -> Server {
        Server {
            service: "catalog-operator-catalogs".into(),
            namespace: "olm".into(),
            pod_name: pod.map(str::to_string),
            pod_ip: ip.parse().expect("ip"),
            port: 50052,
        }
    }

    #[rstest]
    #[case::ipv4_with_its_pod(
        server("10.0.0.7", Some("catalog-operator-abc")),
        "IPv4",
        Some("catalog-operator-abc")
    )]
    #[case::ipv6(
        server("fd00::7", Some("catalog-operator-abc")),
        "IPv6",
        Some("catalog-operator-abc")
    )]
    #[case::no_pod_name(server("10.0.0.7", None), "IPv4", None)]
    fn the_slice_names_this_pod_alone_for_the_service(
        #[case] server: Server,
        #[case] address_type: &str,
        #[case] target: Option<&str>,
    ) {
        let s = slice(&server);
        assert_eq!(
            s.metadata.name.as_deref(),
            Some("catalog-operator-catalogs-leader")
        );
        assert_eq!(s.metadata.namespace.as_deref(), Some("olm"));
        let labels = s.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(SERVICE_NAME_LABEL).map(String::as_str),
            Some("catalog-operator-catalogs")
        );
        assert_eq!(s.address_type, address_type);
        assert_eq!(s.endpoints.len(), 1);
        assert_eq!(s.endpoints[0].addresses, vec![server.pod_ip.to_string()]);
        assert_eq!(
            s.endpoints[0].conditions.as_ref().and_then(|c| c.ready),
            Some(true)
        );
        assert_eq!(
            s.endpoints[0]
                .target_ref
                .as_ref()
                .and_then(|r| r.name.as_deref()),
            target
        );
        let ports = s.ports.unwrap_or_default();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].name.as_deref(), Some(PORT_NAME));
        assert_eq!(ports[0].port, Some(50052));
    }

    #[test]
    fn the_slice_is_sent_with_its_kind() {
        let v = serde_json::to_value(slice(&server("10.0.0.7", None))).expect("json");
        assert_eq!(v["apiVersion"], "discovery.k8s.io/v1");
        assert_eq!(v["kind"], "EndpointSlice");
    }
}
