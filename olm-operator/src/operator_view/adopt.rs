//! Which objects belong to an Operator (OLM's adoption controller): the Subscription of `<package>` in
//! `<namespace>` names the Operator `<package>.<namespace>`; the Subscription, its installed CSV and its current
//! InstallPlan carry the component label; a labelled CSV passes its label on to what it owns (an owner
//! reference to the CSV, or OLM's `olm.owner` labels naming it: [`index`](super::index)) and to the CRDs it owns. Labels are added, never
//! removed, except from InstallPlans of the Subscription older than its current one (OLM disowns those). A
//! copied CSV is never a component (OLM disowns copies).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::annotations::OPERATOR_LABEL_PREFIX;
use messages::crd::annotations::operator_component_label;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::Subscription;

/// The Operator a Subscription makes (OLM's `NewPackageOperator`): `None` without a package or namespace.
pub fn operator_of(sub: &Subscription) -> Option<String> {
    let namespace = sub.metadata.namespace.as_deref()?;
    let package = sub.spec.package.as_str();
    (!package.is_empty()).then(|| messages::crd::operator::operator_name(package, namespace))
}

/// The Operators an object's labels name (OLM's `OperatorNames`).
pub fn operators_named(labels: Option<&std::collections::BTreeMap<String, String>>) -> Vec<String> {
    labels
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix(OPERATOR_LABEL_PREFIX))
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(str::to_owned)
        .collect()
}

/// Whether `meta` already carries the component label of `operator`.
pub fn is_labelled(meta: &ObjectMeta, operator: &str) -> bool {
    meta.labels
        .as_ref()
        .is_some_and(|l| l.contains_key(&operator_component_label(operator)))
}

/// Whether the CSV is a copy (OLM's `IsCopied`: the `olm.copiedFrom` label).
pub fn is_copy(csv: &ClusterServiceVersion) -> bool {
    csv.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(messages::crd::annotations::COPIED_FROM))
}

/// The CRDs a CSV owns (by name), which join its Operator.
pub fn owned_crds(csv: &ClusterServiceVersion) -> Vec<String> {
    csv.spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|d| d.owned.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect()
}

/// Whether an Operator is this olm-operator's to keep: every Operator when it watches the whole cluster;
/// with watched namespaces, only `<package>.<namespace>` of one of them (several scoped olm-operators on one
/// cluster must not fight over each other's Operators).
pub fn in_scope(scope: &olm_runtime::scope::Scope, operator: &str) -> bool {
    match scope {
        olm_runtime::scope::Scope::Cluster => true,
        olm_runtime::scope::Scope::Namespaces(list) => list.iter().any(|ns| {
            operator
                .strip_suffix(ns.as_str())
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.'))
        }),
    }
}

#[cfg(test)]
mod tests;
