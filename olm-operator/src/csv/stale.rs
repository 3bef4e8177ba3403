//! The CSV-owned Deployments its strategy no longer lists, read from olm-operator's Deployment store (issue 19:
//! the watch already knows them; listing them per install cost a request each time). A Deployment created
//! moments ago and not yet in the store is one the strategy lists anyway; one the store misses is found when its
//! watch event requeues the CSV. Pure.

use crate::strategy::owner_labels;
use k8s_openapi::api::apps::v1::Deployment;
use messages::crd::annotations;
use std::sync::Arc;

/// Names of the Deployments of `known` in `namespace` that carry the owner labels of `csv_name` and are not in
/// `wanted`.
pub fn stale_deployments(
    known: &[Arc<Deployment>],
    csv_name: &str,
    namespace: &str,
    wanted: &[&str],
) -> Vec<String> {
    let owner = owner_labels(csv_name, namespace);
    known
        .iter()
        .filter(|d| d.metadata.namespace.as_deref() == Some(namespace))
        .filter(|d| {
            let labels = d.metadata.labels.as_ref();
            owner
                .iter()
                .filter(|(k, _)| k.as_str() != annotations::MANAGED)
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .filter_map(|d| d.metadata.name.clone())
        .filter(|name| !wanted.contains(&name.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn deployment(namespace: &str, name: &str, owner: &str) -> Arc<Deployment> {
        let mut d = Deployment::default();
        d.metadata.name = Some(name.into());
        d.metadata.namespace = Some(namespace.into());
        d.metadata.labels = Some(owner_labels(owner, namespace));
        Arc::new(d)
    }

    #[rstest]
    #[case::a_dropped_deployment_is_stale(&["op"], &["old"])]
    #[case::listed_deployments_stay(&["op", "old"], &[])]
    #[case::nothing_listed_all_are_stale(&[], &["op", "old"])]
    fn stale_are_owned_and_unlisted(#[case] wanted: &[&str], #[case] want: &[&str]) {
        let known = [
            deployment("ns", "op", "op.v1"),
            deployment("ns", "old", "op.v1"),
            deployment("other", "old", "op.v1"),
            deployment("ns", "theirs", "other.v1"),
        ];
        let mut got = stale_deployments(&known, "op.v1", "ns", wanted);
        got.sort();
        let mut want: Vec<String> = want.iter().map(|n| n.to_string()).collect();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn an_unlabelled_deployment_is_never_stale() {
        let mut d = Deployment::default();
        d.metadata.name = Some("plain".into());
        d.metadata.namespace = Some("ns".into());
        assert!(stale_deployments(&[Arc::new(d)], "op.v1", "ns", &[]).is_empty());
    }
}
