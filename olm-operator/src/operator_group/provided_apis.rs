//! Provided-API sets (spec §3.3): the `olm.providedAPIs` annotation of an OperatorGroup
//! (`Kind.version.group`, sorted, comma-joined) and the APIs a CSV provides (owned CRDs and owned APIServices).

use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;
use std::collections::BTreeSet;

/// A set of `Kind.version.group` strings.
pub type ApiSet = BTreeSet<String>;

/// Parse an `olm.providedAPIs` value like OLM's `GVKStringToProvidedAPISet`: spaces are stripped and entries
/// with fewer than two dots are dropped.
pub fn parse(annotation: &str) -> ApiSet {
    annotation
        .split(',')
        .map(|part| {
            part.chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
        })
        .filter(|part| part.matches('.').count() >= 2)
        .collect()
}

/// The annotation value of a set: sorted and comma-joined (`""` for none).
pub fn format(apis: &ApiSet) -> String {
    apis.iter().cloned().collect::<Vec<_>>().join(",")
}

/// The group's current `olm.providedAPIs`.
pub fn of_group(group: &OperatorGroup) -> ApiSet {
    group
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::PROVIDED_APIS))
        .map(|v| parse(v))
        .unwrap_or_default()
}

/// The APIs a CSV provides: every owned CRD (`name` is `plural.group`) and owned APIService, as `Kind.version.group`.
pub fn of_csv(csv: &ClusterServiceVersion) -> ApiSet {
    let mut apis = ApiSet::new();
    let crds = csv
        .spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|c| c.owned.as_ref());
    for crd in crds.into_iter().flatten() {
        let group = crd.name.split_once('.').map(|(_, g)| g).unwrap_or_default();
        if !crd.kind.is_empty() && !crd.version.is_empty() && !group.is_empty() {
            apis.insert(format!("{}.{}.{}", crd.kind, crd.version, group));
        }
    }
    let services = csv
        .spec
        .api_service_definitions
        .as_ref()
        .and_then(|a| a.owned.as_ref());
    for service in services.into_iter().flatten() {
        if !service.kind.is_empty() && !service.version.is_empty() && !service.group.is_empty() {
            apis.insert(format!(
                "{}.{}.{}",
                service.kind, service.version, service.group
            ));
        }
    }
    apis
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::csv::{
        ApiServiceDefinitions, ApiServiceDescription, ClusterServiceVersionSpec, CrdDescription,
        CustomResourceDefinitions,
    };
    use rstest::rstest;

    #[rstest]
    #[case::one_api_is_read("Goose.v1alpha1.birds.com", &["Goose.v1alpha1.birds.com"])]
    #[case::spaces_are_stripped(" Goose.v1alpha1.birds.com , Duck.v1.birds.com", &["Duck.v1.birds.com", "Goose.v1alpha1.birds.com"])]
    #[case::entries_with_fewer_than_two_dots_are_dropped("Goose.v1,Duck.v1.birds.com,,", &["Duck.v1.birds.com"])]
    #[case::an_empty_annotation_is_an_empty_set("", &[])]
    fn the_annotation_is_parsed_like_olm(#[case] annotation: &str, #[case] expected: &[&str]) {
        let expected: ApiSet = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(parse(annotation), expected);
    }

    #[test]
    fn formatting_sorts_and_joins_and_parses_back() {
        let set: ApiSet = ["b.v1.x.io", "a.v1.x.io"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(format(&set), "a.v1.x.io,b.v1.x.io");
        assert_eq!(parse(&format(&set)), set);
        assert_eq!(format(&ApiSet::new()), "");
    }

    #[test]
    fn a_csv_provides_its_owned_crds_and_api_services() {
        let mut csv = ClusterServiceVersion::new("a.v1", ClusterServiceVersionSpec::default());
        let crd = |name: &str, version: &str, kind: &str| {
            serde_json::from_value::<CrdDescription>(
                serde_json::json!({"name": name, "version": version, "kind": kind}),
            )
            .expect("crd")
        };
        csv.spec.custom_resource_definitions = Some(CustomResourceDefinitions {
            owned: Some(vec![crd(
                "etcdclusters.etcd.database.coreos.com",
                "v1beta2",
                "EtcdCluster",
            )]),
            required: Some(vec![crd("others.x.io", "v1", "Other")]),
        });
        let service = ApiServiceDescription {
            name: "v1.packages.io".into(),
            group: "packages.io".into(),
            version: "v1".into(),
            kind: "Package".into(),
            ..ApiServiceDescription::default()
        };
        csv.spec.api_service_definitions = Some(ApiServiceDefinitions {
            owned: Some(vec![service]),
            required: None,
        });
        let got: Vec<String> = of_csv(&csv).into_iter().collect();
        assert_eq!(
            got,
            vec![
                "EtcdCluster.v1beta2.etcd.database.coreos.com".to_string(),
                "Package.v1.packages.io".to_string()
            ]
        );
    }
}
