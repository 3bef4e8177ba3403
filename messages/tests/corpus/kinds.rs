//! Which Rust type models a document, by `apiVersion` and `kind`, and the typed round trip.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use k8s_openapi::api::{admissionregistration, apps, core, networking, policy, rbac, scheduling};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use messages::crd::{
    catalog_source, csv, install_plan, olm_config, operator, operator_condition, operator_group,
    subscription,
};

/// How a document was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Model {
    /// An `operators.coreos.com` kind, decoded with our types.
    Olm,
    /// A Kubernetes kind decoded with k8s-openapi types.
    Kubernetes,
    /// A kind no Rust type here models (other operators' CRs, or API versions k8s-openapi
    /// dropped such as `apiextensions.k8s.io/v1beta1`); counted, not round-tripped.
    Unmodelled,
}

fn typed<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<Value, String> {
    let decoded: T = serde_json::from_value(doc.clone()).map_err(|e| format!("decode: {e}"))?;
    serde_json::to_value(&decoded).map_err(|e| format!("encode: {e}"))
}

/// Like [`typed`], and the decoded value must also survive MessagePack (`to_vec_named`), which
/// the lead uses for the message journal and caches.
fn typed_olm<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(
    doc: &Value,
) -> Result<Value, String> {
    let decoded: T = serde_json::from_value(doc.clone()).map_err(|e| format!("decode: {e}"))?;
    let packed =
        rmp_serde::to_vec_named(&decoded).map_err(|e| format!("MessagePack encode: {e}"))?;
    let unpacked: T =
        rmp_serde::from_slice(&packed).map_err(|e| format!("MessagePack decode: {e}"))?;
    if unpacked != decoded {
        return Err("MessagePack round trip changed the value".to_owned());
    }
    serde_json::to_value(&decoded).map_err(|e| format!("encode: {e}"))
}

/// Round-trips `doc` through the type modelling it; `None` when no type does.
pub fn roundtrip(
    api_version: &str,
    kind: &str,
    doc: &Value,
) -> (Model, Option<Result<Value, String>>) {
    let olm = |r| (Model::Olm, Some(r));
    let k8s = |r| (Model::Kubernetes, Some(r));
    match (api_version, kind) {
        // Matched on kind alone: the service-binding-operator bundles declare their CSV as
        // `binding.operators.coreos.com/v1alpha1`; operator-registry and OLM select bundle
        // objects by kind, and our type keeps the apiVersion string as read.
        (_, "ClusterServiceVersion") => olm(typed_olm::<csv::ClusterServiceVersion>(doc)),
        ("operators.coreos.com/v1alpha1", "CatalogSource") => {
            olm(typed_olm::<catalog_source::CatalogSource>(doc))
        }
        ("operators.coreos.com/v1alpha1", "Subscription") => {
            olm(typed_olm::<subscription::Subscription>(doc))
        }
        ("operators.coreos.com/v1alpha1", "InstallPlan") => {
            olm(typed_olm::<install_plan::InstallPlan>(doc))
        }
        ("operators.coreos.com/v1", "OperatorGroup") => {
            olm(typed_olm::<operator_group::OperatorGroup>(doc))
        }
        ("operators.coreos.com/v1alpha2", "OperatorGroup") => {
            olm(typed_olm::<operator_group::v1alpha2::OperatorGroup>(doc))
        }
        ("operators.coreos.com/v1", "OLMConfig") => olm(typed_olm::<olm_config::OLMConfig>(doc)),
        ("operators.coreos.com/v1", "Operator") => olm(typed_olm::<operator::Operator>(doc)),
        ("operators.coreos.com/v2", "OperatorCondition") => {
            olm(typed_olm::<operator_condition::OperatorCondition>(doc))
        }
        ("operators.coreos.com/v1", "OperatorCondition") => {
            olm(typed_olm::<operator_condition::v1::OperatorCondition>(doc))
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            k8s(typed::<apiextensions::v1::CustomResourceDefinition>(doc))
        }
        ("v1", "Service") => k8s(typed::<core::v1::Service>(doc)),
        ("v1", "ServiceAccount") => k8s(typed::<core::v1::ServiceAccount>(doc)),
        ("v1", "ConfigMap") => k8s(typed::<core::v1::ConfigMap>(doc)),
        ("v1", "Secret") => k8s(typed::<core::v1::Secret>(doc)),
        ("v1", "Namespace") => k8s(typed::<core::v1::Namespace>(doc)),
        ("v1", "Pod") => k8s(typed::<core::v1::Pod>(doc)),
        ("apps/v1", "Deployment") => k8s(typed::<apps::v1::Deployment>(doc)),
        ("rbac.authorization.k8s.io/v1", "Role") => k8s(typed::<rbac::v1::Role>(doc)),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => k8s(typed::<rbac::v1::RoleBinding>(doc)),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => k8s(typed::<rbac::v1::ClusterRole>(doc)),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            k8s(typed::<rbac::v1::ClusterRoleBinding>(doc))
        }
        ("policy/v1", "PodDisruptionBudget") => k8s(typed::<policy::v1::PodDisruptionBudget>(doc)),
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            k8s(typed::<scheduling::v1::PriorityClass>(doc))
        }
        ("networking.k8s.io/v1", "NetworkPolicy") => {
            k8s(typed::<networking::v1::NetworkPolicy>(doc))
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => k8s(typed::<
            admissionregistration::v1::ValidatingWebhookConfiguration,
        >(doc)),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => k8s(typed::<
            admissionregistration::v1::MutatingWebhookConfiguration,
        >(doc)),
        // rbac/v1beta1 has exactly the shape of rbac/v1 (k8s-openapi dropped v1beta1): decode
        // with the v1 type and put the version back, so every field is still checked.
        (
            "rbac.authorization.k8s.io/v1beta1",
            "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding",
        ) => {
            let mut as_v1 = doc.clone();
            as_v1["apiVersion"] = Value::from("rbac.authorization.k8s.io/v1");
            let back = roundtrip("rbac.authorization.k8s.io/v1", kind, &as_v1)
                .1
                .map(|r| {
                    r.map(|mut v| {
                        v["apiVersion"] = Value::from(api_version);
                        v
                    })
                });
            (Model::Kubernetes, back)
        }
        _ => (Model::Unmodelled, None),
    }
}
