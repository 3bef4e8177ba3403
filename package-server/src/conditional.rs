//! Answers with validators, and conditional GET as Go's `http.ServeContent` does it for kube-openapi: an ETag
//! is the SHA-512 of the body in upper-case hex (quoted on the wire), `Last-Modified` is when the document was
//! built; `If-None-Match` (a list, `*`, weak tags) or, without it, `If-Modified-Since` turn the 200 into a
//! 304 without body, Content-Type or Last-Modified. Pure: the caller passes the request's conditions.

use hyper::StatusCode;
use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderName};
use sha2::{Digest, Sha512};
use std::fmt::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An answer, before it becomes a hyper response.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: Vec<(HeaderName, String)>,
    pub body: Bytes,
}

impl Reply {
    pub fn header(&self, name: &HeaderName) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Set `name`, replacing an earlier value.
    pub fn set(&mut self, name: HeaderName, value: String) {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value));
    }
}

/// The SHA-512 of `body` in upper-case hex, as kube-openapi and the discovery handlers compute ETags.
pub fn etag_of(body: &[u8]) -> String {
    Sha512::digest(body)
        .iter()
        .fold(String::with_capacity(128), |mut hex, b| {
            let _ = write!(hex, "{b:02X}");
            hex
        })
}

/// The ETag as sent: in double quotes.
pub fn quoted(etag: &str) -> String {
    format!("\"{etag}\"")
}

/// The request's validators.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conditions {
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
}

impl Conditions {
    pub fn from_headers(headers: &HeaderMap) -> Conditions {
        let get = |name: HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        Conditions {
            if_none_match: get(header::IF_NONE_MATCH),
            if_modified_since: get(header::IF_MODIFIED_SINCE),
        }
    }
}

fn weak_stripped(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag)
}

/// Whether `If-None-Match: header` matches the quoted ETag `etag` (weak comparison, `*` matches any).
pub fn none_match_hits(header: &str, etag: &str) -> bool {
    header.split(',').map(str::trim).any(|candidate| {
        candidate == "*"
            || (!candidate.is_empty() && weak_stripped(candidate) == weak_stripped(etag))
    })
}

fn whole_seconds(t: SystemTime) -> SystemTime {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// Whether the client's copy is current: If-None-Match decides when present, else If-Modified-Since.
pub fn not_modified(conditions: &Conditions, etag: &str, last_modified: SystemTime) -> bool {
    if let Some(header) = &conditions.if_none_match {
        return none_match_hits(header, etag);
    }
    match conditions
        .if_modified_since
        .as_deref()
        .and_then(|h| httpdate::parse_http_date(h).ok())
    {
        Some(since) => whole_seconds(last_modified) <= since,
        None => false,
    }
}

/// `body` as `content_type` with its ETag and Last-Modified, or a 304 when `conditions` say the client has it;
/// `headers` come first (e.g. Vary, Cache-Control).
pub fn serve_content(
    headers: Vec<(HeaderName, String)>,
    content_type: &str,
    body: &Bytes,
    etag: &str,
    last_modified: SystemTime,
    conditions: &Conditions,
) -> Reply {
    let etag = quoted(etag);
    let mut reply = Reply {
        status: StatusCode::OK,
        headers,
        body: body.clone(),
    };
    reply.set(header::ETAG, etag.clone());
    if not_modified(conditions, &etag, last_modified) {
        reply.status = StatusCode::NOT_MODIFIED;
        reply.body = Bytes::new();
        reply.headers.retain(|(n, _)| *n != header::CONTENT_TYPE);
        return reply;
    }
    reply.set(header::CONTENT_TYPE, content_type.to_string());
    reply.set(
        header::LAST_MODIFIED,
        httpdate::fmt_http_date(last_modified),
    );
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const BUILT: u64 = 1_700_000_000;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn date(secs: u64) -> String {
        httpdate::fmt_http_date(at(secs))
    }

    #[test]
    fn the_etag_is_the_upper_case_sha512_of_the_body() {
        assert_eq!(
            etag_of(b"abc"),
            "DDAF35A193617ABACC417349AE20413112E6FA4E89A97EA20A9EEEE64B55D39A2192992A274FC1A836BA3C23A3FEEBBD454D4423643CE80E2A9AC94FA54CA49F"
        );
    }

    #[rstest]
    #[case::same(Some("\"A\""), None, true)]
    #[case::other(Some("\"B\""), None, false)]
    #[case::in_a_list(Some("\"B\", \"A\""), None, true)]
    #[case::weak(Some("W/\"A\""), None, true)]
    #[case::any(Some("*"), None, true)]
    #[case::unquoted_is_another_tag(Some("A"), None, false)]
    #[case::none_match_wins_over_date(Some("\"B\""), Some(date(BUILT + 60)), false)]
    #[case::modified_since_later(None, Some(date(BUILT + 60)), true)]
    #[case::modified_since_same_second(None, Some(date(BUILT)), true)]
    #[case::modified_since_earlier(None, Some(date(BUILT - 60)), false)]
    #[case::unreadable_date(None, Some("yesterday".into()), false)]
    #[case::nothing(None, None, false)]
    fn conditions_decide_whether_the_client_copy_is_current(
        #[case] if_none_match: Option<&str>,
        #[case] if_modified_since: Option<String>,
        #[case] want: bool,
    ) {
        let c = Conditions {
            if_none_match: if_none_match.map(str::to_string),
            if_modified_since,
        };
        let built = at(BUILT) + Duration::from_millis(400);
        assert_eq!(not_modified(&c, "\"A\"", built), want);
    }

    #[test]
    fn a_fresh_copy_gets_the_body_with_its_validators() {
        let body = Bytes::from_static(b"{}");
        let r = serve_content(
            vec![(header::VARY, "Accept".into())],
            "application/json",
            &body,
            "A",
            at(BUILT),
            &Conditions::default(),
        );
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body, body);
        assert_eq!(r.header(&header::ETAG), Some("\"A\""));
        assert_eq!(r.header(&header::CONTENT_TYPE), Some("application/json"));
        assert_eq!(r.header(&header::LAST_MODIFIED), Some(date(BUILT).as_str()));
        assert_eq!(r.header(&header::VARY), Some("Accept"));
    }

    #[test]
    fn a_current_copy_gets_a_bare_304() {
        let r = serve_content(
            vec![(header::VARY, "Accept".into())],
            "application/json",
            &Bytes::from_static(b"{}"),
            "A",
            at(BUILT),
            &Conditions {
                if_none_match: Some("\"A\"".into()),
                if_modified_since: None,
            },
        );
        assert_eq!(r.status, StatusCode::NOT_MODIFIED);
        assert!(r.body.is_empty());
        assert_eq!(r.header(&header::ETAG), Some("\"A\""));
        assert_eq!(r.header(&header::CONTENT_TYPE), None);
        assert_eq!(r.header(&header::LAST_MODIFIED), None);
        assert_eq!(r.header(&header::VARY), Some("Accept"));
    }
}
