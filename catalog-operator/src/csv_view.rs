//! The CSVs as catalog-operator keeps them (issue 19): no copies, and only what resolution and InstallPlans read.
//!
//! Like OLM's catalog operator (its pruned CSV informer), the store watches with the label selector
//! [`NOT_COPIED`], so the copies of global operators (one per namespace, each a whole CSV) are neither stored
//! nor trigger the resolution of namespaces that have no Subscription; resolution skipped copies anyway
//! (`namespace::input::installed`). [`project`] then keeps of each CSV its metadata, `spec.version`,
//! `spec.replaces`, the owned and required CRDs (names, versions, kinds) and API services, and the status phase, reason and message: the
//! install strategy, descriptions, icons and conditions are dropped. Pure.

use messages::crd::csv::{
    ClusterServiceVersion, ClusterServiceVersionSpec, ClusterServiceVersionStatus, CrdDescription,
    CustomResourceDefinitions,
};

/// The watch's label selector: every CSV but OLM's copies (`olm.copiedFrom`).
pub const NOT_COPIED: &str = "!olm.copiedFrom";

/// Keep only what catalog-operator reads of `csv`.
pub fn project(csv: &mut ClusterServiceVersion) {
    let spec = std::mem::take(&mut csv.spec);
    csv.spec = ClusterServiceVersionSpec {
        version: spec.version,
        replaces: spec.replaces,
        custom_resource_definitions: spec.custom_resource_definitions.map(|d| {
            CustomResourceDefinitions {
                owned: d.owned.map(names_only),
                required: d.required.map(names_only),
            }
        }),
        api_service_definitions: spec.api_service_definitions,
        display_name: String::new(),
        ..Default::default()
    };
    csv.status = csv.status.take().map(|status| ClusterServiceVersionStatus {
        phase: status.phase,
        reason: status.reason,
        message: status.message,
        ..Default::default()
    });
}

/// A CRD's name, version and kind: its descriptors and resources are for consoles.
fn names_only(crds: Vec<CrdDescription>) -> Vec<CrdDescription> {
    crds.into_iter()
        .map(|d| CrdDescription {
            name: d.name,
            version: d.version,
            kind: d.kind,
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::{CsvPhase, CsvReason, Icon};
    use rstest::rstest;

    fn full() -> ClusterServiceVersion {
        let mut csv = ClusterServiceVersion::new(
            "etcd.v0.9.2",
            ClusterServiceVersionSpec {
                version: Some("0.9.2".into()),
                replaces: Some("etcd.v0.9.0".into()),
                display_name: "etcd".into(),
                description: Some("a long description".into()),
                icon: Some(vec![Icon {
                    data: "iVBORw0KGgo".repeat(100),
                    media_type: "image/png".into(),
                }]),
                custom_resource_definitions: Some(CustomResourceDefinitions {
                    owned: Some(vec![CrdDescription {
                        name: "etcdclusters.etcd.database.coreos.com".into(),
                        version: "v1beta2".into(),
                        kind: "EtcdCluster".into(),
                        description: Some("an etcd cluster".into()),
                        ..Default::default()
                    }]),
                    required: None,
                }),
                ..Default::default()
            },
        );
        csv.metadata.namespace = Some("ns".into());
        csv.metadata.annotations = Some(std::collections::BTreeMap::from([(
            "olm.properties".to_string(),
            "{}".to_string(),
        )]));
        csv.set_phase(
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
            "install strategy completed with no errors",
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        );
        csv
    }

    #[rstest]
    #[case::keeps_the_name_and_annotations(|c: &ClusterServiceVersion| c.metadata.name.as_deref() == Some("etcd.v0.9.2") && c.metadata.annotations.as_ref().is_some_and(|a| a.contains_key("olm.properties")))]
    #[case::keeps_version_and_replaces(|c: &ClusterServiceVersion| c.spec.version.as_deref() == Some("0.9.2") && c.spec.replaces.as_deref() == Some("etcd.v0.9.0"))]
    #[case::keeps_the_owned_crds_names(|c: &ClusterServiceVersion| c.spec.custom_resource_definitions.as_ref().and_then(|d| d.owned.as_ref()).is_some_and(|o| o.len() == 1 && o[0].kind == "EtcdCluster" && o[0].version == "v1beta2" && o[0].description.is_none()))]
    #[case::keeps_phase_and_reason(|c: &ClusterServiceVersion| c.phase() == CsvPhase::Succeeded && c.reason() == CsvReason::InstallSucceeded)]
    #[case::drops_icon_and_description(|c: &ClusterServiceVersion| c.spec.icon.is_none() && c.spec.description.is_none() && c.spec.display_name.is_empty())]
    #[case::drops_the_phase_history(|c: &ClusterServiceVersion| c.status.as_ref().is_some_and(|s| s.conditions.is_empty() && s.last_transition_time.is_none()))]
    fn the_projection_keeps_what_resolution_reads(
        #[case] holds: fn(&ClusterServiceVersion) -> bool,
    ) {
        let mut csv = full();
        project(&mut csv);
        assert!(holds(&csv), "{csv:#?}");
    }

    #[test]
    fn the_projection_is_smaller() {
        let before = serde_json::to_vec(&full()).map(|v| v.len()).unwrap_or(0);
        let mut csv = full();
        project(&mut csv);
        let after = serde_json::to_vec(&csv)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        assert!(after * 2 < before, "{after} bytes of {before}");
    }
}
