//! Tests of the install-strategy validation and rendering.

use super::*;
use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use messages::crd::csv::{ClusterServiceVersionSpec, NamedInstallStrategy};
use rstest::rstest;

fn rule(verbs: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: (!resources.is_empty())
            .then(|| resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn deployment(name: &str) -> StrategyDeploymentSpec {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    StrategyDeploymentSpec {
        name: name.into(),
        spec: DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations: Some(BTreeMap::from([("own".into(), "kept".into())])),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some("op-sa".into()),
                    containers: vec![Container {
                        name: "op".into(),
                        image: Some("quay.io/op:1".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        label: Some(BTreeMap::from([("extra".into(), "label".into())])),
    }
}

pub fn csv() -> ClusterServiceVersion {
    let details = StrategyDetailsDeployment {
        deployments: vec![deployment("op")],
        permissions: Some(vec![StrategyDeploymentPermissions {
            service_account_name: "op-sa".into(),
            rules: vec![rule(&["get", "list"], &["configmaps"])],
        }]),
        cluster_permissions: Some(vec![StrategyDeploymentPermissions {
            service_account_name: "op-sa".into(),
            rules: vec![rule(&["list"], &["namespaces"])],
        }]),
    };
    let mut c = ClusterServiceVersion::new(
        "op.v1.0.0",
        ClusterServiceVersionSpec {
            install: NamedInstallStrategy {
                strategy: "deployment".into(),
                spec: Some(details),
            },
            ..Default::default()
        },
    );
    c.metadata.namespace = Some("ns".into());
    c.metadata.uid = Some("uid-1".into());
    c.metadata.annotations = Some(BTreeMap::from([
        ("olm.targetNamespaces".into(), "ns".into()),
        ("own".into(), "from-csv".into()),
        (
            "kubectl.kubernetes.io/last-applied-configuration".into(),
            "{...}".into(),
        ),
    ]));
    c
}

fn details(c: &mut ClusterServiceVersion) -> &mut StrategyDetailsDeployment {
    c.spec.install.spec.as_mut().expect("strategy details")
}

fn rendered(c: &ClusterServiceVersion) -> Rendered {
    render(c).expect("persisted").expect("valid strategy")
}

#[rstest]
#[case::an_unknown_strategy_name(|c: &mut ClusterServiceVersion| c.spec.install.strategy = "helm".into(), "unsupported install strategy \"helm\" (only \"deployment\" is supported)")]
#[case::a_missing_strategy_spec(|c: &mut ClusterServiceVersion| c.spec.install.spec = None, "spec.install.spec is missing")]
#[case::a_deployment_without_name(|c: &mut ClusterServiceVersion| details(c).deployments[0].name.clear(), "deployment #0 has no name")]
#[case::a_deployment_name_with_capitals(|c: &mut ClusterServiceVersion| details(c).deployments[0].name = "Op".into(), "deployment name \"Op\" is not a valid DNS-1123 subdomain")]
#[case::the_same_deployment_twice(|c: &mut ClusterServiceVersion| { let d = details(c).deployments[0].clone(); details(c).deployments.push(d) }, "deployment \"op\" appears more than once")]
#[case::a_deployment_without_selector(|c: &mut ClusterServiceVersion| details(c).deployments[0].spec.selector = LabelSelector::default(), "deployment \"op\" has an empty selector")]
#[case::a_selector_not_matching_the_template(|c: &mut ClusterServiceVersion| details(c).deployments[0].spec.selector.match_labels = Some(BTreeMap::from([("app".into(), "other".into())])), "deployment \"op\": selector does not match template labels")]
#[case::a_deployment_without_containers(|c: &mut ClusterServiceVersion| details(c).deployments[0].spec.template.spec = None, "deployment \"op\" has no containers")]
#[case::a_container_without_image(|c: &mut ClusterServiceVersion| { if let Some(p) = details(c).deployments[0].spec.template.spec.as_mut() { p.containers[0].image = None; } }, "deployment \"op\": container #0 has no name or no image")]
#[case::a_permission_without_service_account(|c: &mut ClusterServiceVersion| details(c).permissions = Some(vec![StrategyDeploymentPermissions { service_account_name: String::new(), rules: vec![] }]), "a permission entry has no valid serviceAccountName (\"\")")]
#[case::a_rule_without_verbs(|c: &mut ClusterServiceVersion| details(c).permissions = Some(vec![StrategyDeploymentPermissions { service_account_name: "sa".into(), rules: vec![rule(&[], &["pods"])] }]), "service account \"sa\": rule #0 has no verbs")]
#[case::a_rule_without_resources(|c: &mut ClusterServiceVersion| details(c).permissions = Some(vec![StrategyDeploymentPermissions { service_account_name: "sa".into(), rules: vec![rule(&["get"], &[])] }]), "service account \"sa\": rule #0 names neither resources nor nonResourceURLs")]
#[case::a_namespaced_non_resource_url(|c: &mut ClusterServiceVersion| details(c).permissions = Some(vec![StrategyDeploymentPermissions { service_account_name: "sa".into(), rules: vec![PolicyRule { non_resource_urls: Some(vec!["/metrics".into()]), verbs: vec!["get".into()], ..Default::default() }] }]), "service account \"sa\": rule #0 uses nonResourceURLs, which only clusterPermissions may")]
fn an_unusable_strategy_is_rejected_with_a_reason_a_person_can_act_on(
    #[case] break_it: fn(&mut ClusterServiceVersion),
    #[case] message: &str,
) {
    let mut c = csv();
    break_it(&mut c);
    let error = validate(&c).expect_err("invalid");
    assert_eq!(error.to_string(), message);
    assert_eq!(render(&c).expect("persisted"), Err(error));
}

#[test]
fn a_csv_not_read_from_the_api_cannot_be_rendered() {
    let mut c = csv();
    c.metadata.uid = None;
    assert_eq!(render(&c), Err(NotPersisted("uid")));
}

#[test]
fn deployments_carry_olms_labels_owner_reference_and_projected_annotations() {
    let r = rendered(&csv());
    let d = &r.deployments[0];
    let labels = d.metadata.labels.clone().unwrap_or_default();
    for (k, v) in [
        ("olm.managed", "true"),
        ("olm.owner", "op.v1.0.0"),
        ("olm.owner.namespace", "ns"),
        ("olm.owner.kind", "ClusterServiceVersion"),
        ("extra", "label"),
    ] {
        assert_eq!(labels.get(k).map(String::as_str), Some(v), "label {k}");
    }
    let owner = &d.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str(),
            owner.block_owner_deletion
        ),
        ("ClusterServiceVersion", "op.v1.0.0", "uid-1", Some(false))
    );
    let spec = d.spec.clone().expect("spec");
    let annotations = spec
        .template
        .metadata
        .clone()
        .and_then(|m| m.annotations)
        .unwrap_or_default();
    assert_eq!(
        annotations.get("olm.targetNamespaces").map(String::as_str),
        Some("ns")
    );
    assert_eq!(
        annotations.get("own").map(String::as_str),
        Some("from-csv"),
        "CSV annotations overlay the template's own"
    );
    assert!(!annotations.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
    assert!(
        labels.contains_key("olm.deployment-spec-hash"),
        "the Deployment carries the spec hash label"
    );
    assert!(
        !annotations.contains_key("olm.deployment-spec-hash"),
        "the spec hash never lives in the pod template (a changed hash alone would roll out a new ReplicaSet)"
    );
    assert_eq!(spec.revision_history_limit, Some(1));
    let env = spec.template.spec.expect("pod").containers[0]
        .env
        .clone()
        .unwrap_or_default();
    assert_eq!(
        env.iter()
            .filter(|e| e.name == "OPERATOR_CONDITION_NAME")
            .map(|e| e.value.clone())
            .collect::<Vec<_>>(),
        vec![Some("op.v1.0.0".to_string())]
    );
}

#[test]
fn the_spec_hash_is_stable_and_follows_the_spec() {
    let hash = |c: &ClusterServiceVersion| {
        rendered(c).deployments[0]
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("olm.deployment-spec-hash")
            .cloned()
    };
    let c = csv();
    assert_eq!(hash(&c), hash(&c.clone()));
    let mut changed = csv();
    if let Some(p) = details(&mut changed).deployments[0]
        .spec
        .template
        .spec
        .as_mut()
    {
        p.containers[0].image = Some("quay.io/op:2".into());
    }
    assert_ne!(hash(&c), hash(&changed));
    let mut annotated = csv();
    annotated
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert("new".into(), "x".into());
    assert_ne!(
        hash(&c),
        hash(&annotated),
        "a new CSV annotation reaches the pods, so it is a new spec"
    );
}

#[test]
fn rbac_is_rendered_per_service_account_with_bindings() {
    let r = rendered(&csv());
    assert_eq!(
        r.service_accounts
            .iter()
            .map(|s| s.metadata.name.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        vec!["op-sa"]
    );
    // The name an InstallPlan gives the same Role (`messages::rbac_names`: `<csv>-<sa>-<rules hash>`).
    let role = role_name(
        "op.v1.0.0",
        "op-sa",
        &[rule(&["get", "list"], &["configmaps"])],
    );
    assert!(role.starts_with("op.v1.0.0-op-sa-"), "{role}");
    assert_eq!(r.roles[0].metadata.name.as_deref(), Some(role.as_str()));
    assert_eq!(r.role_bindings[0].role_ref.name, role);
    assert_eq!(
        r.role_bindings[0].subjects.clone().unwrap_or_default()[0]
            .namespace
            .as_deref(),
        Some("ns")
    );
    let role_hash = r.roles[0]
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .get("olm.permissions.hash")
        .cloned();
    assert_eq!(
        role_hash,
        Some(rules_hash(&[rule(&["get", "list"], &["configmaps"])]))
    );
    let cluster_role = &r.cluster_roles[0];
    assert!(
        cluster_role.metadata.owner_references.is_none(),
        "a cluster-scoped object cannot be owned by a namespaced CSV"
    );
    assert!(cluster_role.metadata.namespace.is_none());
    assert_eq!(
        cluster_role
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("olm.owner.namespace")
            .map(String::as_str),
        Some("ns")
    );
    assert_eq!(r.cluster_role_bindings[0].role_ref.kind, "ClusterRole");
}

#[test]
fn cluster_role_names_differ_between_namespaces() {
    let rules = [rule(&["get"], &["pods"])];
    assert_ne!(
        cluster_role_name("op.v1", "a", "sa", &rules),
        cluster_role_name("op.v1", "b", "sa", &rules)
    );
    let long = "x".repeat(300);
    assert!(role_name(&long, "sa", &rules).len() <= 63);
}

#[rstest]
#[case::a_plain_name("op-controller", true)]
#[case::a_dotted_name("op.v1.0.0", true)]
#[case::capitals("Op", false)]
#[case::a_trailing_dash("op-", false)]
#[case::empty("", false)]
#[case::underscores("op_1", false)]
fn dns_subdomain_names(#[case] name: &str, #[case] ok: bool) {
    assert_eq!(is_dns_subdomain(name), ok);
}
