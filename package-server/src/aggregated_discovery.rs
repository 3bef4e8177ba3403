//! Aggregated discovery (`apidiscovery.k8s.io/v2`), which kube-apiserver's aggregator asks of an aggregated
//! API server on `GET /apis` with `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`
//! (falling back to the unaggregated APIResourceList when it gets none): one APIGroupDiscovery for
//! `packages.operators.coreos.com` with its one version and resource. Answered as the API server answers it:
//! `Content-Type` carrying the same profile, an ETag (SHA-512 of the body), `Vary: Accept`,
//! `Cache-Control: public`, and a 304 when `If-None-Match` is that ETag. v2beta1 is not served (kube-apiserver
//! removed it in 1.35): an Accept without the v2 profile gets the unaggregated answer.

use crate::accept;
use crate::conditional::{Reply, etag_of, quoted};
use crate::discovery::{CATEGORIES, SHORT_NAMES, VERBS, strings};
use crate::schema::gvk;
use crate::types::{GROUP, GroupVersionKind, KIND, RESOURCE, SINGULAR, VERSION};
use hyper::StatusCode;
use hyper::body::Bytes;
use hyper::header;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use serde::Serialize;

pub const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
pub const DISCOVERY_VERSION: &str = "v2";
pub const LIST: &str = "APIGroupDiscoveryList";
/// The media type asked for and answered with.
pub const CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroupDiscoveryList {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub metadata: ListMeta,
    pub items: Vec<ApiGroupDiscovery>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApiGroupDiscovery {
    pub metadata: ObjectMeta,
    pub versions: Vec<ApiVersionDiscovery>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApiVersionDiscovery {
    pub version: String,
    pub resources: Vec<ApiResourceDiscovery>,
    pub freshness: Freshness,
}

/// Whether the version's resources are up to date: a server describing itself always is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Freshness {
    Current,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Scope {
    Namespaced,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceDiscovery {
    pub resource: String,
    pub response_kind: GroupVersionKind,
    pub scope: Scope,
    pub singular_resource: String,
    pub verbs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

pub fn list() -> ApiGroupDiscoveryList {
    ApiGroupDiscoveryList {
        kind: LIST,
        api_version: "apidiscovery.k8s.io/v2",
        metadata: ListMeta::default(),
        items: vec![ApiGroupDiscovery {
            metadata: ObjectMeta {
                name: Some(GROUP.into()),
                ..Default::default()
            },
            versions: vec![ApiVersionDiscovery {
                version: VERSION.into(),
                resources: vec![ApiResourceDiscovery {
                    resource: RESOURCE.into(),
                    response_kind: gvk(KIND),
                    scope: Scope::Namespaced,
                    singular_resource: SINGULAR.into(),
                    verbs: strings(&VERBS),
                    short_names: strings(&SHORT_NAMES),
                    categories: strings(&CATEGORIES),
                }],
                freshness: Freshness::Current,
            }],
        }],
    }
}

/// Which `/apis` answer an Accept header gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The APIGroupDiscoveryList.
    Aggregated,
    /// The APIGroupList.
    Unaggregated,
}

/// As the API server negotiates `/apis`: aggregated when some JSON clause asks for the v2 list (one asking
/// another server version with `sv`, or a stream other than `watch`, does not count), unaggregated otherwise.
pub fn negotiate(header: Option<&str>) -> Answer {
    let asks = |c: &accept::Clause| {
        c.accepts("application", "json")
            && c.param("sv").is_none_or(str::is_empty)
            && c.param("stream")
                .is_none_or(|s| s.is_empty() || s == "watch")
            && c.param("g") == Some(DISCOVERY_GROUP)
            && c.param("v") == Some(DISCOVERY_VERSION)
            && c.param("as") == Some(LIST)
    };
    match header {
        Some(h) if accept::parse(h).iter().any(asks) => Answer::Aggregated,
        _ => Answer::Unaggregated,
    }
}

/// The serialized list and its ETag, built once.
pub struct AggregatedDiscovery {
    body: Bytes,
    etag: String,
}

impl AggregatedDiscovery {
    pub fn build() -> Result<AggregatedDiscovery, serde_json::Error> {
        let body = serde_json::to_vec(&list())?;
        Ok(AggregatedDiscovery {
            etag: etag_of(&body),
            body: Bytes::from(body),
        })
    }

    /// The answer to `GET /apis` asking for aggregated discovery, given the request's `If-None-Match`.
    pub fn reply(&self, if_none_match: Option<&str>) -> Reply {
        let etag = quoted(&self.etag);
        let mut headers = vec![
            (header::ETAG, etag.clone()),
            (header::VARY, "Accept".to_string()),
            (header::CACHE_CONTROL, "public".to_string()),
        ];
        if if_none_match == Some(etag.as_str()) {
            return Reply {
                status: StatusCode::NOT_MODIFIED,
                headers,
                body: Bytes::new(),
            };
        }
        headers.push((header::CONTENT_TYPE, CONTENT_TYPE.to_string()));
        Reply {
            status: StatusCode::OK,
            headers,
            body: self.body.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::api_resource_list;
    use rstest::rstest;

    #[rstest]
    #[case::aggregator(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        Answer::Aggregated
    )]
    #[case::client_go(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        Answer::Aggregated
    )]
    #[case::nopeer_profile(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json",
        Answer::Aggregated
    )]
    #[case::params_in_any_order(
        "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io",
        Answer::Aggregated
    )]
    #[case::after_a_protobuf_clause(
        "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        Answer::Aggregated
    )]
    #[case::wildcard_media(
        "*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        Answer::Aggregated
    )]
    #[case::lower_weight_still_counts(
        "application/json;q=0.9,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5",
        Answer::Aggregated
    )]
    #[case::protobuf_only(
        "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        Answer::Unaggregated
    )]
    #[case::beta_is_gone(
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
        Answer::Unaggregated
    )]
    #[case::other_kind(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscovery",
        Answer::Unaggregated
    )]
    #[case::server_version(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;sv=v1",
        Answer::Unaggregated
    )]
    #[case::plain_json("application/json", Answer::Unaggregated)]
    #[case::kubectl_1_20("application/json, */*", Answer::Unaggregated)]
    #[case::empty("", Answer::Unaggregated)]
    fn apis_is_aggregated_only_when_the_v2_list_is_asked_for(
        #[case] header: &str,
        #[case] want: Answer,
    ) {
        assert_eq!(negotiate(Some(header)), want);
    }

    #[test]
    fn no_accept_header_gets_the_unaggregated_answer() {
        assert_eq!(negotiate(None), Answer::Unaggregated);
    }

    #[test]
    fn the_list_is_the_v2_wire_shape() {
        let v = serde_json::to_value(list()).expect("json");
        assert_eq!(v["kind"], "APIGroupDiscoveryList");
        assert_eq!(v["apiVersion"], "apidiscovery.k8s.io/v2");
        let group = &v["items"][0];
        assert_eq!(group["metadata"]["name"], "packages.operators.coreos.com");
        let version = &group["versions"][0];
        assert_eq!(version["version"], "v1");
        assert_eq!(version["freshness"], "Current");
        let resource = &version["resources"][0];
        assert_eq!(resource["resource"], "packagemanifests");
        assert_eq!(resource["singularResource"], "packagemanifest");
        assert_eq!(resource["scope"], "Namespaced");
        assert_eq!(
            resource["responseKind"],
            serde_json::to_value(gvk("PackageManifest")).expect("json")
        );
        assert_eq!(
            resource["verbs"],
            serde_json::to_value(["get", "list", "watch"]).expect("json")
        );
        assert!(resource.get("shortNames").is_none() && resource.get("categories").is_none());
        assert!(resource.get("subresources").is_none());
    }

    #[test]
    fn aggregated_and_unaggregated_discovery_describe_the_same_resource() {
        let legacy = api_resource_list();
        let aggregated = list();
        let old = &legacy.resources[0];
        let new = &aggregated.items[0].versions[0].resources[0];
        assert_eq!(
            legacy.group_version,
            format!("{}/{}", GROUP, aggregated.items[0].versions[0].version)
        );
        assert_eq!(old.name, new.resource);
        assert_eq!(old.singular_name, new.singular_resource);
        assert_eq!(old.kind, new.response_kind.kind);
        assert_eq!(old.verbs, new.verbs);
        assert_eq!(old.short_names.clone().unwrap_or_default(), new.short_names);
        assert_eq!(old.categories.clone().unwrap_or_default(), new.categories);
        assert_eq!(old.namespaced, new.scope == Scope::Namespaced);
    }

    #[rstest]
    #[case::first_fetch(None, StatusCode::OK)]
    #[case::cached_current(Some(true), StatusCode::NOT_MODIFIED)]
    #[case::cached_stale(Some(false), StatusCode::OK)]
    fn the_answer_carries_the_api_servers_cache_headers(
        #[case] cached_current: Option<bool>,
        #[case] want: StatusCode,
    ) {
        let d = AggregatedDiscovery::build().expect("json");
        let etag = d
            .reply(None)
            .header(&header::ETAG)
            .map(str::to_string)
            .expect("etag");
        let if_none_match = cached_current.map(|c| if c { etag.clone() } else { "\"OLD\"".into() });
        let r = d.reply(if_none_match.as_deref());
        assert_eq!(r.status, want);
        assert_eq!(r.header(&header::ETAG), Some(etag.as_str()));
        assert_eq!(r.header(&header::VARY), Some("Accept"));
        assert_eq!(r.header(&header::CACHE_CONTROL), Some("public"));
        assert_eq!(etag, quoted(&etag_of(&d.reply(None).body)));
        match want {
            StatusCode::OK => {
                assert_eq!(r.header(&header::CONTENT_TYPE), Some(CONTENT_TYPE));
                let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
                assert_eq!(v["kind"], "APIGroupDiscoveryList");
            }
            _ => assert!(r.body.is_empty()),
        }
    }
}
