//! Requirement checks (spec §2.4), pure over a [`Cluster`] view: minKubeVersion, owned and required CRDs,
//! APIServices, native APIs, and the service accounts and rules of the install strategy. The result lists
//! `status.requirementStatus` in OLM's order (minKube, CRDs sorted by name, required then owned APIServices,
//! native APIs, service accounts) with OLM's statuses and messages.

use super::facts::Requirements;
use crate::strategy;
use messages::crd::csv::{
    ClusterServiceVersion, DependentStatus, RequirementStatus, RequirementStatusReason as R,
};
use std::collections::BTreeMap;

/// What the requirement checks read from the cluster (stores in production, maps in tests).
pub trait Cluster {
    fn crd(&self, name: &str) -> Option<CrdFacts>;
    /// The API server's version (`gitVersion`, e.g. `v1.20.2`), when known.
    fn server_version(&self) -> Option<String>;
    /// Whether discovery lists `kind` in `group/version`; `None` when discovery is unknown.
    fn has_kind(&self, group: &str, version: &str, kind: &str) -> Option<bool>;
    /// Whether the APIService `<version>.<group>` exists and is Available.
    fn api_service_available(&self, name: &str) -> bool;
    fn service_account(&self, namespace: &str, name: &str) -> Option<AccountFacts>;
    /// The `olm.permissions.hash` label of the Role `name` in `namespace`, if it exists.
    fn role_hash(&self, namespace: &str, name: &str) -> Option<String>;
    fn cluster_role_hash(&self, name: &str) -> Option<String>;
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrdFacts {
    pub uid: String,
    pub served_versions: Vec<String>,
    pub established: bool,
    pub names_accepted: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountFacts {
    /// Names of the CSVs owning the account (owner references of kind ClusterServiceVersion).
    pub owner_csvs: Vec<String>,
}

fn entry(
    group: &str,
    version: &str,
    kind: &str,
    name: &str,
    status: R,
    message: impl Into<String>,
) -> RequirementStatus {
    RequirementStatus {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        name: name.into(),
        status,
        message: message.into(),
        uuid: String::new(),
        dependents: Vec::new(),
    }
}

/// Check every requirement of `csv`.
pub fn check(csv: &ClusterServiceVersion, cluster: &dyn Cluster) -> Requirements {
    let mut statuses = Vec::new();
    if let Some(s) = min_kube(csv, cluster) {
        statuses.push(s);
    }
    statuses.extend(crds(csv, cluster));
    statuses.extend(api_services(csv, cluster));
    statuses.extend(native_apis(csv, cluster));
    statuses.extend(permissions(csv, cluster));
    let met = statuses
        .iter()
        .all(|s| matches!(s.status, R::Present | R::DeploymentFound));
    Requirements { met, statuses }
}

/// Strict `major.minor.patch` after stripping a leading `v` and any `-suffix` / `+build` (coreos go-semver).
fn strict_version(raw: &str) -> Option<semver::Version> {
    let trimmed = raw.trim().trim_start_matches('v');
    let core = trimmed.split(['-', '+']).next().unwrap_or_default();
    semver::Version::parse(core).ok()
}

fn min_kube(csv: &ClusterServiceVersion, cluster: &dyn Cluster) -> Option<RequirementStatus> {
    let wanted = csv
        .spec
        .min_kube_version
        .as_deref()
        .filter(|s| !s.trim().is_empty())?;
    let name = csv.metadata.name.clone().unwrap_or_default();
    let make = |status, message: String| {
        entry(
            "operators.coreos.com",
            "v1alpha1",
            "ClusterServiceVersion",
            &name,
            status,
            message,
        )
    };
    let Some(server_raw) = cluster.server_version() else {
        return Some(make(
            R::PresentNotSatisfied,
            "CSV version requirement not met: the server version is unknown".into(),
        ));
    };
    let (Some(min), Some(server)) = (strict_version(wanted), strict_version(&server_raw)) else {
        return Some(make(
            R::PresentNotSatisfied,
            "CSV version parsing error".into(),
        ));
    };
    let server_shown = format!("{}.{}.{}", server.major, server.minor, server.patch);
    Some(if min > server {
        make(
            R::PresentNotSatisfied,
            format!(
                "CSV version requirement not met: minKubeVersion ({wanted}) > server version ({server_shown})"
            ),
        )
    } else {
        make(
            R::Present,
            format!("CSV minKubeVersion ({wanted}) less than server version ({server_shown})"),
        )
    })
}

fn crds(csv: &ClusterServiceVersion, cluster: &dyn Cluster) -> Vec<RequirementStatus> {
    let defs = csv
        .spec
        .custom_resource_definitions
        .clone()
        .unwrap_or_default();
    let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for d in defs
        .owned
        .iter()
        .flatten()
        .chain(defs.required.iter().flatten())
    {
        wanted
            .entry(d.name.clone())
            .or_default()
            .push(d.version.clone());
    }
    wanted
        .into_iter()
        .map(|(name, versions)| {
            let make = |status, message: &str| {
                entry(
                    "apiextensions.k8s.io",
                    "v1",
                    "CustomResourceDefinition",
                    &name,
                    status,
                    message,
                )
            };
            let Some(crd) = cluster.crd(&name) else {
                return make(R::NotPresent, "CRD is not present");
            };
            if versions
                .iter()
                .any(|v| !v.is_empty() && !crd.served_versions.contains(v))
            {
                return make(R::NotPresent, "CRD version not served");
            }
            if crd.established && crd.names_accepted {
                let mut present = make(
                    R::Present,
                    "CRD is present and Established condition is true",
                );
                present.uuid = crd.uid.clone();
                present
            } else {
                make(
                    R::PresentNotAvailable,
                    "CRD is present but the Established condition is False (not available)",
                )
            }
        })
        .collect()
}

fn api_services(csv: &ClusterServiceVersion, cluster: &dyn Cluster) -> Vec<RequirementStatus> {
    let defs = csv.spec.api_service_definitions.clone().unwrap_or_default();
    let owned = defs.owned.unwrap_or_default();
    let owned_names: Vec<String> = owned.iter().map(|d| d.api_service_name()).collect();
    let deployments: Vec<String> = csv
        .spec
        .install
        .spec
        .as_ref()
        .map(|s| s.deployments.iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for d in defs
        .required
        .iter()
        .flatten()
        .filter(|d| !owned_names.contains(&d.api_service_name()))
    {
        let name = d.api_service_name();
        let discovered = cluster
            .has_kind(&d.group, &d.version, &d.kind)
            .unwrap_or(false);
        let (status, message) = if discovered && cluster.api_service_available(&name) {
            (R::Present, "")
        } else {
            (R::NotPresent, "APIService is not present or not available")
        };
        out.push(entry(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            &name,
            status,
            message,
        ));
    }
    for d in &owned {
        let found = d
            .deployment_name
            .as_ref()
            .is_some_and(|n| deployments.contains(n));
        let status = if found {
            R::DeploymentFound
        } else {
            R::DeploymentNotFound
        };
        out.push(entry(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            &d.api_service_name(),
            status,
            "",
        ));
    }
    out
}

fn native_apis(csv: &ClusterServiceVersion, cluster: &dyn Cluster) -> Vec<RequirementStatus> {
    csv.spec
        .native_apis
        .iter()
        .flatten()
        .map(|gvk| {
            let name = if gvk.group.is_empty() {
                gvk.version.clone()
            } else {
                format!("{}.{}", gvk.version, gvk.group)
            };
            match cluster.has_kind(&gvk.group, &gvk.version, &gvk.kind) {
                Some(true) => entry(
                    &gvk.group,
                    &gvk.version,
                    &gvk.kind,
                    &name,
                    R::Present,
                    "Native API exists",
                ),
                Some(false) | None => entry(
                    &gvk.group,
                    &gvk.version,
                    &gvk.kind,
                    &name,
                    R::NotPresent,
                    "Native API does not exist",
                ),
            }
        })
        .collect()
}

fn permissions(csv: &ClusterServiceVersion, cluster: &dyn Cluster) -> Vec<RequirementStatus> {
    let Some(details) = csv.spec.install.spec.as_ref() else {
        return Vec::new();
    };
    let csv_name = csv.metadata.name.clone().unwrap_or_default();
    let namespace = csv.metadata.namespace.clone().unwrap_or_default();
    // service account → [(cluster scope, rules)], merged across permissions and clusterPermissions.
    let mut by_account: BTreeMap<&str, Vec<(bool, &[k8s_openapi::api::rbac::v1::PolicyRule])>> =
        BTreeMap::new();
    for (cluster_scope, list) in [
        (false, &details.permissions),
        (true, &details.cluster_permissions),
    ] {
        for p in list.iter().flatten() {
            by_account
                .entry(p.service_account_name.as_str())
                .or_default()
                .push((cluster_scope, p.rules.as_slice()));
        }
    }
    by_account
        .into_iter()
        .map(|(sa, grants)| {
            let make =
                |status, message: &str| entry("", "v1", "ServiceAccount", sa, status, message);
            let Some(account) = cluster.service_account(&namespace, sa) else {
                return make(R::NotPresent, "Service account does not exist");
            };
            if !account.owner_csvs.is_empty() && !account.owner_csvs.contains(&csv_name) {
                return make(
                    R::PresentNotSatisfied,
                    "Service account is owned by another ClusterServiceVersion",
                );
            }
            let mut dependents = Vec::new();
            for (cluster_scope, rules) in grants {
                let granted = if cluster_scope {
                    cluster.cluster_role_hash(&strategy::cluster_role_name(
                        &csv_name, &namespace, sa, rules,
                    ))
                } else {
                    cluster.role_hash(&namespace, &strategy::role_name(&csv_name, sa, rules))
                };
                let satisfied = granted.as_deref() == Some(strategy::rules_hash(rules).as_str());
                for rule in rules {
                    let scope = if cluster_scope {
                        "cluster"
                    } else {
                        "namespaced"
                    };
                    let json = serde_json::to_string(rule).unwrap_or_default();
                    dependents.push(DependentStatus {
                        group: "rbac.authorization.k8s.io".into(),
                        version: "v1".into(),
                        kind: "PolicyRule".into(),
                        status: if satisfied {
                            R::Satisfied
                        } else {
                            R::NotSatisfied
                        },
                        uuid: String::new(),
                        message: format!("{scope} rule:{json}"),
                    });
                }
            }
            let all_satisfied = dependents.iter().all(|d| d.status == R::Satisfied);
            let mut status = if all_satisfied {
                make(R::Present, "")
            } else {
                make(
                    R::PresentNotSatisfied,
                    "Policy rule not satisfied for service account",
                )
            };
            status.dependents = dependents;
            status
        })
        .collect()
}

#[cfg(test)]
mod tests;
