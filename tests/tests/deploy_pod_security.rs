//! Every pod olm-rs deploys (`deploy/`, read as typed Kubernetes objects) passes the Pod Security Standards'
//! `restricted` profile and pins no user or group (any UID an admission assigns must work), and each namespace
//! `deploy/` creates carries the Pod Security Admission labels OLM gives its own (docs/pod-security.md). Pure:
//! no cluster. The checker itself is table-tested below.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, Namespace, PodSecurityContext, PodSpec, SeccompProfile,
    SecurityContext, Volume,
};
use rstest::rstest;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn deploy_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../deploy")
}

/// Volume sources the restricted profile allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// Why `spec` fails the restricted profile, or pins a user or group; empty when it passes. Each entry names the
/// field, as the admission's own messages do.
fn restricted_violations(spec: &PodSpec) -> Vec<String> {
    let mut out = Vec::new();
    let pod = spec.security_context.clone().unwrap_or_default();
    for (set, field) in [
        (spec.host_network, "hostNetwork"),
        (spec.host_pid, "hostPID"),
        (spec.host_ipc, "hostIPC"),
    ] {
        if set == Some(true) {
            out.push(format!("pod: {field}=true"));
        }
    }
    for volume in spec.volumes.iter().flatten() {
        out.extend(volume_violation(volume));
    }
    out.extend(pod_context_violations(&pod));
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    for c in containers {
        out.extend(container_violations(c, &pod));
    }
    out
}

fn volume_violation(volume: &Volume) -> Option<String> {
    let json = serde_json::to_value(volume).ok()?;
    let source = json
        .as_object()?
        .keys()
        .find(|k| *k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()))?;
    Some(format!("volume {}: {source} not allowed", volume.name))
}

fn pod_context_violations(pod: &PodSecurityContext) -> Vec<String> {
    let mut out = Vec::new();
    if pod.run_as_user.is_some() {
        out.push("pod: runAsUser pinned".to_owned());
    }
    if pod.run_as_group.is_some() {
        out.push("pod: runAsGroup pinned".to_owned());
    }
    if pod.sysctls.as_ref().is_some_and(|s| !s.is_empty()) {
        out.push("pod: sysctls set".to_owned());
    }
    if pod
        .se_linux_options
        .as_ref()
        .is_some_and(|o| o.user.is_some() || o.role.is_some())
    {
        out.push("pod: seLinuxOptions user or role set".to_owned());
    }
    out
}

fn seccomp_ok(profile: Option<&SeccompProfile>) -> Option<bool> {
    profile.map(|p| matches!(p.type_.as_str(), "RuntimeDefault" | "Localhost"))
}

fn container_violations(c: &Container, pod: &PodSecurityContext) -> Vec<String> {
    let mut out = Vec::new();
    let name = &c.name;
    let sc = c.security_context.clone().unwrap_or_default();
    let SecurityContext {
        allow_privilege_escalation,
        privileged,
        capabilities,
        run_as_non_root,
        run_as_user,
        run_as_group,
        seccomp_profile,
        proc_mount,
        ..
    } = sc;
    if privileged == Some(true) {
        out.push(format!("container {name}: privileged"));
    }
    if allow_privilege_escalation != Some(false) {
        out.push(format!(
            "container {name}: allowPrivilegeEscalation != false"
        ));
    }
    let Capabilities { add, drop } = capabilities.unwrap_or_default();
    if !drop.iter().flatten().any(|d| d == "ALL") {
        out.push(format!("container {name}: capabilities.drop lacks ALL"));
    }
    if let Some(extra) = add
        .iter()
        .flatten()
        .find(|a| a.as_str() != "NET_BIND_SERVICE")
    {
        out.push(format!("container {name}: capabilities.add {extra}"));
    }
    if run_as_non_root.or(pod.run_as_non_root) != Some(true) {
        out.push(format!("container {name}: runAsNonRoot != true"));
    }
    if run_as_user.is_some() {
        out.push(format!("container {name}: runAsUser pinned"));
    }
    if run_as_group.is_some() {
        out.push(format!("container {name}: runAsGroup pinned"));
    }
    match seccomp_ok(seccomp_profile.as_ref()).or(seccomp_ok(pod.seccomp_profile.as_ref())) {
        Some(true) => {}
        _ => out.push(format!(
            "container {name}: seccompProfile not RuntimeDefault or Localhost"
        )),
    }
    if proc_mount.is_some_and(|p| p != "Default") {
        out.push(format!("container {name}: procMount not Default"));
    }
    if c.ports
        .iter()
        .flatten()
        .any(|p| p.host_port.is_some_and(|h| h != 0))
    {
        out.push(format!("container {name}: hostPort"));
    }
    out
}

/// Every YAML document under `dir` (recursively), with its file.
fn documents(dir: &Path, out: &mut Vec<(PathBuf, Value)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            // Our generated CRDs hold no pods; samples/ is third-party catalog content (operators' CSVs); chart/
            // holds Go templates, whose rendering equals deploy/'s (release_assets).
            if !matches!(
                path.file_name().and_then(|n| n.to_str()),
                Some("crds" | "samples" | "chart")
            ) {
                documents(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                .unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
            out.extend(docs.into_iter().map(|d| (path.clone(), d)));
        }
    }
}

fn deploy_documents() -> Vec<(PathBuf, Value)> {
    let mut docs = Vec::new();
    documents(&deploy_dir(), &mut docs);
    docs
}

/// The pod specs of `deploy/`'s workloads, named `Kind/name`.
fn pod_specs() -> Vec<(String, PodSpec)> {
    let typed = |v: &Value| -> Option<(String, Option<PodSpec>)> {
        let kind = v.get("kind")?.as_str()?;
        let name = v.pointer("/metadata/name")?.as_str()?.to_owned();
        let spec = match kind {
            "Deployment" => serde_json::from_value::<Deployment>(v.clone())
                .ok()?
                .spec
                .and_then(|s| s.template.spec),
            "StatefulSet" => serde_json::from_value::<StatefulSet>(v.clone())
                .ok()?
                .spec
                .and_then(|s| s.template.spec),
            "DaemonSet" => serde_json::from_value::<DaemonSet>(v.clone())
                .ok()?
                .spec
                .and_then(|s| s.template.spec),
            "Job" => serde_json::from_value::<Job>(v.clone())
                .ok()?
                .spec
                .and_then(|s| s.template.spec),
            "Pod" => {
                serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(v.clone())
                    .ok()?
                    .spec
            }
            _ => return None,
        };
        Some((format!("{kind}/{name}"), spec))
    };
    deploy_documents()
        .iter()
        .filter_map(|(path, doc)| {
            let (name, spec) = typed(doc)?;
            let spec =
                spec.unwrap_or_else(|| panic!("{name} in {} has no pod spec", path.display()));
            Some((name, spec))
        })
        .collect()
}

#[test]
fn every_pod_deploy_creates_passes_the_restricted_profile_and_pins_no_user() {
    let specs = pod_specs();
    let names: Vec<&str> = specs.iter().map(|(n, _)| n.as_str()).collect();
    // The four workloads deploy/ runs: a reader that found none must fail.
    for expected in [
        "Deployment/olm-operator",
        "Deployment/catalog-operator",
        "Deployment/package-server",
        "Deployment/olm-rs-catalog",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not found in deploy/: {names:?}"
        );
    }
    let problems: Vec<String> = specs
        .iter()
        .flat_map(|(name, spec)| {
            restricted_violations(spec)
                .into_iter()
                .map(move |v| format!("{name}: {v}"))
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_namespace_deploy_creates_carries_olms_pod_security_labels() {
    let psa = |level: &str| -> BTreeMap<String, String> {
        ["enforce", "audit", "warn"]
            .into_iter()
            .flat_map(|mode| {
                let level = if mode == "enforce" {
                    level
                } else {
                    "restricted"
                };
                [
                    (
                        format!("pod-security.kubernetes.io/{mode}"),
                        level.to_owned(),
                    ),
                    (
                        format!("pod-security.kubernetes.io/{mode}-version"),
                        "latest".to_owned(),
                    ),
                ]
            })
            .collect()
    };
    // OLM's release manifests: `olm` enforces restricted, `operators` baseline; both audit and warn restricted.
    let expected: BTreeMap<&str, BTreeMap<String, String>> =
        [("olm", psa("restricted")), ("operators", psa("baseline"))].into();
    let mut found = BTreeMap::new();
    for (path, doc) in deploy_documents() {
        if doc.get("kind").and_then(Value::as_str) != Some("Namespace") {
            continue;
        }
        let ns: Namespace = serde_json::from_value(doc)
            .unwrap_or_else(|e| panic!("a Namespace in {}: {e}", path.display()));
        let name = ns.metadata.name.clone().unwrap_or_default();
        let labels: BTreeMap<String, String> = ns
            .metadata
            .labels
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.starts_with("pod-security.kubernetes.io/"))
            .collect();
        found.insert(name, labels);
    }
    let found: BTreeMap<&str, BTreeMap<String, String>> =
        found.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    assert_eq!(found, expected);
}

fn compliant() -> PodSpec {
    serde_json::from_value(serde_json::json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "op",
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                "capabilities": {"drop": ["ALL"]}},
        }],
        "volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "cert", "secret": {"secretName": "s"}}],
    }))
    .unwrap_or_default()
}

fn with(patch: impl FnOnce(&mut Value)) -> PodSpec {
    let mut v = serde_json::to_value(compliant()).unwrap_or_default();
    patch(&mut v);
    serde_json::from_value(v).unwrap_or_default()
}

fn remove(v: &mut Value, pointer: &str, key: &str) {
    if let Some(map) = v.pointer_mut(pointer).and_then(Value::as_object_mut) {
        map.remove(key);
    }
}

#[rstest]
#[case::a_compliant_pod(compliant(), &[])]
#[case::a_pinned_user(with(|v| v["securityContext"]["runAsUser"] = 65532.into()), &["pod: runAsUser pinned"])]
#[case::a_pinned_group(with(|v| v["securityContext"]["runAsGroup"] = 65532.into()), &["pod: runAsGroup pinned"])]
#[case::a_container_pinned_user(with(|v| v["containers"][0]["securityContext"]["runAsUser"] = 1000.into()), &["container op: runAsUser pinned"])]
#[case::root_allowed(with(|v| v["securityContext"]["runAsNonRoot"] = false.into()), &["container op: runAsNonRoot != true"])]
#[case::no_seccomp(with(|v| remove(v, "/securityContext", "seccompProfile")), &["container op: seccompProfile not RuntimeDefault or Localhost"])]
#[case::unconfined_seccomp(with(|v| v["containers"][0]["securityContext"]["seccompProfile"] = serde_json::json!({"type": "Unconfined"})), &["container op: seccompProfile not RuntimeDefault or Localhost"])]
#[case::escalation_unset(with(|v| remove(v, "/containers/0/securityContext", "allowPrivilegeEscalation")), &["container op: allowPrivilegeEscalation != false"])]
#[case::capabilities_kept(with(|v| v["containers"][0]["securityContext"]["capabilities"] = serde_json::json!({"drop": ["NET_RAW"]})), &["container op: capabilities.drop lacks ALL"])]
#[case::a_capability_added(with(|v| v["containers"][0]["securityContext"]["capabilities"]["add"] = serde_json::json!(["SYS_ADMIN"])), &["container op: capabilities.add SYS_ADMIN"])]
#[case::net_bind_service_may_be_added(with(|v| v["containers"][0]["securityContext"]["capabilities"]["add"] = serde_json::json!(["NET_BIND_SERVICE"])), &[])]
#[case::privileged(with(|v| v["containers"][0]["securityContext"]["privileged"] = true.into()), &["container op: privileged"])]
#[case::a_host_path(with(|v| v["volumes"][0] = serde_json::json!({"name": "h", "hostPath": {"path": "/"}})), &["volume h: hostPath not allowed"])]
#[case::host_network(with(|v| v["hostNetwork"] = true.into()), &["pod: hostNetwork=true"])]
#[case::a_host_port(with(|v| v["containers"][0]["ports"] = serde_json::json!([{"containerPort": 80, "hostPort": 80}])), &["container op: hostPort"])]
#[case::an_init_container_too(with(|v| v["initContainers"] = serde_json::json!([{"name": "init"}])), &[
    "container init: allowPrivilegeEscalation != false",
    "container init: capabilities.drop lacks ALL",
])]
fn the_checker_reports_each_restricted_rule(#[case] spec: PodSpec, #[case] expected: &[&str]) {
    assert_eq!(restricted_violations(&spec), expected);
}
