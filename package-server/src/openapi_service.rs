//! The OpenAPI documents as served, built once at start, and the answers of kube-openapi's handlers for them:
//! `/openapi/v2` and the `/openapi/v3` index with ETag and Last-Modified (304 when the client has them);
//! `/openapi/v3/apis/packages.operators.coreos.com/v1` likewise plus `Vary: Accept`, and with a `hash` query: a
//! 301 to the current hash when it is stale, else `Cache-Control: public, immutable` and an Expires a year
//! ahead. Only JSON is served: an Accept that takes no JSON gets 406.

use crate::accept;
use crate::conditional::{Conditions, Reply, etag_of, quoted, serve_content};
use crate::{openapi_v2, openapi_v3};
use hyper::StatusCode;
use hyper::body::Bytes;
use hyper::header::{self, HeaderName};
use serde::Serialize;
use std::time::{Duration, SystemTime};

const JSON: &str = "application/json";
const A_YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

struct Document {
    body: Bytes,
    etag: String,
}

impl Document {
    fn of<T: Serialize>(value: &T) -> Result<Document, serde_json::Error> {
        let body = serde_json::to_vec(value)?;
        Ok(Document {
            etag: etag_of(&body),
            body: Bytes::from(body),
        })
    }
}

pub struct OpenApiService {
    v2: Document,
    v3: Document,
    index: Document,
    built: SystemTime,
}

fn not_acceptable(headers: Vec<(HeaderName, String)>) -> Reply {
    Reply {
        status: StatusCode::NOT_ACCEPTABLE,
        headers,
        body: Bytes::new(),
    }
}

impl OpenApiService {
    /// Serialize the documents; `built` is their Last-Modified.
    pub fn build(built: SystemTime) -> Result<OpenApiService, serde_json::Error> {
        let v3 = Document::of(&openapi_v3::document())?;
        Ok(OpenApiService {
            v2: Document::of(&openapi_v2::document())?,
            index: Document::of(&openapi_v3::index(&v3.etag))?,
            v3,
            built,
        })
    }

    /// The hash of the v3 document, as the index names it.
    pub fn v3_hash(&self) -> &str {
        &self.v3.etag
    }

    /// `GET /openapi/v2`.
    pub fn v2(&self, accept: Option<&str>, conditions: &Conditions) -> Reply {
        if !accept::accepts_json(accept) {
            return not_acceptable(Vec::new());
        }
        serve_content(
            Vec::new(),
            JSON,
            &self.v2.body,
            &self.v2.etag,
            self.built,
            conditions,
        )
    }

    /// `GET /openapi/v3`.
    pub fn v3_index(&self, conditions: &Conditions) -> Reply {
        serve_content(
            Vec::new(),
            JSON,
            &self.index.body,
            &self.index.etag,
            self.built,
            conditions,
        )
    }

    /// `GET /openapi/v3/<path>`, `hash` from the query; None when `path` is no document of this server.
    pub fn v3_document(
        &self,
        path: &str,
        hash: Option<&str>,
        accept: Option<&str>,
        conditions: &Conditions,
        now: SystemTime,
    ) -> Option<Reply> {
        if path != openapi_v3::group_version_path() {
            return None;
        }
        let mut headers = vec![(header::VARY, "Accept".to_string())];
        if !accept::accepts_json(accept) {
            return Some(not_acceptable(headers));
        }
        if let Some(hash) = hash.filter(|h| !h.is_empty()) {
            if hash != self.v3.etag {
                headers.extend([
                    (header::CONTENT_TYPE, JSON.to_string()),
                    (header::ETAG, quoted(&self.v3.etag)),
                    (
                        header::LOCATION,
                        openapi_v3::server_relative_url(&self.v3.etag),
                    ),
                ]);
                return Some(Reply {
                    status: StatusCode::MOVED_PERMANENTLY,
                    headers,
                    body: Bytes::new(),
                });
            }
            headers.extend([
                (header::CACHE_CONTROL, "public, immutable".to_string()),
                (header::EXPIRES, httpdate::fmt_http_date(now + A_YEAR)),
            ]);
        }
        Some(serve_content(
            headers,
            JSON,
            &self.v3.body,
            &self.v3.etag,
            self.built,
            conditions,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::time::UNIX_EPOCH;

    const GV: &str = "apis/packages.operators.coreos.com/v1";
    const BUILT: u64 = 1_700_000_000;
    const NOW: u64 = 1_700_000_500;

    fn service() -> OpenApiService {
        OpenApiService::build(UNIX_EPOCH + Duration::from_secs(BUILT)).expect("documents")
    }

    /// What a request looks like in a case: the hash as given (`CURRENT` stands for the real one).
    const CURRENT: &str = "CURRENT";

    struct Want {
        status: StatusCode,
        location: bool,
        cache_control: Option<&'static str>,
        expires: bool,
        body: bool,
    }

    const FRESH: Want = Want {
        status: StatusCode::OK,
        location: false,
        cache_control: None,
        expires: false,
        body: true,
    };

    #[rstest]
    #[case::no_hash(None, None, None, FRESH)]
    #[case::current_hash(Some(CURRENT), None, None, Want { cache_control: Some("public, immutable"), expires: true, ..FRESH })]
    #[case::stale_hash_redirects(Some("0BAD"), None, None, Want { status: StatusCode::MOVED_PERMANENTLY, location: true, body: false, ..FRESH })]
    #[case::empty_hash_is_none(Some(""), None, None, FRESH)]
    #[case::cached_copy(Some(CURRENT), Some(CURRENT), None, Want { status: StatusCode::NOT_MODIFIED, cache_control: Some("public, immutable"), expires: true, body: false, ..FRESH })]
    #[case::kubectl_explain_accept(Some(CURRENT), None, Some("application/json"), Want { cache_control: Some("public, immutable"), expires: true, ..FRESH })]
    #[case::protobuf_only(Some(CURRENT), None, Some("application/com.github.proto-openapi.spec.v3.v1.0+protobuf"), Want { status: StatusCode::NOT_ACCEPTABLE, body: false, ..FRESH })]
    fn the_group_version_document_is_served_as_kube_openapi_serves_it(
        #[case] hash: Option<&str>,
        #[case] if_none_match: Option<&str>,
        #[case] accept: Option<&str>,
        #[case] want: Want,
    ) {
        let s = service();
        let current = s.v3_hash().to_string();
        let real = |h: &str| {
            if h == CURRENT {
                current.clone()
            } else {
                h.to_string()
            }
        };
        let conditions = Conditions {
            if_none_match: if_none_match.map(|h| quoted(&real(h))),
            if_modified_since: None,
        };
        let r = s
            .v3_document(
                GV,
                hash.map(real).as_deref(),
                accept,
                &conditions,
                UNIX_EPOCH + Duration::from_secs(NOW),
            )
            .expect("the group-version is served");
        assert_eq!(r.status, want.status);
        assert_eq!(r.header(&header::VARY), Some("Accept"));
        assert_eq!(
            r.header(&header::LOCATION).map(str::to_string),
            want.location
                .then(|| format!("/openapi/v3/{GV}?hash={current}"))
        );
        assert_eq!(r.header(&header::CACHE_CONTROL), want.cache_control);
        let a_year_on = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(NOW) + A_YEAR);
        assert_eq!(
            r.header(&header::EXPIRES),
            want.expires.then_some(a_year_on.as_str())
        );
        assert_eq!(!r.body.is_empty(), want.body);
        if want.status != StatusCode::NOT_ACCEPTABLE {
            assert_eq!(r.header(&header::ETAG), Some(quoted(&current).as_str()));
        }
    }

    #[test]
    fn other_paths_under_openapi_v3_are_not_this_servers() {
        let s = service();
        let now = SystemTime::now();
        for path in [
            "apis/apps/v1",
            "apis/packages.operators.coreos.com",
            "api/v1",
            "",
        ] {
            assert!(
                s.v3_document(path, None, None, &Conditions::default(), now)
                    .is_none(),
                "{path}"
            );
        }
    }

    #[test]
    fn the_index_names_the_document_by_its_hash() {
        let s = service();
        let r = s.v3_index(&Conditions::default());
        assert_eq!(r.status, StatusCode::OK);
        let index: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        let url = index["paths"][GV]["serverRelativeURL"]
            .as_str()
            .expect("the group-version listed");
        let hash = url.split_once("?hash=").map(|(_, h)| h);
        assert_eq!(hash, Some(s.v3_hash()));
        let doc = s
            .v3_document(GV, hash, None, &Conditions::default(), SystemTime::now())
            .expect("served");
        assert_eq!(doc.status, StatusCode::OK, "the index's URL is current");
        assert_eq!(etag_of(&doc.body), s.v3_hash());
        assert_eq!(
            index["paths"].as_object().map(|p| p.len()),
            Some(1),
            "only this server's group-version, nothing the aggregator would merge over its own"
        );
    }

    #[rstest]
    #[case::plain(None, None, StatusCode::OK)]
    #[case::aggregator_download(Some("application/json"), None, StatusCode::OK)]
    #[case::aggregator_cached(Some("application/json"), Some(true), StatusCode::NOT_MODIFIED)]
    #[case::aggregator_stale_copy(Some("application/json"), Some(false), StatusCode::OK)]
    #[case::protobuf_only(
        Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
        None,
        StatusCode::NOT_ACCEPTABLE
    )]
    fn the_v2_document_carries_an_etag_the_aggregator_revalidates(
        #[case] accept: Option<&str>,
        #[case] cached_current: Option<bool>,
        #[case] want: StatusCode,
    ) {
        let s = service();
        let etag = s
            .v2(None, &Conditions::default())
            .header(&header::ETAG)
            .map(str::to_string)
            .expect("an etag");
        let conditions = Conditions {
            if_none_match: cached_current.map(|c| if c { etag.clone() } else { "\"OLD\"".into() }),
            if_modified_since: None,
        };
        let r = s.v2(accept, &conditions);
        assert_eq!(r.status, want);
        if want == StatusCode::OK {
            let doc: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
            assert_eq!(doc["swagger"], "2.0");
        }
    }
}
