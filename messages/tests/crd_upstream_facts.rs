//! Our generated CRDs against the validation facts of OLM's published CRDs (operator-framework/api `crds/`,
//! read field by field on 2026-11-24): every required list, enum and format of OLM's own types below must be
//! exactly OLM's, and where Kubernetes' embedded types lead our generator to be stricter than OLM (a
//! reference's `name`, an override's `lastTransitionTime`) we must not be. A CSV created under our CRDs can then
//! be updated under OLM's, and the reverse. Fails on drift in either direction.

use serde_json::Value;

/// `(kind, path, OLM's required list)`; `[]` = the items of a list.
const REQUIRED: &[(&str, &str, &[&str])] = &[
    ("CatalogSource", "", &["metadata", "spec"]),
    ("CatalogSource", ".spec.icon", &["base64data", "mediatype"]),
    (
        "CatalogSource",
        ".spec.grpcPodConfig.extractContent",
        &["catalogDir"],
    ),
    (
        "CatalogSource",
        ".status.configMapReference",
        &["name", "namespace"],
    ),
    (
        "CatalogSource",
        ".status.conditions[]",
        &["lastTransitionTime", "message", "reason", "status", "type"],
    ),
    ("ClusterServiceVersion", "", &["metadata", "spec"]),
    (
        "ClusterServiceVersion",
        ".spec",
        &["displayName", "install"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.apiservicedefinitions.owned[]",
        &["group", "kind", "name", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.apiservicedefinitions.required[].resources[]",
        &["kind", "name", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.apiservicedefinitions.owned[].specDescriptors[]",
        &["path"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.customresourcedefinitions.owned[]",
        &["kind", "name", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.customresourcedefinitions.owned[].resources[]",
        &["kind", "name", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.customresourcedefinitions.required[].actionDescriptors[]",
        &["path"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.customresourcedefinitions.owned[].statusDescriptors[]",
        &["path"],
    ),
    ("ClusterServiceVersion", ".spec.cleanup", &["enabled"]),
    (
        "ClusterServiceVersion",
        ".spec.icon[]",
        &["base64data", "mediatype"],
    ),
    ("ClusterServiceVersion", ".spec.install", &["strategy"]),
    (
        "ClusterServiceVersion",
        ".spec.install.spec",
        &["deployments"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[]",
        &["name", "spec"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.permissions[]",
        &["rules", "serviceAccountName"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.clusterPermissions[]",
        &["rules", "serviceAccountName"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.installModes[]",
        &["supported", "type"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.nativeAPIs[]",
        &["group", "kind", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.relatedImages[]",
        &["image", "name"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.webhookdefinitions[]",
        &[
            "admissionReviewVersions",
            "generateName",
            "sideEffects",
            "type",
        ],
    ),
    (
        "ClusterServiceVersion",
        ".status.cleanup.pendingDeletion[]",
        &["group", "instances", "kind"],
    ),
    (
        "ClusterServiceVersion",
        ".status.requirementStatus[]",
        &["group", "kind", "message", "name", "status", "version"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.containers[].env[].valueFrom.configMapKeyRef",
        &["key"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.containers[].env[].valueFrom.secretKeyRef",
        &["key"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.containers[].envFrom[].configMapRef",
        &[],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.imagePullSecrets[]",
        &[],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.volumes[].configMap",
        &[],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.os",
        &["name"],
    ),
    (
        "ClusterServiceVersion",
        ".spec.install.spec.deployments[].spec.template.spec.schedulingGates[]",
        &["name"],
    ),
    ("InstallPlan", "", &["metadata", "spec"]),
    (
        "InstallPlan",
        ".spec",
        &["approval", "approved", "clusterServiceVersionNames"],
    ),
    ("InstallPlan", ".status", &["catalogSources", "phase"]),
    (
        "InstallPlan",
        ".status.bundleLookups[]",
        &["catalogSourceRef", "identifier", "path", "replaces"],
    ),
    (
        "InstallPlan",
        ".status.bundleLookups[].conditions[]",
        &["status", "type"],
    ),
    ("InstallPlan", ".status.conditions[]", &[]),
    ("OLMConfig", "", &["metadata"]),
    ("Operator", "", &[]),
    ("Operator", ".status.components", &["labelSelector"]),
    ("OperatorCondition", "", &["metadata"]),
    (
        "OperatorCondition",
        ".spec.overrides[]",
        &["message", "reason", "status", "type"],
    ),
    ("OperatorGroup", "", &["metadata"]),
    ("OperatorGroup", ".status", &["lastUpdated"]),
    ("Subscription", "", &["metadata", "spec"]),
    (
        "Subscription",
        ".spec",
        &["name", "source", "sourceNamespace"],
    ),
    (
        "Subscription",
        ".spec.config.env[].valueFrom.configMapKeyRef",
        &["key"],
    ),
    ("Subscription", ".status", &["lastUpdated"]),
    (
        "Subscription",
        ".status.catalogHealth[]",
        &["catalogSourceRef", "healthy", "lastUpdated"],
    ),
    (
        "Subscription",
        ".status.installplan",
        &["apiVersion", "kind", "name", "uuid"],
    ),
];

/// `(kind, path, key, OLM's value)` for enums, formats, types and lengths.
const VALUES: &[(&str, &str, &str, &str)] = &[
    (
        "CatalogSource",
        ".status.conditions[].status",
        "enum",
        r#"["True","False","Unknown"]"#,
    ),
    (
        "CatalogSource",
        ".status.conditions[].reason",
        "maxLength",
        "1024",
    ),
    (
        "CatalogSource",
        ".status.conditions[].message",
        "maxLength",
        "32768",
    ),
    (
        "CatalogSource",
        ".spec.grpcPodConfig.securityContextConfig",
        "enum",
        r#"["legacy","restricted"]"#,
    ),
    ("OLMConfig", ".status.conditions[].type", "maxLength", "316"),
    (
        "OperatorGroup",
        ".status.conditions[].status",
        "enum",
        r#"["True","False","Unknown"]"#,
    ),
    (
        "OperatorGroup",
        ".spec.upgradeStrategy",
        "enum",
        r#"["Default","TechPreviewUnsafeFailForward"]"#,
    ),
    (
        "OperatorCondition",
        ".spec.overrides[].status",
        "enum",
        r#"["True","False","Unknown"]"#,
    ),
    (
        "OperatorCondition",
        ".status.conditions[].observedGeneration",
        "minimum",
        "0",
    ),
    ("ClusterServiceVersion", ".spec.release", "maxLength", "20"),
    (
        "ClusterServiceVersion",
        ".spec.customresourcedefinitions.owned[].specDescriptors[].value",
        "type",
        r#""string""#,
    ),
    (
        "ClusterServiceVersion",
        ".spec.customresourcedefinitions.owned[].specDescriptors[].value",
        "format",
        r#""byte""#,
    ),
    (
        "ClusterServiceVersion",
        ".spec.webhookdefinitions[].type",
        "enum",
        r#"["ValidatingAdmissionWebhook","MutatingAdmissionWebhook","ConversionWebhook"]"#,
    ),
];

fn node<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, items) = part.strip_suffix("[]").map_or((part, false), |n| (n, true));
        cur = cur.get("properties")?.get(name)?;
        if items {
            cur = cur.get("items")?;
        }
    }
    Some(cur)
}

/// Every version's root schema of `kind`.
fn roots(kind: &str) -> Vec<(String, Value)> {
    static CRDS: std::sync::OnceLock<Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>> =
        std::sync::OnceLock::new();
    let crds = CRDS.get_or_init(|| messages::crd::all_crds().expect("CRDs"));
    let crd = crds
        .iter()
        .find(|c| c.spec.names.kind == kind)
        .expect("kind");
    let json = serde_json::to_value(crd).expect("JSON");
    json["spec"]["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_owned(),
                v["schema"]["openAPIV3Schema"].clone(),
            )
        })
        .collect()
}

#[test]
fn required_fields_are_olms_exactly() {
    let mut drift = Vec::new();
    for (kind, path, expected) in REQUIRED {
        let mut found = false;
        for (version, root) in roots(kind) {
            let Some(n) = node(&root, path) else { continue };
            found = true;
            let mut got: Vec<&str> = n
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            got.sort_unstable();
            let mut want = expected.to_vec();
            want.sort_unstable();
            if got != want {
                drift.push(format!(
                    "{kind} {version} {path}: required {got:?}, OLM requires {want:?}"
                ));
            }
        }
        if !found {
            drift.push(format!("{kind} {path}: no such schema node in any version"));
        }
    }
    assert!(
        drift.is_empty(),
        "CRD schemas drifted from OLM's:\n{}",
        drift.join("\n")
    );
}

#[test]
fn enums_formats_and_lengths_are_olms() {
    let mut drift = Vec::new();
    for (kind, path, key, expected) in VALUES {
        let expected: Value = serde_json::from_str(expected).expect("literal");
        let mut found = false;
        for (version, root) in roots(kind) {
            let Some(n) = node(&root, path) else { continue };
            found = true;
            let got = n.get(*key).cloned().unwrap_or(Value::Null);
            let same = match (&got, &expected) {
                (Value::Array(a), Value::Array(b)) => {
                    let mut a: Vec<String> = a.iter().map(Value::to_string).collect();
                    let mut b: Vec<String> = b.iter().map(Value::to_string).collect();
                    a.sort();
                    b.sort();
                    a == b
                }
                (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
                (a, b) => a == b,
            };
            if !same {
                drift.push(format!(
                    "{kind} {version} {path}: {key} is {got}, OLM has {expected}"
                ));
            }
        }
        if !found {
            drift.push(format!("{kind} {path}: no such schema node in any version"));
        }
    }
    assert!(
        drift.is_empty(),
        "CRD schemas drifted from OLM's:\n{}",
        drift.join("\n")
    );
}
