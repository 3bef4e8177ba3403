//! Tests of the requirement checks over a fake cluster view.

use super::*;
use crate::strategy;
use messages::crd::csv::{
    ApiServiceDefinitions, ApiServiceDescription, CrdDescription, CustomResourceDefinitions,
    GroupVersionKind, RequirementStatusReason,
};
use rstest::rstest;
use std::collections::BTreeMap;

#[derive(Default)]
struct FakeCluster {
    crds: BTreeMap<String, CrdFacts>,
    server: Option<String>,
    kinds: Option<Vec<(String, String, String)>>,
    accounts: BTreeMap<String, AccountFacts>,
    roles: BTreeMap<String, String>,
    cluster_roles: BTreeMap<String, String>,
}

impl Cluster for FakeCluster {
    fn crd(&self, name: &str) -> Option<CrdFacts> {
        self.crds.get(name).cloned()
    }
    fn server_version(&self) -> Option<String> {
        self.server.clone()
    }
    fn has_kind(&self, group: &str, version: &str, kind: &str) -> Option<bool> {
        self.kinds.as_ref().map(|k| {
            k.iter()
                .any(|(g, v, n)| g == group && v == version && n == kind)
        })
    }
    fn api_service_available(&self, _name: &str) -> bool {
        false
    }
    fn service_account(&self, _namespace: &str, name: &str) -> Option<AccountFacts> {
        self.accounts.get(name).cloned()
    }
    fn role_hash(&self, _namespace: &str, name: &str) -> Option<String> {
        self.roles.get(name).cloned()
    }
    fn cluster_role_hash(&self, name: &str) -> Option<String> {
        self.cluster_roles.get(name).cloned()
    }
}

fn established(uid: &str) -> CrdFacts {
    CrdFacts {
        uid: uid.into(),
        served_versions: vec!["v1".into()],
        established: true,
        names_accepted: true,
    }
}

fn crd_csv() -> ClusterServiceVersion {
    let mut c = crate::strategy::tests::csv();
    if let Some(s) = c.spec.install.spec.as_mut() {
        s.permissions = None;
        s.cluster_permissions = None;
    }
    let desc = |name: &str| CrdDescription {
        name: name.into(),
        version: "v1".into(),
        kind: "K".into(),
        ..Default::default()
    };
    c.spec.custom_resource_definitions = Some(CustomResourceDefinitions {
        owned: Some(vec![desc("widgets.example.com")]),
        required: Some(vec![desc("gadgets.example.com")]),
    });
    c
}

fn statuses(r: &Requirements) -> Vec<(String, RequirementStatusReason)> {
    r.statuses
        .iter()
        .map(|s| (s.name.clone(), s.status.clone()))
        .collect()
}

#[test]
fn missing_crds_are_not_present_and_unmet() {
    let r = check(&crd_csv(), &FakeCluster::default());
    assert!(!r.met);
    assert_eq!(
        statuses(&r),
        vec![
            ("gadgets.example.com".into(), R::NotPresent),
            ("widgets.example.com".into(), R::NotPresent)
        ],
        "sorted by name"
    );
    assert_eq!(r.statuses[0].message, "CRD is not present");
    assert_eq!(r.statuses[0].kind, "CustomResourceDefinition");
}

#[test]
fn established_crds_are_present_with_their_uid() {
    let cluster = FakeCluster {
        crds: BTreeMap::from([
            ("widgets.example.com".into(), established("u1")),
            ("gadgets.example.com".into(), established("u2")),
        ]),
        ..Default::default()
    };
    let r = check(&crd_csv(), &cluster);
    assert!(r.met, "{r:?}");
    assert_eq!(r.statuses[1].uuid, "u1");
    assert_eq!(
        r.statuses[1].message,
        "CRD is present and Established condition is true"
    );
}

#[rstest]
#[case::a_crd_not_yet_established_is_present_not_available(CrdFacts { established: false, ..established("u") }, R::PresentNotAvailable)]
#[case::a_crd_whose_names_are_not_accepted_is_present_not_available(CrdFacts { names_accepted: false, ..established("u") }, R::PresentNotAvailable)]
#[case::a_crd_not_serving_the_version_is_not_present(CrdFacts { served_versions: vec!["v2".into()], ..established("u") }, R::NotPresent)]
fn a_crd_must_be_established_and_serve_the_version(
    #[case] facts: CrdFacts,
    #[case] expected: RequirementStatusReason,
) {
    let cluster = FakeCluster {
        crds: BTreeMap::from([
            ("widgets.example.com".into(), facts),
            ("gadgets.example.com".into(), established("u2")),
        ]),
        ..Default::default()
    };
    let r = check(&crd_csv(), &cluster);
    assert!(!r.met);
    assert_eq!(r.statuses[1].status, expected);
}

#[rstest]
#[case::an_older_minimum_is_met(
    "1.19.0",
    "v1.20.2",
    R::Present,
    "CSV minKubeVersion (1.19.0) less than server version (1.20.2)"
)]
#[case::a_newer_minimum_is_not_met(
    "1.25.0",
    "v1.20.2",
    R::PresentNotSatisfied,
    "CSV version requirement not met: minKubeVersion (1.25.0) > server version (1.20.2)"
)]
#[case::a_build_suffix_on_the_server_is_ignored(
    "1.20.0",
    "v1.20.2-k3s1",
    R::Present,
    "CSV minKubeVersion (1.20.0) less than server version (1.20.2)"
)]
#[case::a_two_part_minimum_is_a_parsing_error(
    "1.20",
    "v1.20.2",
    R::PresentNotSatisfied,
    "CSV version parsing error"
)]
fn min_kube_version_is_compared_strictly(
    #[case] min: &str,
    #[case] server: &str,
    #[case] status: RequirementStatusReason,
    #[case] message: &str,
) {
    let mut c = crd_csv();
    c.spec.custom_resource_definitions = None;
    c.spec.min_kube_version = Some(min.into());
    let r = check(
        &c,
        &FakeCluster {
            server: Some(server.into()),
            ..Default::default()
        },
    );
    assert_eq!(r.statuses[0].kind, "ClusterServiceVersion");
    assert_eq!(
        (r.statuses[0].status.clone(), r.statuses[0].message.as_str()),
        (status.clone(), message)
    );
    assert_eq!(r.met, status == R::Present);
}

#[rstest]
#[case::a_discovered_native_api_is_present(Some(vec![("apps".to_string(), "v1".to_string(), "Deployment".to_string())]), R::Present)]
#[case::an_undiscovered_native_api_is_not_present(Some(vec![]), R::NotPresent)]
#[case::unknown_discovery_is_not_present(None, R::NotPresent)]
fn native_apis_come_from_discovery(
    #[case] kinds: Option<Vec<(String, String, String)>>,
    #[case] expected: RequirementStatusReason,
) {
    let mut c = crd_csv();
    c.spec.custom_resource_definitions = None;
    c.spec.native_apis = Some(vec![GroupVersionKind {
        group: "apps".into(),
        version: "v1".into(),
        kind: "Deployment".into(),
    }]);
    let r = check(
        &c,
        &FakeCluster {
            kinds,
            ..Default::default()
        },
    );
    assert_eq!(
        (r.statuses[0].name.as_str(), r.statuses[0].status.clone()),
        ("v1.apps", expected)
    );
}

#[rstest]
#[case::an_owned_api_service_served_by_a_strategy_deployment_is_found(
    Some("op"),
    R::DeploymentFound,
    true
)]
#[case::an_owned_api_service_without_its_deployment_is_unmet(
    Some("other"),
    R::DeploymentNotFound,
    false
)]
fn owned_api_services_need_their_deployment(
    #[case] deployment: Option<&str>,
    #[case] expected: RequirementStatusReason,
    #[case] met: bool,
) {
    let mut c = crd_csv();
    c.spec.custom_resource_definitions = None;
    c.spec.api_service_definitions = Some(ApiServiceDefinitions {
        owned: Some(vec![ApiServiceDescription {
            name: "things".into(),
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Thing".into(),
            deployment_name: deployment.map(Into::into),
            ..Default::default()
        }]),
        required: None,
    });
    let r = check(&c, &FakeCluster::default());
    assert_eq!(
        (
            r.statuses[0].name.as_str(),
            r.statuses[0].status.clone(),
            r.met
        ),
        ("v1.example.com", expected, met)
    );
}

fn rbac_csv() -> ClusterServiceVersion {
    let mut c = crate::strategy::tests::csv();
    c.spec.custom_resource_definitions = None;
    c
}

fn granted() -> FakeCluster {
    let c = rbac_csv();
    let details = c.spec.install.spec.clone().expect("details");
    let ns_rules = details.permissions.clone().unwrap_or_default()[0]
        .rules
        .clone();
    let cluster_rules = details.cluster_permissions.clone().unwrap_or_default()[0]
        .rules
        .clone();
    FakeCluster {
        accounts: BTreeMap::from([(
            "op-sa".into(),
            AccountFacts {
                owner_csvs: vec!["op.v1.0.0".into()],
            },
        )]),
        roles: BTreeMap::from([(
            strategy::role_name("op.v1.0.0", "op-sa", &ns_rules),
            strategy::rules_hash(&ns_rules),
        )]),
        cluster_roles: BTreeMap::from([(
            strategy::cluster_role_name("op.v1.0.0", "ns", "op-sa", &cluster_rules),
            strategy::rules_hash(&cluster_rules),
        )]),
        ..Default::default()
    }
}

#[rstest]
#[case::an_account_with_its_roles_is_present(|_c: &mut FakeCluster| {}, R::Present, "")]
#[case::a_missing_account_is_not_present(|c: &mut FakeCluster| c.accounts.clear(), R::NotPresent, "Service account does not exist")]
#[case::an_account_shared_with_an_older_csv_of_the_chain_is_present(|c: &mut FakeCluster| c.accounts.insert("op-sa".into(), AccountFacts { owner_csvs: vec!["op.v0.9.0".into(), "op.v1.0.0".into()] }).map(|_| ()).unwrap_or(()), R::Present, "")]
#[case::an_unowned_account_is_present(|c: &mut FakeCluster| c.accounts.insert("op-sa".into(), AccountFacts::default()).map(|_| ()).unwrap_or(()), R::Present, "")]
#[case::an_account_owned_by_another_csv_is_not_satisfied(|c: &mut FakeCluster| c.accounts.insert("op-sa".into(), AccountFacts { owner_csvs: vec!["other.v1".into()] }).map(|_| ()).unwrap_or(()), R::PresentNotSatisfied, "Service account is owned by another ClusterServiceVersion")]
#[case::a_missing_role_leaves_rules_unsatisfied(|c: &mut FakeCluster| c.roles.clear(), R::PresentNotSatisfied, "Policy rule not satisfied for service account")]
#[case::a_cluster_role_with_stale_rules_leaves_rules_unsatisfied(|c: &mut FakeCluster| { for v in c.cluster_roles.values_mut() { *v = "stale".into(); } }, R::PresentNotSatisfied, "Policy rule not satisfied for service account")]
fn service_accounts_need_their_rules(
    #[case] change: fn(&mut FakeCluster),
    #[case] expected: RequirementStatusReason,
    #[case] message: &str,
) {
    let mut cluster = granted();
    change(&mut cluster);
    let r = check(&rbac_csv(), &cluster);
    let sa = r
        .statuses
        .iter()
        .find(|s| s.kind == "ServiceAccount")
        .expect("an account entry");
    assert_eq!(
        (sa.status.clone(), sa.message.as_str()),
        (expected.clone(), message)
    );
    assert_eq!(r.met, expected == R::Present);
}

#[test]
fn each_rule_is_a_dependent_with_its_scope() {
    let r = check(&rbac_csv(), &granted());
    let sa = r
        .statuses
        .iter()
        .find(|s| s.kind == "ServiceAccount")
        .expect("an account entry");
    let messages: Vec<&str> = sa
        .dependents
        .iter()
        .map(|d| d.message.split(':').next().unwrap_or_default())
        .collect();
    assert_eq!(messages, vec!["namespaced rule", "cluster rule"]);
    assert!(
        sa.dependents
            .iter()
            .all(|d| d.status == R::Satisfied && d.kind == "PolicyRule")
    );
}
