//! Whether a deleted CSV can have left cluster-scoped objects to delete (webhook configurations, API services,
//! kube-system bindings, cluster RBAC by owner labels). A copied CSV installs nothing, so its deletion needs no
//! delete-collection at all: turning copies off in a cluster of 2,000 namespaces with 5 global operators made
//! six delete-collections for each of its 10,000 copies (issue 19, found by the full-size scale bench).

use messages::crd::csv::ClusterServiceVersion;

/// True unless the CSV last seen was a copy (an unknown CSV is cleaned up, as before).
pub fn may_own_cluster_objects(last_seen: Option<&ClusterServiceVersion>) -> bool {
    last_seen.is_none_or(|c| !c.is_copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn csv(copied: bool) -> ClusterServiceVersion {
        let mut c = ClusterServiceVersion::new("op.v1", Default::default());
        c.metadata.namespace = Some("tenant".into());
        if copied {
            c.metadata.labels = Some(BTreeMap::from([(
                messages::crd::annotations::COPIED_FROM.to_string(),
                "operators".to_string(),
            )]));
        }
        c
    }

    #[rstest]
    #[case::never_seen_is_cleaned_up(None, true)]
    #[case::an_installed_csv_is_cleaned_up(Some(csv(false)), true)]
    #[case::a_copy_is_not(Some(csv(true)), false)]
    fn cleanup_after_deletion(
        #[case] last_seen: Option<ClusterServiceVersion>,
        #[case] expected: bool,
    ) {
        assert_eq!(may_own_cluster_objects(last_seen.as_ref()), expected);
    }
}
