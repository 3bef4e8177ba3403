//! The faults of the API fault proxy ([`crate::api_proxy`]) and the pure decision of which one a request gets:
//! the config (`seed=7,5xx=0.02,429=0.02,409=0.05,latency=0.1,drop=0.01,lost=0.02,cut=0.05,410=0.05,max_latency_ms=300`,
//! or `all=R`), the draw, and the Kubernetes `Status` bodies the proxy answers with.
//!
//! | fault | applies to | what the operator sees |
//! |---|---|---|
//! | `5xx` | any request | `500`/`503` with a `Status` body (InternalError / ServiceUnavailable) |
//! | `429` | any request | `429 TooManyRequests` with `Retry-After: 1` |
//! | `409` | writes (POST, PUT, PATCH, DELETE) | `409 Conflict` ("the object has been modified") |
//! | `latency` | any request | forwarded up to `max_latency_ms` late |
//! | `drop` | any request | the connection closes with no response (the request never reaches the apiserver) |
//! | `lost` | writes | forwarded and applied by the apiserver, then the connection closes with no response |
//! | `cut` | watches | forwarded, then the stream ends after up to `max_cut_ms` |
//! | `410` | watches resuming from a `resourceVersion` | a watch `ERROR` event `410 Expired` (too old) |

use std::collections::BTreeMap;

/// One fault of the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiFault {
    ServerError,
    Throttle,
    Conflict,
    Latency,
    Drop,
    /// A write applied upstream whose answer never reaches the client.
    LostAnswer,
    CutWatch,
    Gone,
}

impl ApiFault {
    pub const ALL: [ApiFault; 8] = [
        ApiFault::ServerError,
        ApiFault::Throttle,
        ApiFault::Conflict,
        ApiFault::Latency,
        ApiFault::Drop,
        ApiFault::LostAnswer,
        ApiFault::CutWatch,
        ApiFault::Gone,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiFault::ServerError => "5xx",
            ApiFault::Throttle => "429",
            ApiFault::Conflict => "409",
            ApiFault::Latency => "latency",
            ApiFault::Drop => "drop",
            ApiFault::LostAnswer => "lost",
            ApiFault::CutWatch => "cut",
            ApiFault::Gone => "410",
        }
    }

    /// Whether this fault can hit the request.
    pub fn applies(self, r: &RequestKind) -> bool {
        match self {
            ApiFault::Conflict | ApiFault::LostAnswer => r.write,
            ApiFault::CutWatch => r.watch,
            ApiFault::Gone => r.watch && r.resumes,
            _ => true,
        }
    }
}

/// What the decision needs to know of a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestKind {
    pub write: bool,
    pub watch: bool,
    /// A watch from a `resourceVersion` other than empty or "0" (a resume, which a 410 answers).
    pub resumes: bool,
}

impl RequestKind {
    /// From the method and the query string of a request.
    pub fn of(method: &str, query: &str) -> Self {
        let params: BTreeMap<&str, &str> = query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .collect();
        let watch = params
            .get("watch")
            .is_some_and(|v| *v == "true" || *v == "1");
        let rv = params.get("resourceVersion").copied().unwrap_or_default();
        RequestKind {
            write: matches!(method, "POST" | "PUT" | "PATCH" | "DELETE"),
            watch,
            resumes: watch && !rv.is_empty() && rv != "0",
        }
    }
}

/// A parsed fault config.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiFaults {
    pub seed: u64,
    /// Rate per fault (a probability per request).
    pub rates: BTreeMap<ApiFault, f64>,
    pub max_latency_ms: u64,
    pub max_cut_ms: u64,
}

impl ApiFaults {
    /// `seed=S,<fault>=R,...,all=R,max_latency_ms=N,max_cut_ms=N`; the rates that apply to one request may not
    /// add up to more than 1 (the draw walks them in a fixed order).
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut out = ApiFaults {
            seed: 0,
            rates: BTreeMap::new(),
            max_latency_ms: 300,
            max_cut_ms: 3000,
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("`{part}` is not key=value"))?;
            match k {
                "seed" => out.seed = v.parse()?,
                "max_latency_ms" => out.max_latency_ms = v.parse()?,
                "max_cut_ms" => out.max_cut_ms = v.parse()?,
                "all" => {
                    let r = rate(v)?;
                    for f in ApiFault::ALL {
                        out.rates.insert(f, r);
                    }
                }
                other => {
                    let f = ApiFault::ALL
                        .into_iter()
                        .find(|f| f.as_str() == other)
                        .ok_or_else(|| anyhow::anyhow!("unknown API fault `{other}`"))?;
                    out.rates.insert(f, rate(v)?);
                }
            }
        }
        let worst = out.rates.values().sum::<f64>();
        anyhow::ensure!(
            worst <= 1.0 + 1e-9,
            "the rates add up to {worst} > 1 (a request gets one fault at most)"
        );
        Ok(out)
    }

    /// The fault for a request, from a uniform draw in [0, 1): the rates of the faults that apply are laid end
    /// to end in [`ApiFault::ALL`] order and the draw picks the one it falls in (none past their sum).
    pub fn decide(&self, r: &RequestKind, draw: f64) -> Option<ApiFault> {
        let mut at = 0.0;
        for f in ApiFault::ALL {
            if !f.applies(r) {
                continue;
            }
            at += self.rates.get(&f).copied().unwrap_or(0.0);
            if draw < at {
                return Some(f);
            }
        }
        None
    }
}

fn rate(v: &str) -> anyhow::Result<f64> {
    let r: f64 = v.parse()?;
    anyhow::ensure!((0.0..=1.0).contains(&r), "rate {r} is not in [0, 1]");
    Ok(r)
}

/// A `Status` object as the apiserver writes it (JSON).
pub fn status_body(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code
    })
    .to_string()
}

/// The watch event the apiserver sends when a watch resumes from a compacted resourceVersion.
pub fn gone_event() -> String {
    let status: serde_json::Value = serde_json::from_str(&status_body(
        410,
        "Expired",
        "too old resource version (fault proxy)",
    ))
    .unwrap_or_default();
    format!(
        "{}\n",
        serde_json::json!({"type": "ERROR", "object": status})
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const GET: RequestKind = RequestKind {
        write: false,
        watch: false,
        resumes: false,
    };
    const PUT: RequestKind = RequestKind {
        write: true,
        watch: false,
        resumes: false,
    };
    const WATCH_RESUME: RequestKind = RequestKind {
        write: false,
        watch: true,
        resumes: true,
    };

    #[rstest]
    #[case::a_get("GET", "", GET)]
    #[case::a_put("PUT", "", PUT)]
    #[case::a_list_is_no_watch("GET", "resourceVersion=12&limit=500", GET)]
    #[case::a_first_watch("GET", "watch=true&resourceVersion=0", RequestKind { write: false, watch: true, resumes: false })]
    #[case::a_resumed_watch(
        "GET",
        "allowWatchBookmarks=true&watch=true&resourceVersion=981",
        WATCH_RESUME
    )]
    fn a_request_is_classified(
        #[case] method: &str,
        #[case] query: &str,
        #[case] want: RequestKind,
    ) {
        assert_eq!(RequestKind::of(method, query), want);
    }

    #[rstest]
    #[case::below_every_rate(GET, 0.99, None)]
    #[case::the_first_slice(GET, 0.05, Some(ApiFault::ServerError))]
    #[case::the_second_slice(GET, 0.15, Some(ApiFault::Throttle))]
    // A GET skips 409: its slice goes to latency.
    #[case::a_get_never_conflicts(GET, 0.25, Some(ApiFault::Latency))]
    #[case::a_write_conflicts(PUT, 0.25, Some(ApiFault::Conflict))]
    #[case::a_get_is_never_cut(GET, 0.45, None)]
    #[case::a_write_loses_its_answer(PUT, 0.55, Some(ApiFault::LostAnswer))]
    #[case::a_get_never_loses_an_answer(GET, 0.55, None)]
    #[case::a_resumed_watch_is_cut(WATCH_RESUME, 0.45, Some(ApiFault::CutWatch))]
    #[case::a_resumed_watch_gets_410(WATCH_RESUME, 0.55, Some(ApiFault::Gone))]
    fn the_draw_picks_one_fault_that_applies(
        #[case] r: RequestKind,
        #[case] draw: f64,
        #[case] want: Option<ApiFault>,
    ) {
        let f = ApiFaults::parse("seed=3,all=0.1").expect("config");
        assert_eq!(f.decide(&r, draw), want);
    }

    #[rstest]
    #[case::rates_over_one("5xx=0.6,429=0.6")]
    #[case::unknown_fault("500=0.1")]
    #[case::not_a_rate("5xx=2")]
    #[case::no_value("seed")]
    fn a_bad_config_is_refused(#[case] text: &str) {
        assert!(ApiFaults::parse(text).is_err(), "{text}");
    }

    #[test]
    fn the_410_event_is_a_watch_error_with_code_410() {
        let v: serde_json::Value = serde_json::from_str(gone_event().trim()).expect("json");
        assert_eq!(v["type"], "ERROR");
        assert_eq!(v["object"]["code"], 410);
        assert_eq!(v["object"]["reason"], "Expired");
    }
}
