//! Table tests of the Subscription config projection (spec §2.6).

use super::*;
use k8s_openapi::api::core::v1::{
    EnvVar, NodeAffinity, PodTemplateSpec, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rstest::rstest;
use serde_json::json;

fn spec() -> DeploymentSpec {
    serde_json::from_value(json!({
        "selector": {"matchLabels": {"app": "op"}},
        "template": {
            "metadata": {"annotations": {"keep": "mine"}},
            "spec": {
                "nodeSelector": {"old": "yes"},
                "tolerations": [{"key": "a", "operator": "Exists"}],
                "volumes": [{"name": "cfg", "emptyDir": {}}],
                "containers": [{"name": "op", "image": "op:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "volumeMounts": [{"name": "cfg", "mountPath": "/old"}],
                    "resources": {"limits": {"cpu": "1"}}}]
            }
        }
    }))
    .unwrap_or_else(|_| DeploymentSpec {
        template: PodTemplateSpec::default(),
        ..Default::default()
    })
}

fn config(value: serde_json::Value) -> SubscriptionConfig {
    serde_json::from_value(value).unwrap_or_default()
}

fn pod(spec: &DeploymentSpec) -> PodSpec {
    spec.template.spec.clone().unwrap_or_default()
}

fn env(spec: &DeploymentSpec) -> Vec<(String, String)> {
    pod(spec).containers[0]
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e: EnvVar| (e.name, e.value.unwrap_or_default()))
        .collect()
}

#[rstest]
#[case::the_subscription_wins_and_new_variables_are_appended(
    json!({"env": [{"name": "B", "value": "sub"}, {"name": "C", "value": "3"}]}),
    &[("A", "1"), ("B", "sub"), ("C", "3")]
)]
#[case::no_env_changes_nothing(json!({}), &[("A", "1"), ("B", "2")])]
fn env_is_merged_by_name(#[case] cfg: serde_json::Value, #[case] expected: &[(&str, &str)]) {
    let mut s = spec();
    apply_to_spec(&mut s, &config(cfg));
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(env(&s), expected);
}

#[test]
fn node_selector_and_resources_replace_what_the_csv_says() {
    let mut s = spec();
    apply_to_spec(
        &mut s,
        &config(
            json!({"nodeSelector": {"disk": "ssd"}, "resources": {"requests": {"memory": "64Mi"}}}),
        ),
    );
    let p = pod(&s);
    assert_eq!(
        p.node_selector,
        Some(BTreeMap::from([("disk".to_string(), "ssd".to_string())]))
    );
    let want = ResourceRequirements {
        requests: Some(BTreeMap::from([(
            "memory".to_string(),
            Quantity("64Mi".into()),
        )])),
        ..Default::default()
    };
    assert_eq!(p.containers[0].resources, Some(want));
}

#[test]
fn tolerations_are_appended_only_when_absent() {
    let mut s = spec();
    apply_to_spec(
        &mut s,
        &config(
            json!({"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}),
        ),
    );
    let keys: Vec<Option<String>> = pod(&s)
        .tolerations
        .unwrap_or_default()
        .into_iter()
        .map(|t: Toleration| t.key)
        .collect();
    assert_eq!(keys, vec![Some("a".into()), Some("b".into())]);
}

#[test]
fn volumes_and_mounts_are_replaced_by_name() {
    let mut s = spec();
    apply_to_spec(
        &mut s,
        &config(json!({
            "volumes": [{"name": "cfg", "configMap": {"name": "settings"}}, {"name": "extra", "emptyDir": {}}],
            "volumeMounts": [{"name": "cfg", "mountPath": "/new"}]
        })),
    );
    let p = pod(&s);
    let volumes: Vec<(String, bool)> = p
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v: Volume| (v.name, v.config_map.is_some()))
        .collect();
    assert_eq!(volumes, vec![("cfg".into(), true), ("extra".into(), false)]);
    let mounts: Vec<String> = p.containers[0]
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|m: VolumeMount| m.mount_path)
        .collect();
    assert_eq!(mounts, vec!["/new".to_string()]);
}

#[test]
fn annotations_are_added_without_overwriting() {
    let mut s = spec();
    let cfg = config(json!({"annotations": {"keep": "theirs", "new": "added"}}));
    apply_to_spec(&mut s, &cfg);
    let annotations = s
        .template
        .metadata
        .clone()
        .and_then(|m| m.annotations)
        .unwrap_or_default();
    assert_eq!(annotations.get("keep").map(String::as_str), Some("mine"));
    assert_eq!(annotations.get("new").map(String::as_str), Some("added"));
    let mut meta = ObjectMeta::default();
    apply_to_metadata(&mut meta, &cfg);
    assert_eq!(meta.annotations.unwrap_or_default().len(), 2);
}

#[test]
fn affinity_parts_the_subscription_sets_override() {
    let mut s = spec();
    apply_to_spec(
        &mut s,
        &config(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}),
        ),
    );
    let affinity = pod(&s).affinity.unwrap_or_default();
    assert!(affinity.node_affinity.is_some_and(|n: NodeAffinity| {
        n.required_during_scheduling_ignored_during_execution
            .is_some()
    }));
    assert!(affinity.pod_affinity.is_none());
}
