//! What an aggregated API server must answer for discovery: `/apis` (the one group), the group, the
//! `packages.operators.coreos.com/v1` APIResourceList (kubectl's RESTMapper reads it to find
//! `packagemanifests`), and an OpenAPI v2 document (the aggregator merges it; `kubectl explain` reads it).

use crate::types::{GROUP, KIND, RESOURCE, SINGULAR, VERSION};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, GroupVersionForDiscovery,
};

/// The static OpenAPI v2 document of the group.
pub const OPENAPI_V2: &str = include_str!("openapi-v2.json");

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
            verbs: vec!["get".into(), "list".into(), "watch".into()],
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

    #[test]
    fn the_openapi_document_is_json_naming_the_kind() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI_V2).expect("valid JSON");
        assert_eq!(doc["swagger"], "2.0");
        let defs = doc["definitions"].as_object().expect("definitions");
        assert!(
            defs.values()
                .any(|d| d["x-kubernetes-group-version-kind"][0]["kind"] == "PackageManifest")
        );
    }
}
