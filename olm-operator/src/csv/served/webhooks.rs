//! A CSV's `spec.webhookdefinitions`, pure: OLM's checks (unique `generateName`, `ValidWebhookRules`,
//! conversion webhooks only for CSVs supporting only AllNamespaces and only on CRDs the CSV owns), plus
//! what this port adds so that nothing is half created: the named deployment must be in the strategy.
//! Builders: one Validating/MutatingWebhookConfiguration per description (`generateName: <name>-`, scoped to
//! the OperatorGroup's namespaces by its namespace selector, labelled with the CSV's owner labels,
//! `olm.webhook-description-generate-name` and `olm.webhook-description-hash`), and the CRD `spec.conversion`
//! of a conversion webhook.

use crate::hash;
use crate::strategy::owner_labels;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use messages::crd::csv::{
    ClusterServiceVersion, InstallModeType, WebhookAdmissionType, WebhookDescription,
};
use std::collections::BTreeMap;

/// Label naming the description a configuration was made from (OLM's `WebhookDescKey`).
pub const DESCRIPTION_LABEL: &str = "olm.webhook-description-generate-name";
/// Label with the hash of that description (OLM's `WebhookHashKey`; ours hashes the description's JSON).
pub const HASH_LABEL: &str = "olm.webhook-description-hash";
/// Review versions of a conversion webhook whose description lists none (a v1 CRD requires some).
const DEFAULT_CONVERSION_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The descriptions of the CSV.
pub fn of(csv: &ClusterServiceVersion) -> &[WebhookDescription] {
    csv.spec.webhook_definitions.as_deref().unwrap_or_default()
}

/// OLM's `ValidWebhookRules`.
pub fn valid_rules(rules: &[RuleWithOperations]) -> Result<(), String> {
    for rule in rules {
        let groups = rule.api_groups.as_deref().unwrap_or_default();
        let has = |list: &[String], s: &str| list.iter().any(|g| g == s);
        if has(groups, "*") {
            return Err("webhook rules cannot include all groups".into());
        }
        if has(groups, "operators.coreos.com") {
            return Err("webhook rules cannot include the OLM group".into());
        }
        if has(groups, "admissionregistration.k8s.io") {
            let resources = rule.resources.as_deref().unwrap_or_default();
            if has(resources, "*")
                || has(resources, "MutatingWebhookConfiguration")
                || has(resources, "ValidatingWebhookConfiguration")
            {
                return Err("webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources".into());
            }
        }
    }
    Ok(())
}

/// OLM's `isSingletonOperator`: no install mode but AllNamespaces is supported, and AllNamespaces is not
/// declared unsupported.
pub fn supports_only_all_namespaces(csv: &ClusterServiceVersion) -> bool {
    csv.spec
        .install_modes
        .iter()
        .flatten()
        .all(|m| (m.type_ == InstallModeType::AllNamespaces) == m.supported)
}

/// Every check, in OLM's order; the message is the CSV's status message (reason
/// `InvalidWebhookDescription`).
pub fn validate(csv: &ClusterServiceVersion) -> Result<(), String> {
    let deployments: Vec<&str> = csv
        .spec
        .install
        .spec
        .as_ref()
        .map(|s| s.deployments.iter().map(|d| d.name.as_str()).collect())
        .unwrap_or_default();
    let owned_crds: Vec<&str> = csv
        .spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|d| d.owned.as_ref())
        .map(|o| o.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    let mut names = std::collections::BTreeSet::new();
    for desc in of(csv) {
        if !names.insert(desc.generate_name.as_str()) {
            return Err("CSV contains repeated WebhookDescription name".into());
        }
        valid_rules(desc.rules.as_deref().unwrap_or_default())?;
        let deployment = desc.deployment_name.as_deref().unwrap_or_default();
        if !deployments.contains(&deployment) {
            return Err(format!(
                "webhook {} names deployment {deployment:?}, which is not in the CSV's install strategy",
                desc.generate_name
            ));
        }
        if desc.type_ == WebhookAdmissionType::ConversionWebhook {
            if !supports_only_all_namespaces(csv) {
                return Err("unable to manage conversion webhook: CSVs with conversion webhooks must support only AllNamespaces".into());
            }
            let crds = desc.conversion_crds.as_deref().unwrap_or_default();
            if crds.is_empty() {
                return Err("unable to manager conversion webhook: conversion webhook must have at least one CRD specified".into());
            }
            if let Some(crd) = crds.iter().find(|c| !owned_crds.contains(&c.as_str())) {
                return Err(format!(
                    "csv {} does not own CRD {crd}",
                    csv.metadata.name.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    Ok(())
}

/// The labels of the configuration made from `desc` for CSV `csv_name` in `namespace`.
pub fn labels(
    csv_name: &str,
    namespace: &str,
    desc: &WebhookDescription,
) -> BTreeMap<String, String> {
    let mut labels = owner_labels(csv_name, namespace);
    labels.insert(DESCRIPTION_LABEL.into(), desc.generate_name.clone());
    labels.insert(HASH_LABEL.into(), hash::of_json(desc));
    labels
}

/// The label selector finding the configuration of `desc` (owner labels + description name).
pub fn selector(csv_name: &str, namespace: &str, desc: &WebhookDescription) -> String {
    let mut s = crate::strategy::owner_selector(csv_name, namespace);
    s.push_str(&format!(",{DESCRIPTION_LABEL}={}", desc.generate_name));
    s
}

fn client_config(desc: &WebhookDescription, namespace: &str, ca: &[u8]) -> WebhookClientConfig {
    WebhookClientConfig {
        service: Some(ServiceReference {
            name: desc.service_name(),
            namespace: namespace.into(),
            path: desc.webhook_path.clone(),
            port: Some(desc.container_port()),
        }),
        ca_bundle: Some(ByteString(ca.to_vec())),
        url: None,
    }
}

fn meta(csv_name: &str, namespace: &str, desc: &WebhookDescription) -> ObjectMeta {
    ObjectMeta {
        generate_name: Some(format!("{}-", desc.generate_name)),
        labels: Some(labels(csv_name, namespace, desc)),
        ..ObjectMeta::default()
    }
}

/// OLM's `GetValidatingWebhook` in a configuration of its own.
pub fn validating(
    csv_name: &str,
    namespace: &str,
    desc: &WebhookDescription,
    namespace_selector: Option<LabelSelector>,
    ca: &[u8],
) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: meta(csv_name, namespace, desc),
        webhooks: Some(vec![ValidatingWebhook {
            name: desc.generate_name.clone(),
            rules: desc.rules.clone(),
            failure_policy: desc.failure_policy.clone(),
            match_policy: desc.match_policy.clone(),
            namespace_selector,
            object_selector: desc.object_selector.clone(),
            side_effects: desc.side_effects.clone().unwrap_or_default(),
            timeout_seconds: desc.timeout_seconds,
            admission_review_versions: desc.admission_review_versions.clone().unwrap_or_default(),
            client_config: client_config(desc, namespace, ca),
            match_conditions: None,
        }]),
    }
}

/// OLM's `GetMutatingWebhook` in a configuration of its own.
pub fn mutating(
    csv_name: &str,
    namespace: &str,
    desc: &WebhookDescription,
    namespace_selector: Option<LabelSelector>,
    ca: &[u8],
) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: meta(csv_name, namespace, desc),
        webhooks: Some(vec![MutatingWebhook {
            name: desc.generate_name.clone(),
            rules: desc.rules.clone(),
            failure_policy: desc.failure_policy.clone(),
            match_policy: desc.match_policy.clone(),
            namespace_selector,
            object_selector: desc.object_selector.clone(),
            side_effects: desc.side_effects.clone().unwrap_or_default(),
            timeout_seconds: desc.timeout_seconds,
            admission_review_versions: desc.admission_review_versions.clone().unwrap_or_default(),
            client_config: client_config(desc, namespace, ca),
            reinvocation_policy: desc.reinvocation_policy.clone(),
            match_conditions: None,
        }]),
    }
}

/// The CRD `spec.conversion` of a conversion webhook (path `/` unless `webhookPath`).
pub fn conversion(
    desc: &WebhookDescription,
    namespace: &str,
    ca: &[u8],
) -> ext::CustomResourceConversion {
    let versions = desc
        .admission_review_versions
        .clone()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            DEFAULT_CONVERSION_REVIEW_VERSIONS
                .map(String::from)
                .to_vec()
        });
    ext::CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(ext::WebhookConversion {
            client_config: Some(ext::WebhookClientConfig {
                service: Some(ext::ServiceReference {
                    name: desc.service_name(),
                    namespace: namespace.into(),
                    path: Some(desc.webhook_path.clone().unwrap_or_else(|| "/".into())),
                    port: Some(desc.container_port()),
                }),
                ca_bundle: Some(ByteString(ca.to_vec())),
                url: None,
            }),
            conversion_review_versions: versions,
        }),
    }
}

/// Is this CRD's conversion the webhook of `desc` with the CA of hash `ca_hash` as its newest? (OLM's
/// readiness check also wants a CA bundle; ours wants the current one first.)
pub fn converts_with(
    crd: &ext::CustomResourceDefinition,
    desc: &WebhookDescription,
    ca_hash: &str,
) -> bool {
    let Some(conv) = crd.spec.conversion.as_ref() else {
        return false;
    };
    let config = conv.webhook.as_ref().and_then(|w| w.client_config.as_ref());
    conv.strategy == "Webhook"
        && config
            .and_then(|c| c.service.as_ref())
            .is_some_and(|s| s.name == desc.service_name())
        && config
            .and_then(|c| c.ca_bundle.as_ref())
            .is_some_and(|b| super::bundle::newest_is(&b.0, ca_hash))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn csv(modes: Value, webhooks: Value) -> ClusterServiceVersion {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "op.v1", "namespace": "ns"},
            "spec": {
                "installModes": modes,
                "customresourcedefinitions": {"owned": [{"name": "widgets.x.io", "version": "v1", "kind": "Widget"}]},
                "install": {"strategy": "deployment", "spec": {"deployments": [
                    {"name": "op", "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {}}}]}},
                "webhookdefinitions": webhooks
            }
        }))
        .expect("a CSV")
    }

    fn all_only() -> Value {
        json!([{"type": "OwnNamespace", "supported": false}, {"type": "SingleNamespace", "supported": false},
               {"type": "MultiNamespace", "supported": false}, {"type": "AllNamespaces", "supported": true}])
    }

    fn own_and_all() -> Value {
        json!([{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": true}])
    }

    fn hook(name: &str, kind: &str, deployment: &str, extra: Value) -> Value {
        let mut v = json!({"generateName": name, "type": kind, "deploymentName": deployment,
                           "admissionReviewVersions": ["v1"], "sideEffects": "None"});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    }

    #[rstest]
    #[case::a_validating_webhook_is_fine(own_and_all(), json!([hook("v.x.io", "ValidatingAdmissionWebhook", "op", json!({}))]), None)]
    #[case::a_repeated_name(own_and_all(), json!([hook("v.x.io", "ValidatingAdmissionWebhook", "op", json!({})), hook("v.x.io", "MutatingAdmissionWebhook", "op", json!({}))]), Some("CSV contains repeated WebhookDescription name"))]
    #[case::all_groups(own_and_all(), json!([hook("v.x.io", "ValidatingAdmissionWebhook", "op", json!({"rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]}))]), Some("webhook rules cannot include all groups"))]
    #[case::the_olm_group(own_and_all(), json!([hook("v.x.io", "ValidatingAdmissionWebhook", "op", json!({"rules": [{"apiGroups": ["operators.coreos.com"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]}))]), Some("webhook rules cannot include the OLM group"))]
    #[case::webhook_configurations(own_and_all(), json!([hook("v.x.io", "ValidatingAdmissionWebhook", "op", json!({"rules": [{"apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"], "resources": ["ValidatingWebhookConfiguration"], "operations": ["*"]}]}))]), Some("webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources"))]
    #[case::an_unknown_deployment(own_and_all(), json!([hook("v.x.io", "ValidatingAdmissionWebhook", "ghost", json!({}))]), Some("webhook v.x.io names deployment \"ghost\", which is not in the CSV's install strategy"))]
    #[case::conversion_on_an_own_namespace_capable_csv(own_and_all(), json!([hook("c.x.io", "ConversionWebhook", "op", json!({"conversionCRDs": ["widgets.x.io"]}))]), Some("unable to manage conversion webhook: CSVs with conversion webhooks must support only AllNamespaces"))]
    #[case::conversion_on_an_all_namespaces_only_csv(all_only(), json!([hook("c.x.io", "ConversionWebhook", "op", json!({"conversionCRDs": ["widgets.x.io"]}))]), None)]
    #[case::conversion_without_crds(all_only(), json!([hook("c.x.io", "ConversionWebhook", "op", json!({}))]), Some("unable to manager conversion webhook: conversion webhook must have at least one CRD specified"))]
    #[case::conversion_of_a_crd_not_owned(all_only(), json!([hook("c.x.io", "ConversionWebhook", "op", json!({"conversionCRDs": ["gadgets.x.io"]}))]), Some("csv op.v1 does not own CRD gadgets.x.io"))]
    fn webhook_descriptions_are_checked_as_olm_does(
        #[case] modes: Value,
        #[case] webhooks: Value,
        #[case] problem: Option<&str>,
    ) {
        assert_eq!(validate(&csv(modes, webhooks)).err().as_deref(), problem);
    }

    #[test]
    fn a_validating_configuration_points_at_the_service_with_the_ca_and_the_group_selector() {
        let c = csv(
            own_and_all(),
            json!([hook(
                "v.x.io",
                "ValidatingAdmissionWebhook",
                "op.ctrl",
                json!({"containerPort": 9443, "webhookPath": "/validate"})
            )]),
        );
        let desc = &of(&c)[0];
        let selector = LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "olm.operatorgroup.uid/u".into(),
                String::new(),
            )])),
            ..LabelSelector::default()
        };
        let v = validating("op.v1", "ns", desc, Some(selector.clone()), b"CA");
        assert_eq!(v.metadata.generate_name.as_deref(), Some("v.x.io-"));
        let labels = v.metadata.labels.clone().expect("labels");
        assert_eq!(
            labels.get(DESCRIPTION_LABEL).map(String::as_str),
            Some("v.x.io")
        );
        assert_eq!(labels.get("olm.owner").map(String::as_str), Some("op.v1"));
        assert_eq!(labels.get(HASH_LABEL), Some(&hash::of_json(desc)));
        let hook = &v.webhooks.expect("webhooks")[0];
        assert_eq!(hook.namespace_selector, Some(selector));
        let service = hook.client_config.service.clone().expect("service");
        assert_eq!(
            (
                service.name.as_str(),
                service.namespace.as_str(),
                service.path.as_deref(),
                service.port
            ),
            ("op-ctrl-service", "ns", Some("/validate"), Some(9443))
        );
        assert_eq!(
            hook.client_config.ca_bundle,
            Some(ByteString(b"CA".to_vec()))
        );
        let m = mutating("op.v1", "ns", desc, None, b"CA");
        assert_eq!(
            m.webhooks.expect("webhooks")[0].namespace_selector,
            None,
            "AllNamespaces: every namespace"
        );
    }

    #[test]
    fn a_conversion_goes_to_the_service_root_with_the_ca() {
        let c = csv(
            all_only(),
            json!([hook(
                "c.x.io",
                "ConversionWebhook",
                "op",
                json!({"conversionCRDs": ["widgets.x.io"], "containerPort": 8443, "admissionReviewVersions": []})
            )]),
        );
        let desc = &of(&c)[0];
        let conv = conversion(desc, "ns", b"CA");
        assert_eq!(conv.strategy, "Webhook");
        let webhook = conv.webhook.clone().expect("webhook");
        assert_eq!(webhook.conversion_review_versions, vec!["v1", "v1beta1"]);
        let service = webhook
            .client_config
            .and_then(|c| c.service)
            .expect("service");
        assert_eq!(
            (service.path.as_deref(), service.port),
            (Some("/"), Some(8443))
        );
        let mut crd = ext::CustomResourceDefinition::default();
        assert!(!converts_with(
            &crd,
            desc,
            &super::super::certs::ca_hash(b"CA")
        ));
        crd.spec.conversion = Some(conv);
        assert!(converts_with(
            &crd,
            desc,
            &super::super::certs::ca_hash(b"CA")
        ));
        assert!(!converts_with(
            &crd,
            desc,
            &super::super::certs::ca_hash(b"other")
        ));
    }
}
