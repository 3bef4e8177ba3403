//! The deployment install strategy (spec §2.5), pure: validate `spec.install` and render the objects it
//! asks for — Deployments (CSV annotations projected onto the pod template, `OPERATOR_CONDITION_NAME`,
//! `revisionHistoryLimit: 1`, the `olm.deployment-spec-hash` label on the Deployment),
//! ServiceAccounts, Roles/RoleBindings and ClusterRoles/ClusterRoleBindings — all labelled `olm.managed=true`
//! with OLM's owner labels. Namespaced objects get a non-blocking owner reference to the CSV (so the
//! garbage collector removes them with it); cluster-scoped ones cannot, and are found by owner labels.

use crate::hash;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{EnvVar, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use messages::crd::annotations;
use messages::crd::csv::{
    ClusterServiceVersion, INSTALL_STRATEGY_NAME_DEPLOYMENT, StrategyDeploymentPermissions,
    StrategyDeploymentSpec, StrategyDetailsDeployment,
};
use std::collections::BTreeMap;

/// Why `spec.install` cannot be used. The text goes into the CSV's status message after
/// "install strategy invalid: ", so it says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyError {
    #[error("unsupported install strategy {0:?} (only \"deployment\" is supported)")]
    UnknownStrategy(String),
    #[error("spec.install.spec is missing")]
    MissingSpec,
    #[error("deployment #{index} has no name")]
    UnnamedDeployment { index: usize },
    #[error("deployment name {name:?} is not a valid DNS-1123 subdomain")]
    BadDeploymentName { name: String },
    #[error("deployment {name:?} appears more than once")]
    DuplicateDeployment { name: String },
    #[error("deployment {name:?} has an empty selector")]
    EmptySelector { name: String },
    #[error("deployment {name:?}: selector does not match template labels")]
    SelectorMismatch { name: String },
    #[error("deployment {name:?} has no containers")]
    NoContainers { name: String },
    #[error("deployment {name:?}: container #{index} has no name or no image")]
    BadContainer { name: String, index: usize },
    #[error("a permission entry has no valid serviceAccountName ({name:?})")]
    BadServiceAccount { name: String },
    #[error("service account {service_account:?}: rule #{index} has no verbs")]
    RuleWithoutVerbs {
        service_account: String,
        index: usize,
    },
    #[error(
        "service account {service_account:?}: rule #{index} names neither resources nor nonResourceURLs"
    )]
    RuleWithoutTarget {
        service_account: String,
        index: usize,
    },
    #[error(
        "service account {service_account:?}: rule #{index} uses nonResourceURLs, which only clusterPermissions may"
    )]
    NamespacedNonResourceUrl {
        service_account: String,
        index: usize,
    },
}

/// What is wrong with the CSV object itself (not with its spec): it has no name, namespace or uid yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the CSV has no {0} (not read from the API server?)")]
pub struct NotPersisted(pub &'static str);

/// Every object the strategy asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    pub deployments: Vec<Deployment>,
    pub service_accounts: Vec<ServiceAccount>,
    pub roles: Vec<Role>,
    pub role_bindings: Vec<RoleBinding>,
    pub cluster_roles: Vec<ClusterRole>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// The parsed deployment strategy, or why it is invalid.
pub fn validate(csv: &ClusterServiceVersion) -> Result<&StrategyDetailsDeployment, StrategyError> {
    let install = &csv.spec.install;
    if install.strategy != INSTALL_STRATEGY_NAME_DEPLOYMENT {
        return Err(StrategyError::UnknownStrategy(install.strategy.clone()));
    }
    let details = install.spec.as_ref().ok_or(StrategyError::MissingSpec)?;
    let mut names = std::collections::BTreeSet::new();
    for (index, d) in details.deployments.iter().enumerate() {
        validate_deployment(index, d)?;
        if !names.insert(d.name.as_str()) {
            return Err(StrategyError::DuplicateDeployment {
                name: d.name.clone(),
            });
        }
    }
    for p in details.permissions.iter().flatten() {
        validate_permission(p, false)?;
    }
    for p in details.cluster_permissions.iter().flatten() {
        validate_permission(p, true)?;
    }
    Ok(details)
}

fn validate_deployment(index: usize, d: &StrategyDeploymentSpec) -> Result<(), StrategyError> {
    if d.name.is_empty() {
        return Err(StrategyError::UnnamedDeployment { index });
    }
    if !is_dns_subdomain(&d.name) {
        return Err(StrategyError::BadDeploymentName {
            name: d.name.clone(),
        });
    }
    let selector = &d.spec.selector;
    let match_labels = selector.match_labels.clone().unwrap_or_default();
    if match_labels.is_empty()
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
    {
        return Err(StrategyError::EmptySelector {
            name: d.name.clone(),
        });
    }
    let template_labels = d
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    if match_labels
        .iter()
        .any(|(k, v)| template_labels.get(k) != Some(v))
    {
        return Err(StrategyError::SelectorMismatch {
            name: d.name.clone(),
        });
    }
    let containers = d
        .spec
        .template
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    if containers.is_empty() {
        return Err(StrategyError::NoContainers {
            name: d.name.clone(),
        });
    }
    if let Some(index) = containers
        .iter()
        .position(|c| c.name.is_empty() || c.image.as_deref().is_none_or(str::is_empty))
    {
        return Err(StrategyError::BadContainer {
            name: d.name.clone(),
            index,
        });
    }
    Ok(())
}

fn validate_permission(
    p: &StrategyDeploymentPermissions,
    cluster: bool,
) -> Result<(), StrategyError> {
    let service_account = p.service_account_name.clone();
    if !is_dns_subdomain(&service_account) {
        return Err(StrategyError::BadServiceAccount {
            name: service_account,
        });
    }
    for (index, rule) in p.rules.iter().enumerate() {
        if rule.verbs.is_empty() {
            return Err(StrategyError::RuleWithoutVerbs {
                service_account,
                index,
            });
        }
        let has_resources = rule.resources.as_ref().is_some_and(|r| !r.is_empty());
        let has_urls = rule
            .non_resource_urls
            .as_ref()
            .is_some_and(|r| !r.is_empty());
        if !has_resources && !has_urls {
            return Err(StrategyError::RuleWithoutTarget {
                service_account,
                index,
            });
        }
        if has_urls && !cluster {
            return Err(StrategyError::NamespacedNonResourceUrl {
                service_account,
                index,
            });
        }
    }
    Ok(())
}

/// DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, starting and ending alphanumeric, ≤ 253.
pub fn is_dns_subdomain(s: &str) -> bool {
    let ok_chars = s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let ends_ok = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    !s.is_empty()
        && s.len() <= 253
        && ok_chars
        && ends_ok(s.bytes().next())
        && ends_ok(s.bytes().last())
}

/// OLM's owner labels for objects a CSV owns.
pub fn owner_labels(csv_name: &str, namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (annotations::MANAGED.to_string(), "true".to_string()),
        (annotations::OWNER.to_string(), csv_name.to_string()),
        (
            annotations::OWNER_NAMESPACE.to_string(),
            namespace.to_string(),
        ),
        (
            annotations::OWNER_KIND.to_string(),
            "ClusterServiceVersion".to_string(),
        ),
    ])
}

/// The label selector (`k=v,...`) of objects owned by a CSV.
pub fn owner_selector(csv_name: &str, namespace: &str) -> String {
    owner_labels(csv_name, namespace)
        .iter()
        .filter(|(k, _)| k.as_str() != annotations::MANAGED)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The annotations projected onto pod templates: every CSV annotation but kubectl's last-applied copy of
/// the whole object (which would bloat each pod).
pub fn projected_annotations(csv: &ClusterServiceVersion) -> BTreeMap<String, String> {
    let mut projected = csv.metadata.annotations.clone().unwrap_or_default();
    projected.remove(annotations::LAST_APPLIED_CONFIGURATION);
    projected
}

/// Render every object of the strategy.
pub fn render(
    csv: &ClusterServiceVersion,
) -> Result<Result<Rendered, StrategyError>, NotPersisted> {
    render_with(csv, None)
}

/// [`render`] with a Subscription's `spec.config` projected onto the deployments (spec §2.6).
pub fn render_with(
    csv: &ClusterServiceVersion,
    config: Option<&messages::crd::subscription::SubscriptionConfig>,
) -> Result<Result<Rendered, StrategyError>, NotPersisted> {
    let name = csv.metadata.name.as_deref().ok_or(NotPersisted("name"))?;
    let namespace = csv
        .metadata
        .namespace
        .as_deref()
        .ok_or(NotPersisted("namespace"))?;
    let uid = csv.metadata.uid.as_deref().ok_or(NotPersisted("uid"))?;
    let details = match validate(csv) {
        Ok(d) => d,
        Err(e) => return Ok(Err(e)),
    };
    let owner = OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "ClusterServiceVersion".into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    };
    let mut labels = owner_labels(name, namespace);
    labels.extend(crate::component_labels::inherited(
        csv.metadata.labels.as_ref(),
    ));
    let meta = |object_name: String, extra: BTreeMap<String, String>, owned: bool| ObjectMeta {
        name: Some(object_name),
        namespace: owned.then(|| namespace.to_string()),
        labels: Some(extra.into_iter().chain(labels.clone()).collect()),
        owner_references: owned.then(|| vec![owner.clone()]),
        ..ObjectMeta::default()
    };
    let projected = projected_annotations(csv);
    let mut out = Rendered::default();
    for entry in &details.deployments {
        out.deployments
            .push(render_deployment(entry, name, &projected, &meta, config));
    }
    let mut accounts = std::collections::BTreeSet::new();
    for (cluster, list) in [
        (false, &details.permissions),
        (true, &details.cluster_permissions),
    ] {
        for p in list.iter().flatten() {
            let sa = p.service_account_name.as_str();
            accounts.insert(sa);
            let permissions_hash = rules_hash(&p.rules);
            let role_labels =
                BTreeMap::from([(annotations::PERMISSIONS_HASH.to_string(), permissions_hash)]);
            let subject = Subject {
                kind: "ServiceAccount".into(),
                name: sa.into(),
                namespace: Some(namespace.into()),
                api_group: None,
            };
            if cluster {
                let role_name = cluster_role_name(name, namespace, sa, &p.rules);
                out.cluster_roles.push(ClusterRole {
                    metadata: meta(role_name.clone(), role_labels, false),
                    rules: Some(p.rules.clone()),
                    aggregation_rule: None,
                });
                let role_ref = RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "ClusterRole".into(),
                    name: role_name.clone(),
                };
                out.cluster_role_bindings.push(ClusterRoleBinding {
                    metadata: meta(role_name, BTreeMap::new(), false),
                    role_ref,
                    subjects: Some(vec![subject]),
                });
            } else {
                let role_name = role_name(name, sa, &p.rules);
                out.roles.push(Role {
                    metadata: meta(role_name.clone(), role_labels, true),
                    rules: Some(p.rules.clone()),
                });
                let role_ref = RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "Role".into(),
                    name: role_name.clone(),
                };
                out.role_bindings.push(RoleBinding {
                    metadata: meta(role_name, BTreeMap::new(), true),
                    role_ref,
                    subjects: Some(vec![subject]),
                });
            }
        }
    }
    for sa in accounts {
        out.service_accounts.push(ServiceAccount {
            metadata: meta(sa.to_string(), BTreeMap::new(), true),
            ..ServiceAccount::default()
        });
    }
    Ok(Ok(out))
}

fn render_deployment(
    entry: &StrategyDeploymentSpec,
    csv_name: &str,
    projected: &BTreeMap<String, String>,
    meta: &dyn Fn(String, BTreeMap<String, String>, bool) -> ObjectMeta,
    config: Option<&messages::crd::subscription::SubscriptionConfig>,
) -> Deployment {
    let mut spec = entry.spec.clone();
    let template_meta = spec
        .template
        .metadata
        .get_or_insert_with(ObjectMeta::default);
    let mut template_annotations = template_meta.annotations.clone().unwrap_or_default();
    template_annotations.extend(projected.iter().map(|(k, v)| (k.clone(), v.clone())));
    template_meta.annotations = Some(template_annotations);
    if let Some(pod) = spec.template.spec.as_mut() {
        for container in &mut pod.containers {
            let env = container.env.get_or_insert_with(Vec::new);
            env.retain(|e| e.name != annotations::OPERATOR_CONDITION_NAME_ENV);
            env.push(EnvVar {
                name: annotations::OPERATOR_CONDITION_NAME_ENV.into(),
                value: Some(csv_name.into()),
                value_from: None,
            });
        }
    }
    if let Some(config) = config {
        crate::overrides::apply_to_spec(&mut spec, config);
    }
    spec.revision_history_limit = Some(1);
    // The hash lives in a label on the Deployment only, as OLM keeps it: in the pod template it would roll out a
    // new ReplicaSet whenever the hash alone changes (as on a takeover from OLM v0).
    let spec_hash = hash::of_json(&spec);
    let mut extra = entry.label.clone().unwrap_or_default();
    extra.insert(annotations::DEPLOYMENT_SPEC_HASH.into(), spec_hash);
    let mut metadata = meta(entry.name.clone(), extra, true);
    if let Some(config) = config {
        crate::overrides::apply_to_metadata(&mut metadata, config);
    }
    Deployment {
        metadata,
        spec: Some(spec),
        status: None,
    }
}

/// Name of the Role and RoleBinding of a `permissions` entry: the one catalog-operator's InstallPlan writes
/// (`messages::rbac_names`), so a plan's Role satisfies the requirement check and is never written twice.
pub fn role_name(csv_name: &str, service_account: &str, rules: &[PolicyRule]) -> String {
    messages::rbac_names::role_name(csv_name, service_account, rules)
}

/// Name of the ClusterRole (and binding): cluster-wide unique, so its hash covers the namespace too.
pub fn cluster_role_name(
    csv_name: &str,
    namespace: &str,
    service_account: &str,
    rules: &[PolicyRule],
) -> String {
    messages::rbac_names::cluster_role_name(csv_name, namespace, service_account, rules)
}

/// The rules hash OLM-created roles carry (`olm.permissions.hash`).
pub fn rules_hash(rules: &[PolicyRule]) -> String {
    messages::rbac_names::rules_hash(rules)
}

#[cfg(test)]
mod corpus;
#[cfg(test)]
pub(crate) mod tests;
