//! The operator's own RBAC beyond its namespace (spec §2.7, §3.5): the CSV's Roles and RoleBindings copied into
//! each target namespace of a namespaced group (owned by the copied CSV), or lifted to same-named
//! ClusterRoles (plus `get,list,watch` on namespaces) and ClusterRoleBindings for an all-namespaces group. Pure.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use messages::crd::annotations;
use std::collections::BTreeMap;

/// Labels of RBAC copied for the CSV `csv` into `target` from `operator_ns`.
pub fn copied_labels(csv: &str, operator_ns: &str, target: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (annotations::MANAGED.to_string(), "true".to_string()),
        (annotations::OWNER.to_string(), csv.to_string()),
        (annotations::OWNER_NAMESPACE.to_string(), target.to_string()),
        (
            annotations::OWNER_KIND.to_string(),
            "ClusterServiceVersion".to_string(),
        ),
        (
            annotations::COPIED_FROM.to_string(),
            operator_ns.to_string(),
        ),
    ])
}

fn copied_meta(
    meta: &ObjectMeta,
    labels: &BTreeMap<String, String>,
    target: &str,
    owner: &OwnerReference,
) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        namespace: Some(target.to_string()),
        labels: Some(labels.clone()),
        owner_references: Some(vec![owner.clone()]),
        ..Default::default()
    }
}

/// The CSV's Roles and RoleBindings as copies in `target`, owned by the copied CSV (`copy_uid`).
pub fn copied(
    roles: &[Role],
    bindings: &[RoleBinding],
    csv: &str,
    operator_ns: &str,
    target: &str,
    copy_uid: &str,
) -> (Vec<Role>, Vec<RoleBinding>) {
    let labels = copied_labels(csv, operator_ns, target);
    let owner = OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "ClusterServiceVersion".into(),
        name: csv.to_string(),
        uid: copy_uid.to_string(),
        block_owner_deletion: Some(false),
        controller: Some(false),
    };
    let roles = roles
        .iter()
        .map(|r| Role {
            metadata: copied_meta(&r.metadata, &labels, target, &owner),
            rules: r.rules.clone(),
        })
        .collect();
    let bindings = bindings
        .iter()
        .map(|b| {
            let subjects = b.subjects.clone().map(|subjects| {
                subjects
                    .into_iter()
                    .map(|mut s| {
                        if s.kind == "ServiceAccount" && s.namespace.is_none() {
                            s.namespace = Some(operator_ns.to_string());
                        }
                        s
                    })
                    .collect()
            });
            RoleBinding {
                metadata: copied_meta(&b.metadata, &labels, target, &owner),
                role_ref: b.role_ref.clone(),
                subjects,
            }
        })
        .collect();
    (roles, bindings)
}

/// Label selector of the RBAC lifted for the CSV `csv` of `operator_ns` (to remove it when the group no longer
/// targets all namespaces).
pub fn lifted_selector(csv: &str, operator_ns: &str) -> String {
    format!(
        "{}=true,{}={csv},{}={operator_ns}",
        annotations::LIFTED,
        annotations::OWNER,
        annotations::OWNER_NAMESPACE
    )
}

/// The CSV's Roles lifted to same-named ClusterRoles (with `get,list,watch` on namespaces) and its
/// RoleBindings to ClusterRoleBindings, for an all-namespaces group.
pub fn lifted(
    roles: &[Role],
    bindings: &[RoleBinding],
    operator_ns: &str,
) -> (Vec<ClusterRole>, Vec<ClusterRoleBinding>) {
    let meta = |m: &ObjectMeta| {
        let mut labels = m.labels.clone().unwrap_or_default();
        labels.insert(annotations::LIFTED.to_string(), "true".to_string());
        ObjectMeta {
            name: m.name.clone(),
            labels: Some(labels),
            ..Default::default()
        }
    };
    let cluster_roles = roles
        .iter()
        .map(|r| {
            let mut rules = r.rules.clone().unwrap_or_default();
            rules.push(PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["namespaces".to_string()]),
                verbs: vec!["get".to_string(), "list".to_string(), "watch".to_string()],
                ..Default::default()
            });
            ClusterRole {
                metadata: meta(&r.metadata),
                rules: Some(rules),
                aggregation_rule: None,
            }
        })
        .collect();
    let cluster_bindings = bindings
        .iter()
        .map(|b| {
            let subjects = b.subjects.clone().map(|subjects| {
                subjects
                    .into_iter()
                    .map(|mut s| {
                        if s.kind == "ServiceAccount" && s.namespace.is_none() {
                            s.namespace = Some(operator_ns.to_string());
                        }
                        s
                    })
                    .collect()
            });
            ClusterRoleBinding {
                metadata: meta(&b.metadata),
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "ClusterRole".into(),
                    name: b.role_ref.name.clone(),
                },
                subjects,
            }
        })
        .collect();
    (cluster_roles, cluster_bindings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::Subject;

    fn role() -> Role {
        Role {
            metadata: ObjectMeta {
                name: Some("etcd-role".into()),
                namespace: Some("op".into()),
                labels: Some(BTreeMap::from([(
                    "olm.owner".to_string(),
                    "etcd.v1".to_string(),
                )])),
                ..Default::default()
            },
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec!["etcd.io".into()]),
                resources: Some(vec!["clusters".into()]),
                verbs: vec!["*".into()],
                ..Default::default()
            }]),
        }
    }

    fn binding() -> RoleBinding {
        RoleBinding {
            metadata: ObjectMeta {
                name: Some("etcd-binding".into()),
                namespace: Some("op".into()),
                ..Default::default()
            },
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "Role".into(),
                name: "etcd-role".into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: "etcd-operator".into(),
                ..Default::default()
            }]),
        }
    }

    #[test]
    fn the_lifted_selector_names_the_marker_and_the_owner() {
        assert_eq!(
            lifted_selector("etcd.v1", "op"),
            "olm-rs/lifted=true,olm.owner=etcd.v1,olm.owner.namespace=op"
        );
    }

    #[test]
    fn copied_rbac_lives_in_the_target_owned_by_the_copy() {
        let (roles, bindings) = copied(
            &[role()],
            &[binding()],
            "etcd.v1",
            "op",
            "tenant",
            "uid-copy",
        );
        let r = &roles[0];
        assert_eq!(r.metadata.namespace.as_deref(), Some("tenant"));
        let labels = r.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("olm.copiedFrom").map(String::as_str), Some("op"));
        assert_eq!(labels.get("olm.owner").map(String::as_str), Some("etcd.v1"));
        assert_eq!(
            labels.get("olm.owner.namespace").map(String::as_str),
            Some("tenant")
        );
        assert_eq!(
            r.metadata
                .owner_references
                .as_ref()
                .map(|o| o[0].uid.as_str()),
            Some("uid-copy")
        );
        assert_eq!(r.rules, role().rules);
        let b = &bindings[0];
        assert_eq!(b.metadata.namespace.as_deref(), Some("tenant"));
        assert_eq!(
            b.subjects.as_ref().and_then(|s| s[0].namespace.as_deref()),
            Some("op"),
            "the operator's service account stays in its namespace"
        );
    }

    #[test]
    fn lifted_rbac_adds_namespace_reads_and_binds_the_cluster_role() {
        let (roles, bindings) = lifted(&[role()], &[binding()], "op");
        let rules = roles[0].rules.clone().unwrap_or_default();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[1].resources.as_deref(),
            Some(&["namespaces".to_string()][..])
        );
        assert_eq!(rules[1].verbs, vec!["get", "list", "watch"]);
        assert_eq!(roles[0].metadata.name.as_deref(), Some("etcd-role"));
        let labels = roles[0].metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(annotations::LIFTED).map(String::as_str),
            Some("true")
        );
        assert_eq!(labels.get("olm.owner").map(String::as_str), Some("etcd.v1"));
        let binding_labels = bindings[0].metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            binding_labels.get(annotations::LIFTED).map(String::as_str),
            Some("true")
        );
        assert_eq!(bindings[0].role_ref.kind, "ClusterRole");
        assert_eq!(
            bindings[0]
                .subjects
                .as_ref()
                .and_then(|s| s[0].namespace.as_deref()),
            Some("op")
        );
    }
}
