//! Which request is which (pure): the paths an aggregated API server for `packages.operators.coreos.com/v1`
//! answers, their query parameters, the verb a SubjectAccessReview checks, and the response format asked in
//! `Accept` (a Table for `kubectl get`, else JSON).

use crate::types::{GROUP, RESOURCE, VERSION};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// `/healthz`, `/livez`, `/readyz` (and their sub-paths): no authentication, as generic API servers.
    Health,
    /// `/apis`
    ApiGroupList,
    /// `/apis/packages.operators.coreos.com`
    ApiGroup,
    /// `/apis/packages.operators.coreos.com/v1`
    ResourceList,
    /// `/openapi/v2`
    OpenApiV2,
    /// `/openapi/v3`: the index of the OpenAPI v3 documents.
    OpenApiV3Index,
    /// `/openapi/v3/<path>`, e.g. `apis/packages.operators.coreos.com/v1`.
    OpenApiV3 {
        path: String,
    },
    /// A list, or a watch (`?watch=1` or the legacy `/watch/` prefix); `name` from a get-with-watch.
    List {
        namespace: Option<String>,
        watch: bool,
        name: Option<String>,
    },
    Get {
        namespace: String,
        name: String,
    },
    NotFound,
}

impl Route {
    /// The SubjectAccessReview verb of the request (resource requests) or `get` (non-resource paths).
    pub fn verb(&self) -> &'static str {
        match self {
            Route::List { watch: true, .. } => "watch",
            Route::List { .. } => "list",
            _ => "get",
        }
    }

    pub fn is_resource(&self) -> bool {
        matches!(self, Route::List { .. } | Route::Get { .. })
    }
}

fn truthy(v: Option<&String>) -> bool {
    matches!(v.map(String::as_str), Some("1" | "true" | "True"))
}

/// Route a GET of `path` with query parameters `query`.
pub fn route(path: &str, query: &BTreeMap<String, String>) -> Route {
    let path = path.trim_end_matches('/');
    if ["/healthz", "/livez", "/readyz"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
    {
        return Route::Health;
    }
    match path {
        "/apis" => return Route::ApiGroupList,
        "/openapi/v2" => return Route::OpenApiV2,
        "/openapi/v3" => return Route::OpenApiV3Index,
        _ => {}
    }
    if let Some(rest) = path.strip_prefix("/openapi/v3/") {
        return Route::OpenApiV3 {
            path: rest.to_string(),
        };
    }
    let Some(rest) = path.strip_prefix("/apis/") else {
        return Route::NotFound;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let (watch_prefix, parts) = match parts.as_slice() {
        [g, v, "watch", tail @ ..] if *g == GROUP && *v == VERSION => {
            (true, [&[*g, *v][..], tail].concat())
        }
        _ => (false, parts),
    };
    let watch = watch_prefix || truthy(query.get("watch"));
    match parts.as_slice() {
        [g] if *g == GROUP => Route::ApiGroup,
        [g, v] if *g == GROUP && *v == VERSION => Route::ResourceList,
        [g, v, r] if *g == GROUP && *v == VERSION && *r == RESOURCE => Route::List {
            namespace: None,
            watch,
            name: None,
        },
        [g, v, "namespaces", ns, r] if *g == GROUP && *v == VERSION && *r == RESOURCE => {
            Route::List {
                namespace: Some((*ns).to_string()),
                watch,
                name: None,
            }
        }
        [g, v, "namespaces", ns, r, name]
            if *g == GROUP && *v == VERSION && *r == RESOURCE && !name.is_empty() =>
        {
            if watch {
                Route::List {
                    namespace: Some((*ns).to_string()),
                    watch,
                    name: Some((*name).to_string()),
                }
            } else {
                Route::Get {
                    namespace: (*ns).to_string(),
                    name: (*name).to_string(),
                }
            }
        }
        _ => Route::NotFound,
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Percent-decoding (with `+` as space when `plus` is set).
pub fn unescape(s: &str, plus: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query string as a map (last value wins).
pub fn query(q: Option<&str>) -> BTreeMap<String, String> {
    q.unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (unescape(k, true), unescape(v, true))
        })
        .collect()
}

/// The response format asked for in `Accept`.
#[derive(Clone, Debug, PartialEq)]
pub enum Format {
    Json,
    /// A `meta.k8s.io` Table of this version (`v1` or `v1beta1`).
    Table(String),
}

pub fn format(accept: Option<&str>) -> Format {
    for clause in accept.unwrap_or("").split(',') {
        let mut params = clause.split(';').map(str::trim);
        let media = params.next().unwrap_or("");
        if media != "application/json" && media != "*/*" {
            continue;
        }
        let params: BTreeMap<&str, &str> = params.filter_map(|p| p.split_once('=')).collect();
        match params.get("as") {
            Some(&"Table") => {
                let version = params.get("v").copied().unwrap_or("v1");
                if (version == "v1" || version == "v1beta1")
                    && params.get("g").is_none_or(|g| *g == "meta.k8s.io")
                {
                    return Format::Table(version.to_string());
                }
            }
            Some(_) => {}
            None => return Format::Json,
        }
    }
    Format::Json
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn q(s: &str) -> BTreeMap<String, String> {
        query(Some(s))
    }

    #[rstest]
    #[case::healthz("/healthz", "", Route::Health)]
    #[case::readyz_sub("/readyz/ping", "", Route::Health)]
    #[case::apis("/apis", "", Route::ApiGroupList)]
    #[case::group("/apis/packages.operators.coreos.com", "", Route::ApiGroup)]
    #[case::resources("/apis/packages.operators.coreos.com/v1", "", Route::ResourceList)]
    #[case::openapi("/openapi/v2", "", Route::OpenApiV2)]
    #[case::openapi_v3_index("/openapi/v3", "", Route::OpenApiV3Index)]
    #[case::openapi_v3_index_slash("/openapi/v3/", "", Route::OpenApiV3Index)]
    #[case::openapi_v3_document("/openapi/v3/apis/packages.operators.coreos.com/v1", "hash=AB", Route::OpenApiV3 { path: "apis/packages.operators.coreos.com/v1".into() })]
    #[case::openapi_v3_other("/openapi/v3/apis/apps/v1", "", Route::OpenApiV3 { path: "apis/apps/v1".into() })]
    #[case::list_all("/apis/packages.operators.coreos.com/v1/packagemanifests", "", Route::List { namespace: None, watch: false, name: None })]
    #[case::list_ns("/apis/packages.operators.coreos.com/v1/namespaces/team/packagemanifests", "limit=500", Route::List { namespace: Some("team".into()), watch: false, name: None })]
    #[case::watch_ns("/apis/packages.operators.coreos.com/v1/namespaces/team/packagemanifests", "watch=true", Route::List { namespace: Some("team".into()), watch: true, name: None })]
    #[case::legacy_watch("/apis/packages.operators.coreos.com/v1/watch/namespaces/team/packagemanifests", "", Route::List { namespace: Some("team".into()), watch: true, name: None })]
    #[case::get("/apis/packages.operators.coreos.com/v1/namespaces/team/packagemanifests/etcd", "", Route::Get { namespace: "team".into(), name: "etcd".into() })]
    #[case::get_watch("/apis/packages.operators.coreos.com/v1/namespaces/team/packagemanifests/etcd", "watch=1", Route::List { namespace: Some("team".into()), watch: true, name: Some("etcd".into()) })]
    #[case::other_group("/apis/apps/v1", "", Route::NotFound)]
    #[case::other_resource(
        "/apis/packages.operators.coreos.com/v1/namespaces/team/pods",
        "",
        Route::NotFound
    )]
    #[case::root("/", "", Route::NotFound)]
    fn routes(#[case] path: &str, #[case] query: &str, #[case] want: Route) {
        assert_eq!(route(path, &q(query)), want);
    }

    #[rstest]
    #[case::watch(Route::List { namespace: None, watch: true, name: None }, "watch")]
    #[case::list(Route::List { namespace: None, watch: false, name: None }, "list")]
    #[case::get(Route::Get { namespace: "a".into(), name: "b".into() }, "get")]
    #[case::discovery(Route::ResourceList, "get")]
    fn verbs(#[case] r: Route, #[case] verb: &str) {
        assert_eq!(r.verb(), verb);
    }

    #[test]
    fn query_values_are_unescaped() {
        let m = q(
            "labelSelector=catalog%3Dcommunity%2Ctier+in+(a%2Cb)&fieldSelector=metadata.name%3Detcd&bad=%zz",
        );
        assert_eq!(m["labelSelector"], "catalog=community,tier in (a,b)");
        assert_eq!(m["fieldSelector"], "metadata.name=etcd");
        assert_eq!(m["bad"], "%zz");
    }

    #[rstest]
    #[case::kubectl_get("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", Format::Table("v1".into()))]
    #[case::beta_only("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", Format::Table("v1beta1".into()))]
    #[case::plain("application/json", Format::Json)]
    #[case::none("", Format::Json)]
    #[case::partial_metadata_falls_back(
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json",
        Format::Json
    )]
    fn formats(#[case] accept: &str, #[case] want: Format) {
        assert_eq!(format(Some(accept)), want);
    }
}
