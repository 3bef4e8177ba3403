//! Builds the CRDs of all kinds (multi-version kinds merged) and renders them to YAML files
//! named like OLM's (`0000_50_olm_00-<plural>.crd.yaml`).
//!
//! A few schema details kube-derive cannot express are patched here, each mirroring upstream
//! OLM's CRDs: OperatorGroup's `spec` and `upgradeStrategy` defaults and its required
//! `status.lastUpdated`; plus `spec: {}` defaults for kinds whose spec may be omitted. The rest of OLM's
//! validation (required lists, Kubernetes markers, CEL rules) is applied by [`super::conform`].

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::core::crd::merge_crds;
use serde_json::{Value, json};

use super::{
    catalog_source, csv, install_plan, olm_config, operator, operator_condition, operator_group,
    subscription,
};

/// Failures building or writing CRDs.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("merging the versions of {kind}")]
    Merge {
        kind: &'static str,
        #[source]
        source: kube::core::crd::MergeError,
    },
    #[error("patching the schema of {kind} at {pointer}: path not found")]
    Patch { kind: String, pointer: String },
    #[error("converting the CRD of {kind}")]
    Convert {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("rendering the CRD of {kind} to YAML")]
    Render {
        kind: String,
        #[source]
        source: serde_saphyr::ser::Error,
    },
    #[error("writing {path}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// All CRDs, sorted by plural name.
pub fn all_crds() -> Result<Vec<CustomResourceDefinition>, CrdError> {
    let operator_group = merge_crds(
        vec![
            operator_group::OperatorGroup::crd(),
            operator_group::v1alpha2::OperatorGroup::crd(),
        ],
        "v1",
    )
    .map_err(|source| CrdError::Merge {
        kind: "OperatorGroup",
        source,
    })?;
    let operator_condition = merge_crds(
        vec![
            operator_condition::OperatorCondition::crd(),
            operator_condition::v1::OperatorCondition::crd(),
        ],
        "v2",
    )
    .map_err(|source| CrdError::Merge {
        kind: "OperatorCondition",
        source,
    })?;

    let crds = vec![
        patch(
            catalog_source::CatalogSource::crd(),
            &[
                (
                    SECURITY_CONTEXT_CONFIG,
                    "enum",
                    json!(["legacy", "restricted"]),
                ),
                (
                    "/status/properties/conditions",
                    "x-kubernetes-list-type",
                    json!("map"),
                ),
                (
                    "/status/properties/conditions",
                    "x-kubernetes-list-map-keys",
                    json!(["type"]),
                ),
            ],
        )?,
        patch(
            csv::ClusterServiceVersion::crd(),
            &[
                // WebhookDescription's kubebuilder markers.
                (WEBHOOK_CONTAINER_PORT, "default", json!(443)),
                (WEBHOOK_CONTAINER_PORT, "minimum", json!(1)),
                (WEBHOOK_CONTAINER_PORT, "maximum", json!(65535)),
                (
                    "/spec/properties/webhookdefinitions/items/properties/type",
                    "enum",
                    json!([
                        "ValidatingAdmissionWebhook",
                        "MutatingAdmissionWebhook",
                        "ConversionWebhook"
                    ]),
                ),
            ],
        )?,
        install_plan::InstallPlan::crd(),
        patch(
            olm_config::OLMConfig::crd(),
            &[
                ("/spec", "default", json!({})),
                // Upstream's kubebuilder pattern: a Go duration in hours, minutes and seconds only.
                (
                    "/spec/properties/features/properties/packageServerSyncInterval",
                    "pattern",
                    json!(r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"),
                ),
            ],
        )?,
        // Spec may be omitted (Go: `json:"spec,omitempty"`); default it so decoding never fails.
        patch(operator_condition, &[("/spec", "default", json!({}))])?,
        patch(
            operator_group,
            &[
                // Spec may be omitted (OLM requires only metadata): default it in every version; v1's
                // default below then replaces this one.
                ("/spec", "default", json!({})),
                // `+kubebuilder:default={upgradeStrategy:Default}` on the spec (v1 only: the
                // apiserver rejects a default naming a field the version lacks).
                ("/spec", "default", json!({ "upgradeStrategy": "Default" })),
                (
                    "/spec/properties/upgradeStrategy",
                    "default",
                    json!("Default"),
                ),
                (
                    "/spec/properties/upgradeStrategy",
                    "enum",
                    json!(["Default", "TechPreviewUnsafeFailForward"]),
                ),
                (
                    "/spec/properties/targetNamespaces",
                    "x-kubernetes-list-type",
                    json!("set"),
                ),
                (
                    "/status/properties/namespaces",
                    "x-kubernetes-list-type",
                    json!("set"),
                ),
                ("/status", "required", json!(["lastUpdated"])),
            ],
        )?,
        patch(
            operator::Operator::crd(),
            &[("/spec", "default", json!({}))],
        )?,
        subscription::Subscription::crd(),
    ];
    let mut crds = crds
        .into_iter()
        .map(conform_to_olm)
        .map(|crd| match crd {
            // After conforming: quantities are recognised by their descriptions.
            Ok(crd) if crd.spec.names.kind == "ClusterServiceVersion" => {
                strip_descriptions(crd, DEPLOYMENT_SPEC_SCHEMA)
            }
            other => other,
        })
        .collect::<Result<Vec<_>, _>>()?;
    crds.sort_by(|a, b| a.spec.names.plural.cmp(&b.spec.names.plural));
    Ok(crds)
}

/// Applies OLM's published validation facts ([`super::conform`]), the markers of embedded Kubernetes types
/// ([`super::kube_markers`]) and OLM's CEL rules ([`super::cel`]) to every version of `crd`.
fn conform_to_olm(crd: CustomResourceDefinition) -> Result<CustomResourceDefinition, CrdError> {
    let kind = crd.spec.names.kind.clone();
    let convert = |source| CrdError::Convert {
        kind: kind.clone(),
        source,
    };
    let mut value = serde_json::to_value(&crd).map_err(convert)?;
    super::conform::conform(&kind, &mut value);
    serde_json::from_value(value).map_err(convert)
}

/// `grpcPodConfig.securityContextConfig` in the CatalogSource schema.
const SECURITY_CONTEXT_CONFIG: &str =
    "/spec/properties/grpcPodConfig/properties/securityContextConfig";

/// `webhookdefinitions[].containerPort` in the CSV schema.
const WEBHOOK_CONTAINER_PORT: &str =
    "/spec/properties/webhookdefinitions/items/properties/containerPort";

/// The embedded apps/v1 DeploymentSpec in the CSV schema.
const DEPLOYMENT_SPEC_SCHEMA: &str =
    "/spec/properties/install/properties/spec/properties/deployments/items/properties/spec";

/// Drops the `description`s below `pointer` (the embedded Kubernetes types' field docs, which
/// `kubectl explain deployment.spec` already shows). This brings the CSV CRD from ~353 KB to ~78 KB
/// under 256 KiB of JSON, so even client-side `kubectl apply` (which copies the object into
/// the last-applied annotation, limit 256 KiB) accepts it. Validation is unchanged.
fn strip_descriptions(
    crd: CustomResourceDefinition,
    pointer: &str,
) -> Result<CustomResourceDefinition, CrdError> {
    fn strip(node: &mut Value) {
        match node {
            Value::Object(map) => {
                map.remove("description");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let kind = crd.spec.names.kind.clone();
    let convert = |source| CrdError::Convert {
        kind: kind.clone(),
        source,
    };
    let mut value = serde_json::to_value(&crd).map_err(convert)?;
    let props = format!("/schema/openAPIV3Schema/properties{pointer}");
    let mut found = false;
    for version in value
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(node) = version.pointer_mut(&props) {
            // Keep the node's own description, strip its children's.
            let own = node.get("description").cloned();
            strip(node);
            if let (Some(own), Some(map)) = (own, node.as_object_mut()) {
                map.insert("description".to_owned(), own);
            }
            found = true;
        }
    }
    if !found {
        return Err(CrdError::Patch {
            kind,
            pointer: pointer.to_owned(),
        });
    }
    serde_json::from_value(value).map_err(convert)
}

/// Sets `key: value` on the schema node at `pointer` (relative to the root object's properties)
/// in every version of `crd` that has that node.
fn patch(
    crd: CustomResourceDefinition,
    patches: &[(&str, &str, Value)],
) -> Result<CustomResourceDefinition, CrdError> {
    let kind = crd.spec.names.kind.clone();
    let convert = |source| CrdError::Convert {
        kind: kind.clone(),
        source,
    };
    let mut value = serde_json::to_value(&crd).map_err(convert)?;
    let mut versions = value
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut);
    for (pointer, key, patch_value) in patches {
        // A node may exist in some versions only (e.g. v1alpha2 OperatorGroups lack
        // upgradeStrategy); it must exist in at least one.
        let props = format!("/schema/openAPIV3Schema/properties{pointer}");
        let mut applied = 0;
        for version in versions.iter_mut().flat_map(|v| v.iter_mut()) {
            // A default may only name fields the version has (v1alpha2 has no upgradeStrategy: the
            // apiserver rejects `default: {upgradeStrategy: ..}` there with "must not have unknown fields").
            let fits = |node: &serde_json::Map<String, Value>| match patch_value
                .as_object()
                .filter(|_| *key == "default")
            {
                Some(fields) => fields
                    .keys()
                    .all(|f| node.get("properties").and_then(|p| p.get(f)).is_some()),
                None => true,
            };
            if let Some(node) = version.pointer_mut(&props).and_then(Value::as_object_mut)
                && fits(node)
            {
                node.insert((*key).to_owned(), patch_value.clone());
                applied += 1;
            }
        }
        if applied == 0 {
            return Err(CrdError::Patch {
                kind: kind.clone(),
                pointer: (*pointer).to_owned(),
            });
        }
    }
    serde_json::from_value(value).map_err(convert)
}

/// OLM's file name for a CRD: `0000_50_olm_00-<plural>.crd.yaml`.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("0000_50_olm_00-{}.crd.yaml", crd.spec.names.plural)
}

/// `(file name, YAML text)` for every CRD.
pub fn render_crds() -> Result<Vec<(String, String)>, CrdError> {
    all_crds()?
        .into_iter()
        .map(|crd| {
            let kind = crd.spec.names.kind.clone();
            let yaml = serde_saphyr::to_string(&crd)
                .map_err(|source| CrdError::Render { kind, source })?;
            Ok((crd_file_name(&crd), format!("---\n{yaml}")))
        })
        .collect()
}

/// Writes every CRD to `dir` (created if missing), one file per kind.
pub fn write_crds(dir: &Path) -> Result<Vec<std::path::PathBuf>, CrdError> {
    let write_err = |path: &Path, source| CrdError::Write {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|source| write_err(dir, source))?;
    render_crds()?
        .into_iter()
        .map(|(name, yaml)| {
            let path = dir.join(name);
            std::fs::write(&path, yaml).map_err(|source| write_err(&path, source))?;
            Ok(path)
        })
        .collect()
}
