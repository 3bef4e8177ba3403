//! The unaggregated discovery answers: `/apis` (the one group), the group, and the
//! `packages.operators.coreos.com/v1` APIResourceList (kubectl's RESTMapper reads it to find
//! `packagemanifests`); and what the resource is, which aggregated discovery (`aggregated_discovery.rs`)
//! describes the same way.

use crate::types::{GROUP, KIND, RESOURCE, SINGULAR, VERSION};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, GroupVersionForDiscovery,
};

/// What can be done with `packagemanifests`: read-only.
pub const VERBS: [&str; 3] = ["get", "list", "watch"];
/// OLM's packageserver declares no short names and no categories for `packagemanifests`.
pub const SHORT_NAMES: [&str; 0] = [];
pub const CATEGORIES: [&str; 0] = [];

pub(crate) fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_string()).collect()
}

/// `values` as an optional list, absent when empty (as the API server leaves it out).
fn optional(values: &[&str]) -> Option<Vec<String>> {
    (!values.is_empty()).then(|| strings(values))
}

fn group() -> APIGroup {
    let version = GroupVersionForDiscovery {
        group_version: format!("{GROUP}/{VERSION}"),
        version: VERSION.into(),
    };
    APIGroup {
        name: GROUP.into(),
        preferred_version: Some(version.clone()),
        server_address_by_client_cidrs: None,
        versions: vec![version],
    }
}

pub fn api_group_list() -> APIGroupList {
    APIGroupList {
        groups: vec![group()],
    }
}

pub fn api_group() -> APIGroup {
    group()
}

pub fn api_resource_list() -> APIResourceList {
    APIResourceList {
        group_version: format!("{GROUP}/{VERSION}"),
        resources: vec![APIResource {
            name: RESOURCE.into(),
            singular_name: SINGULAR.into(),
            namespaced: true,
            kind: KIND.into(),
            verbs: strings(&VERBS),
            short_names: optional(&SHORT_NAMES),
            categories: optional(&CATEGORIES),
            ..Default::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_list_names_packagemanifests_namespaced_and_read_only() {
        let json = serde_json::to_value(api_resource_list()).expect("json");
        assert_eq!(json["kind"], "APIResourceList");
        assert_eq!(json["groupVersion"], "packages.operators.coreos.com/v1");
        assert_eq!(json["resources"][0]["name"], "packagemanifests");
        assert_eq!(json["resources"][0]["namespaced"], true);
        assert_eq!(
            json["resources"][0]["verbs"],
            serde_json::json!(["get", "list", "watch"])
        );
        let groups = serde_json::to_value(api_group_list()).expect("json");
        assert_eq!(groups["kind"], "APIGroupList");
        assert_eq!(
            groups["groups"][0]["preferredVersion"]["groupVersion"],
            "packages.operators.coreos.com/v1"
        );
    }
}
