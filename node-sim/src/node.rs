//! The simulated Node: registered Ready with generous capacity, kept alive by renewing its Lease in
//! `kube-node-lease` and refreshing the Ready heartbeat (else the node-lifecycle controller marks it NotReady
//! after ~40 s and evicts its pods after ~5 min).

use crate::SimError;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The node's status; `kubelet_version` (the control plane's own `gitVersion`, so the node matches the cluster's
/// release as a kubelet of that release would) also sets `nodeInfo`, which heartbeats leave as it is.
fn node_status(now: &str, kubelet_version: Option<&str>) -> serde_json::Value {
    let cond = |t: &str, s: &str, reason: &str| json!({"type": t, "status": s, "reason": reason, "message": "olm-rs node simulator", "lastHeartbeatTime": now, "lastTransitionTime": now});
    let mut status = json!({"status": {
        "capacity": {"cpu": "32", "memory": "128Gi", "pods": "500", "ephemeral-storage": "500Gi"},
        "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "500", "ephemeral-storage": "500Gi"},
        "conditions": [
            cond("Ready", "True", "KubeletReady"),
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID"),
        ],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
    }});
    if let Some(version) = kubelet_version {
        status["status"]["nodeInfo"] = json!({"kubeletVersion": format!("{version}-olm-rs-sim"), "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64", "containerRuntimeVersion": "sim://0",
            "osImage": "olm-rs node simulator", "kernelVersion": "", "machineID": "", "systemUUID": "", "bootID": ""});
    }
    status
}

pub async fn register(client: &Client, name: &str) -> Result<(), SimError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let labels = [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("olm-rs.io/simulated", "true"),
    ];
    let node = Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..Node::default()
    };
    let version = client
        .apiserver_version()
        .await
        .map_err(|source| SimError::Api {
            what: "read the control plane's version".to_string(),
            source,
        })?
        .git_version;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(source) => {
            return Err(SimError::Api {
                what: format!("create node {name}"),
                source,
            });
        }
    }
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(node_status(&now_rfc3339(), Some(&version))),
        )
        .await
        .map_err(|source| SimError::Api {
            what: format!("node {name} status"),
            source,
        })?;
    Ok(())
}

async fn renew_lease(client: &Client, name: &str, seconds: u64) -> Result<(), kube::Error> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let spec = LeaseSpec {
        holder_identity: Some(name.to_string()),
        lease_duration_seconds: Some(i32::try_from(seconds * 8).unwrap_or(40)),
        renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
        ..LeaseSpec::default()
    };
    let patch = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}, "spec": spec});
    leases
        .patch(
            name,
            &PatchParams::apply("olm-rs-node-sim").force(),
            &Patch::Apply(patch),
        )
        .await
        .map(|_| ())
}

pub async fn heartbeat(client: Client, name: String, seconds: u64) {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(seconds.max(1)));
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        if let Err(error) = renew_lease(&client, &name, seconds).await {
            tracing::warn!(
                error = &error as &dyn std::error::Error,
                "lease renewal failed"
            );
        }
        // The Ready condition's heartbeat too, every few leases.
        if n.is_multiple_of(4)
            && let Err(error) = nodes
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(node_status(&now_rfc3339(), None)),
                )
                .await
        {
            tracing::warn!(
                error = &error as &dyn std::error::Error,
                "node status heartbeat failed"
            );
        }
        n = n.wrapping_add(1);
    }
}
