//! The generated ClusterRoles as objects (spec §3.5). Pure.

use super::naming::{self, Suffix};
use k8s_openapi::api::rbac::v1::{AggregationRule, ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use std::collections::BTreeMap;

/// The owner labels OLM puts on objects owned by an OperatorGroup.
pub fn group_owner_labels(namespace: &str, name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (annotations::OWNER.to_string(), name.to_string()),
        (
            annotations::OWNER_NAMESPACE.to_string(),
            namespace.to_string(),
        ),
        (
            annotations::OWNER_KIND.to_string(),
            "OperatorGroup".to_string(),
        ),
    ])
}

/// The three aggregate ClusterRoles of the group `namespace/name` for `apis` (`Kind.version.group`).
pub fn group_cluster_roles<'a>(
    namespace: &str,
    name: &str,
    apis: impl IntoIterator<Item = &'a String> + Clone,
) -> Vec<ClusterRole> {
    Suffix::ALL
        .iter()
        .map(|suffix| {
            let mut labels = group_owner_labels(namespace, name);
            labels.insert(annotations::MANAGED.to_string(), "true".to_string());
            let mut keys: Vec<String> = apis
                .clone()
                .into_iter()
                .map(|api| naming::aggregation_label(api, *suffix))
                .collect();
            keys.sort();
            let selectors: Vec<LabelSelector> = keys
                .into_iter()
                .map(|key| LabelSelector {
                    match_labels: Some(BTreeMap::from([(key, "true".to_string())])),
                    match_expressions: None,
                })
                .collect();
            ClusterRole {
                metadata: ObjectMeta {
                    name: Some(naming::group_cluster_role(namespace, name, *suffix)),
                    labels: Some(labels),
                    ..Default::default()
                },
                aggregation_rule: (!selectors.is_empty()).then_some(AggregationRule {
                    cluster_role_selectors: Some(selectors),
                }),
                rules: None,
            }
        })
        .collect()
}

/// One owned API of a CSV for which per-API ClusterRoles are generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedApi {
    /// `Kind.version.group`.
    pub key: String,
    /// The CRD name (`plural.group`) or the APIService description name (its resource).
    pub name: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub is_crd: bool,
}

/// The owned CRDs and APIServices of a CSV, as [`OwnedApi`]s.
pub fn owned_apis(csv: &ClusterServiceVersion) -> Vec<OwnedApi> {
    let mut out = Vec::new();
    for crd in csv
        .spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|c| c.owned.as_ref())
        .into_iter()
        .flatten()
    {
        let Some((plural, group)) = crd.name.split_once('.') else {
            continue;
        };
        out.push(OwnedApi {
            key: format!("{}.{}.{group}", crd.kind, crd.version),
            name: crd.name.clone(),
            group: group.to_string(),
            version: crd.version.clone(),
            resource: plural.to_string(),
            is_crd: true,
        });
    }
    for svc in csv
        .spec
        .api_service_definitions
        .as_ref()
        .and_then(|a| a.owned.as_ref())
        .into_iter()
        .flatten()
    {
        out.push(OwnedApi {
            key: format!("{}.{}.{}", svc.kind, svc.version, svc.group),
            name: svc.name.clone(),
            group: svc.group.clone(),
            version: svc.version.clone(),
            resource: svc.name.clone(),
            is_crd: false,
        });
    }
    out
}

/// The per-API ClusterRoles of one owned API: admin (`*`), edit, view, and crdview for CRDs; `owner` is the
/// CRD or APIService (non-blocking), so the roles go away with it.
pub fn api_cluster_roles(api: &OwnedApi, owner: Option<OwnerReference>) -> Vec<ClusterRole> {
    let verbs = |suffix: Suffix| -> Vec<String> {
        let list: &[&str] = match suffix {
            Suffix::Admin => &["*"],
            Suffix::Edit => &["create", "update", "patch", "delete"],
            Suffix::View => &["get", "list", "watch"],
        };
        list.iter().map(|v| v.to_string()).collect()
    };
    let labels = |suffix: Suffix| {
        BTreeMap::from([
            (
                format!("rbac.authorization.k8s.io/aggregate-to-{}", suffix.as_str()),
                "true".to_string(),
            ),
            (
                naming::aggregation_label(&api.key, suffix),
                "true".to_string(),
            ),
            (annotations::MANAGED.to_string(), "true".to_string()),
        ])
    };
    let role = |name: String, suffix: Suffix, rule: PolicyRule| ClusterRole {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels(suffix)),
            owner_references: owner.clone().map(|o| vec![o]),
            ..Default::default()
        },
        rules: Some(vec![rule]),
        aggregation_rule: None,
    };
    let mut roles: Vec<ClusterRole> = Suffix::ALL
        .iter()
        .map(|suffix| {
            let rule = PolicyRule {
                api_groups: Some(vec![api.group.clone()]),
                resources: Some(vec![api.resource.clone()]),
                verbs: verbs(*suffix),
                ..Default::default()
            };
            role(
                format!("{}-{}-{}", api.name, api.version, suffix.as_str()),
                *suffix,
                rule,
            )
        })
        .collect();
    if api.is_crd {
        let rule = PolicyRule {
            api_groups: Some(vec!["apiextensions.k8s.io".to_string()]),
            resources: Some(vec!["customresourcedefinitions".to_string()]),
            resource_names: Some(vec![api.name.clone()]),
            verbs: vec!["get".to_string()],
            ..Default::default()
        };
        roles.push(role(
            format!("{}-{}-crdview", api.name, api.version),
            Suffix::View,
            rule,
        ));
    }
    roles
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn etcd() -> OwnedApi {
        OwnedApi {
            key: "EtcdCluster.v1beta2.etcd.database.coreos.com".into(),
            name: "etcdclusters.etcd.database.coreos.com".into(),
            group: "etcd.database.coreos.com".into(),
            version: "v1beta2".into(),
            resource: "etcdclusters".into(),
            is_crd: true,
        }
    }

    #[test]
    fn a_group_without_apis_gets_three_roles_without_aggregation() {
        let roles = group_cluster_roles("ns", "og", &Vec::<String>::new());
        assert_eq!(roles.len(), 3);
        assert!(roles.iter().all(|r| r.aggregation_rule.is_none()));
        let labels = roles[0].metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("olm.owner").map(String::as_str), Some("og"));
        assert_eq!(
            labels.get("olm.owner.namespace").map(String::as_str),
            Some("ns")
        );
        assert_eq!(
            labels.get("olm.owner.kind").map(String::as_str),
            Some("OperatorGroup")
        );
        assert_eq!(labels.get("olm.managed").map(String::as_str), Some("true"));
    }

    #[test]
    fn a_group_aggregates_one_selector_per_api_sorted() {
        let apis = vec!["B.v1.x.io".to_string(), "A.v1.x.io".to_string()];
        let roles = group_cluster_roles("ns", "og", &apis);
        let view = roles
            .iter()
            .find(|r| {
                r.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.contains(".view-"))
            })
            .expect("view role");
        let selectors = view
            .aggregation_rule
            .clone()
            .and_then(|a| a.cluster_role_selectors)
            .expect("selectors");
        let keys: Vec<String> = selectors
            .iter()
            .flat_map(|s| s.match_labels.clone().unwrap_or_default().into_keys())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 2);
        assert!(keys.contains(&naming::aggregation_label("A.v1.x.io", Suffix::View)));
    }

    #[rstest]
    #[case::admin_may_do_everything("etcdclusters.etcd.database.coreos.com-v1beta2-admin", &["*"], "admin")]
    #[case::edit_may_write("etcdclusters.etcd.database.coreos.com-v1beta2-edit", &["create", "update", "patch", "delete"], "edit")]
    #[case::view_may_read("etcdclusters.etcd.database.coreos.com-v1beta2-view", &["get", "list", "watch"], "view")]
    #[case::crdview_may_get_the_crd_and_aggregates_to_view("etcdclusters.etcd.database.coreos.com-v1beta2-crdview", &["get"], "view")]
    fn per_api_roles_carry_the_verbs_and_labels_of_the_seeds(
        #[case] name: &str,
        #[case] verbs: &[&str],
        #[case] aggregates_to: &str,
    ) {
        let roles = api_cluster_roles(&etcd(), None);
        assert_eq!(roles.len(), 4);
        let role = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .expect("role");
        let rule = role.rules.as_ref().and_then(|r| r.first()).expect("rule");
        assert_eq!(
            rule.verbs,
            verbs.iter().map(|v| v.to_string()).collect::<Vec<_>>()
        );
        let labels = role.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get(&format!(
                    "rbac.authorization.k8s.io/aggregate-to-{aggregates_to}"
                ))
                .map(String::as_str),
            Some("true")
        );
        let suffix = match aggregates_to {
            "admin" => Suffix::Admin,
            "edit" => Suffix::Edit,
            _ => Suffix::View,
        };
        assert_eq!(
            labels
                .get(&naming::aggregation_label(
                    "EtcdCluster.v1beta2.etcd.database.coreos.com",
                    suffix
                ))
                .map(String::as_str),
            Some("true")
        );
    }

    #[test]
    fn an_api_service_gets_no_crdview() {
        let api = OwnedApi {
            is_crd: false,
            name: "packagemanifests".into(),
            resource: "packagemanifests".into(),
            ..etcd()
        };
        let names: Vec<String> = api_cluster_roles(&api, None)
            .into_iter()
            .filter_map(|r| r.metadata.name)
            .collect();
        assert_eq!(
            names,
            vec![
                "packagemanifests-v1beta2-admin",
                "packagemanifests-v1beta2-edit",
                "packagemanifests-v1beta2-view"
            ]
        );
    }
}
