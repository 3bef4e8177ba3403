//! Pods: bind the unscheduled ones to the simulated node, report bound ones Running and Ready, and finish the
//! deletion of those being deleted.

use crate::SimError;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT_IP: AtomicU32 = AtomicU32::new(2);

fn next_pod_ip() -> String {
    let n = NEXT_IP.fetch_add(1, Ordering::Relaxed);
    format!("10.244.{}.{}", (n >> 8) & 0xff, n & 0xff)
}

/// Pod events handled at once (a kubelet starts many pods in parallel too; each event is idempotent: a second
/// bind is a 409, a second status patch writes the same status).
const CONCURRENT_PODS: usize = 32;

pub async fn run(client: Client, node: String) -> Result<(), SimError> {
    let all: Api<Pod> = Api::all(client.clone());
    let stream = watcher(all, watcher::Config::default())
        .default_backoff()
        .applied_objects();
    stream
        .for_each_concurrent(CONCURRENT_PODS, |item| {
            let (client, node) = (client.clone(), node.clone());
            async move {
                match item {
                    Ok(pod) => {
                        if let Err(error) = handle(&client, &node, &pod).await {
                            tracing::warn!(error = %error, pod = ?pod.metadata.name, "pod handling failed (will retry on the next event)");
                        }
                    }
                    Err(error) => {
                        tracing::warn!(error = &error as &dyn std::error::Error, "pod watch error")
                    }
                }
            }
        })
        .await;
    Ok(())
}

fn is_running_and_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .as_ref()
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn handle(client: &Client, node: &str, pod: &Pod) -> Result<(), kube::Error> {
    let (Some(name), Some(ns)) = (
        pod.metadata.name.as_deref(),
        pod.metadata.namespace.as_deref(),
    ) else {
        return Ok(());
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let spec = pod.spec.clone().unwrap_or_default();
    let bound_here = spec.node_name.as_deref() == Some(node);
    if pod.metadata.deletion_timestamp.is_some() {
        if bound_here || spec.node_name.is_none() {
            let mut dp = DeleteParams::default().grace_period(0);
            dp.preconditions = pod
                .metadata
                .uid
                .clone()
                .map(|uid| kube::api::Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                });
            match api.delete(name, &dp).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        return Ok(());
    }
    match spec.node_name.as_deref() {
        None => {
            let binding = Binding {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(ns.to_string()),
                    ..Default::default()
                },
                target: ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Node".into()),
                    name: Some(node.to_string()),
                    ..Default::default()
                },
            };
            match api
                .create_subresource::<Binding, serde_json::Value>(
                    "binding",
                    name,
                    &PostParams::default(),
                    &binding,
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
                Err(e) => return Err(e),
            }
            tracing::info!(pod = %format!("{ns}/{name}"), "bound");
            Ok(())
        }
        Some(n) if n == node && !is_running_and_ready(pod) => {
            let now = k8s_openapi::jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            let statuses: Vec<serde_json::Value> = spec
                .containers
                .iter()
                .map(|c| json!({"name": c.name, "ready": true, "started": true, "restartCount": 0, "image": c.image.clone().unwrap_or_default(),
                    "imageID": "", "containerID": format!("sim://{}/{}", pod.metadata.uid.clone().unwrap_or_default(), c.name),
                    "state": {"running": {"startedAt": now}}}))
                .collect();
            let init_statuses: Vec<serde_json::Value> = spec
                .init_containers
                .iter()
                .flatten()
                .map(|c| json!({"name": c.name, "ready": true, "restartCount": 0, "image": c.image.clone().unwrap_or_default(), "imageID": "",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}}))
                .collect();
            let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
            let ip = pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.clone())
                .unwrap_or_else(next_pod_ip);
            let patch = json!({"status": {
                "phase": "Running", "hostIP": "127.0.0.1", "podIP": ip, "podIPs": [{"ip": ip}], "startTime": now,
                "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
                "containerStatuses": statuses, "initContainerStatuses": init_statuses,
            }});
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
            tracing::info!(pod = %format!("{ns}/{name}"), "running and ready");
            Ok(())
        }
        Some(_) => Ok(()),
    }
}
