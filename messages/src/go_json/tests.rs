//! The rules of [`super`], each on a piece of a real published manifest.

use super::*;
use crate::crd::csv::ClusterServiceVersion;
use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::rbac::v1::PolicyRule;
use rstest::rstest;
use serde_json::json;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("test YAML parses")
}

// Rule 1: an annotation with nothing after its colon (a CSV of a community bundle: `createdAt:`) is present and
// empty, as Go reads it; the typed CSV decodes.
#[rstest]
#[case::created_at_empty(
    "createdAt",
    "metadata:\n  name: a.v1\n  annotations:\n    createdAt:\n    containerImage: quay.io/a/b:1\n"
)]
#[case::container_image_empty(
    "containerImage",
    "metadata:\n  name: a.v1\n  annotations:\n    containerImage:\n"
)]
fn a_null_annotation_is_an_empty_string(#[case] key: &str, #[case] text: &str) {
    let v = yaml(text);
    let out = normalize::<ClusterServiceVersion>(&v).expect("OLM installs it");
    assert_eq!(out["metadata"]["annotations"][key], json!(""));
    let csv: ClusterServiceVersion = from_value(&v).expect("decodes");
    let annotations = csv.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get(key).map(String::as_str), Some(""));
}

// Rule 1 on nested typed fields: `creationTimestamp: null` in a pod template (kubebuilder writes it into every
// CSV's deployments, e.g. ibmcloud-operator 1.1.0) and `attributeRestrictions: null` in RBAC rules (yaks 0.7.0,
// a field Kubernetes removed) are dropped: the typed value omits them.
#[rstest]
#[case::pod_template_timestamp(
    "spec:\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec:\n          selector: {matchLabels: {app: op}}\n          template:\n            metadata:\n              creationTimestamp: null\n              labels: {app: op}\n            spec:\n              containers: [{name: op, image: op:1}]\n",
    "/spec/install/spec/deployments/0/spec/template/metadata/creationTimestamp"
)]
#[case::attribute_restrictions(
    "spec:\n  install:\n    strategy: deployment\n    spec:\n      permissions:\n      - serviceAccountName: op\n        rules:\n        - apiGroups: ['']\n          attributeRestrictions: null\n          resources: [pods]\n          verbs: [get]\n",
    "/spec/install/spec/permissions/0/rules/0/attributeRestrictions"
)]
fn a_null_typed_field_is_omitted(#[case] text: &str, #[case] pointer: &str) {
    let out = normalize::<ClusterServiceVersion>(&yaml(text)).expect("OLM installs it");
    assert_eq!(out.pointer(pointer), None, "{out}");
}

// Rule 1: a null list or string inside a typed struct is the zero value: `args:` with nothing (a container of a
// hand-written CSV) decodes as an empty list, `image:` as "".
#[test]
fn null_lists_and_strings_are_empty() {
    let v = yaml(
        "selector: {matchLabels: {app: op}}\ntemplate:\n  spec:\n    containers:\n    - name: op\n      image:\n      args:\n",
    );
    let spec: DeploymentSpec = from_value(&v).expect("decodes");
    let c = &spec.template.spec.expect("pod spec").containers[0];
    assert_eq!(c.image.as_deref(), None);
    assert_eq!(c.args, None);
    let rule: PolicyRule = from_value(&json!({"verbs": null, "apiGroups": null})).expect("decodes");
    assert!(rule.verbs.is_empty());
}

// Rule 2: untyped fields keep their nulls (a spec descriptor's `value`, a CRD's `default: null`).
#[test]
fn untyped_fields_keep_null() {
    let v = json!({"a": null, "b": [null, 1]});
    let out: Value = from_value(&v).expect("decodes");
    assert_eq!(out, v);
    let csv = yaml(
        "spec:\n  customresourcedefinitions:\n    owned:\n    - name: a.b.c\n      version: v1\n      kind: A\n      specDescriptors:\n      - path: size\n        value: null\n",
    );
    let out = normalize::<ClusterServiceVersion>(&csv).expect("decodes");
    let descriptor = &out["spec"]["customresourcedefinitions"]["owned"][0]["specDescriptors"][0];
    assert_eq!(descriptor.get("path"), Some(&json!("size")));
}

// Rule 3: what Go refuses is refused, naming the field.
#[rstest]
#[case::number_annotation(
    "metadata:\n  name: a.v1\n  annotations:\n    replicas: 1\n",
    "metadata.annotations.replicas",
    "expected a string"
)]
#[case::yaml11_bool_annotation(
    "metadata:\n  name: a.v1\n  labels:\n    enabled: yes\n",
    "metadata.labels.enabled",
    "expected a string"
)]
#[case::map_for_a_list(
    "spec:\n  install:\n    strategy: deployment\n    spec:\n      deployments: {name: op}\n",
    "spec.install.spec.deployments",
    "expected a sequence"
)]
#[case::string_for_replicas(
    "spec:\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec:\n          replicas: two\n          selector: {}\n          template: {}\n",
    "spec.install.spec.deployments[0].spec.replicas",
    "expected i32"
)]
fn a_type_mismatch_is_refused_with_its_path(
    #[case] text: &str,
    #[case] path: &str,
    #[case] reason: &str,
) {
    let e = normalize::<ClusterServiceVersion>(&yaml(text)).expect_err("OLM refuses it");
    assert_eq!(e.path, path, "{e}");
    assert!(e.message.contains(reason), "{e}");
    assert!(e.to_string().starts_with(path), "{e}");
}

// Rule 4: fields the type does not know are kept for the API server; nothing non-null changes.
#[test]
fn unknown_fields_are_kept() {
    let v = yaml(
        "metadata:\n  name: a.v1\n  annotations:\n    createdAt:\nspec:\n  futureField: {x: 1}\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: op\n        spec:\n          selector: {}\n          template:\n            spec:\n              containers: [{name: op, image: op:1}]\n              hostnameOverride: op\n",
    );
    let out = normalize::<ClusterServiceVersion>(&v).expect("decodes");
    assert_eq!(out["spec"]["futureField"], json!({"x": 1}));
    assert_eq!(
        out["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["hostnameOverride"],
        json!("op")
    );
    let mut expected = v.clone();
    expected["metadata"]["annotations"]["createdAt"] = json!("");
    assert_eq!(out, expected);
}

// Every kind's metadata: a ConfigMap from a bundle with `labels:` empty and an annotation null.
#[rstest]
#[case::null_labels_map(json!({"kind": "ConfigMap", "metadata": {"name": "c", "labels": null}, "data": {"a": "b"}}), json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}))]
#[case::null_annotation(json!({"kind": "Service", "metadata": {"name": "s", "annotations": {"x": null}}, "spec": {"ports": null}}), json!({"kind": "Service", "metadata": {"name": "s", "annotations": {"x": ""}}, "spec": {"ports": null}}))]
#[case::creation_timestamp(json!({"kind": "Role", "metadata": {"name": "r", "creationTimestamp": null}}), json!({"kind": "Role", "metadata": {"name": "r"}}))]
fn metadata_is_normalized_for_every_kind(#[case] object: Value, #[case] expected: Value) {
    assert_eq!(normalize_metadata(&object), Ok(expected));
}

#[test]
fn a_bad_metadata_field_is_named_from_the_root() {
    let e = normalize_metadata(&json!({"metadata": {"labels": {"tier": 3}}})).expect_err("refused");
    assert_eq!(e.path, "metadata.labels.tier");
    let e = normalize_metadata(&json!({"metadata": "x"})).expect_err("refused");
    assert_eq!(e.path, "metadata");
}
