//! Which of a CSV's webhook configurations it no longer describes (OLM's `cleanUpRemovedWebhooks`), chosen from
//! olm-operator's store of CSV-owned configurations (`watches.rs`, label `olm.owner.kind=ClusterServiceVersion`)
//! instead of two API lists on every install (issue 19: requests per install).

use super::webhooks::DESCRIPTION_LABEL;
use crate::strategy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::annotations;

/// True when `meta` carries the owner labels of CSV `csv` in `namespace` (what `strategy::owner_selector`
/// selects: owner, owner namespace, owner kind).
fn owned_by(meta: &ObjectMeta, csv: &str, namespace: &str) -> bool {
    let labels = meta.labels.as_ref();
    strategy::owner_labels(csv, namespace)
        .iter()
        .filter(|(k, _)| k.as_str() != annotations::MANAGED)
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Names of the configurations owned by `csv` in `namespace` whose description label is not in `kept`.
pub fn dropped<'a>(
    live: impl IntoIterator<Item = &'a ObjectMeta>,
    csv: &str,
    namespace: &str,
    kept: &[&str],
) -> Vec<String> {
    live.into_iter()
        .filter(|m| owned_by(m, csv, namespace))
        .filter(|m| {
            let description = m
                .labels
                .as_ref()
                .and_then(|l| l.get(DESCRIPTION_LABEL))
                .map(String::as_str)
                .unwrap_or_default();
            !kept.contains(&description)
        })
        .filter_map(|m| m.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn config(name: &str, owner: &str, namespace: &str, description: Option<&str>) -> ObjectMeta {
        let mut labels: BTreeMap<String, String> = strategy::owner_labels(owner, namespace);
        if let Some(d) = description {
            labels.insert(DESCRIPTION_LABEL.to_string(), d.to_string());
        }
        ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels),
            ..ObjectMeta::default()
        }
    }

    #[rstest]
    #[case::nothing_live_nothing_dropped(vec![], &["a"], &[])]
    #[case::a_kept_description_stays(vec![config("w1", "op.v1", "ns", Some("a"))], &["a"], &[])]
    #[case::a_description_no_longer_listed_goes(vec![config("w1", "op.v1", "ns", Some("b"))], &["a"], &["w1"])]
    #[case::one_without_a_description_goes(vec![config("w1", "op.v1", "ns", None)], &["a"], &["w1"])]
    #[case::another_csvs_configuration_stays(vec![config("w1", "op.v2", "ns", Some("b"))], &["a"], &[])]
    #[case::the_same_csv_name_in_another_namespace_stays(vec![config("w1", "op.v1", "other", Some("b"))], &[], &[])]
    #[case::a_csv_with_no_webhooks_left_drops_all_of_its_own(
        vec![config("w1", "op.v1", "ns", Some("a")), config("w2", "op.v1", "ns", Some("b")), config("w3", "x", "ns", Some("a"))],
        &[],
        &["w1", "w2"]
    )]
    fn dropped_configurations(
        #[case] live: Vec<ObjectMeta>,
        #[case] kept: &[&str],
        #[case] expected: &[&str],
    ) {
        assert_eq!(dropped(&live, "op.v1", "ns", kept), expected);
    }

    #[test]
    fn unlabelled_objects_are_never_ours() {
        let bare = ObjectMeta {
            name: Some("w".into()),
            ..ObjectMeta::default()
        };
        assert!(dropped([&bare], "op.v1", "ns", &[]).is_empty());
    }
}
