//! The `Accept` header as the API server and kube-openapi read it (Go's goautoneg): comma-separated clauses
//! `type/subtype;key=value;q=weight`, a bare `*` meaning `*/*`, ordered by weight, then concrete types and
//! subtypes before wildcards, otherwise in the order given.

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
pub struct Clause {
    pub kind: String,
    pub subtype: String,
    /// Parameters other than `q`.
    pub params: BTreeMap<String, String>,
    pub q: f64,
}

impl Clause {
    /// Whether this clause accepts `kind/subtype` (wildcards included).
    pub fn accepts(&self, kind: &str, subtype: &str) -> bool {
        (self.kind == kind || self.kind == "*") && (self.subtype == subtype || self.subtype == "*")
    }

    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }
}

fn clause(part: &str) -> Option<Clause> {
    let mut pieces = part.trim().split(';');
    let range = pieces.next().unwrap_or("");
    let (kind, subtype) = match range.split_once('/') {
        Some((k, s)) if !s.contains('/') => (k.trim(), s.trim()),
        Some(_) => return None,
        None if range.trim() == "*" => ("*", "*"),
        None => return None,
    };
    let mut params = BTreeMap::new();
    let mut q = 1.0;
    for param in pieces {
        let Some((key, value)) = param.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key == "q" {
            // An unreadable weight is 0, as goautoneg has it.
            q = value.trim().parse().unwrap_or(0.0);
        } else {
            params.insert(key.to_string(), value.trim().to_string());
        }
    }
    Some(Clause {
        kind: kind.to_string(),
        subtype: subtype.to_string(),
        params,
        q,
    })
}

/// The clauses of `header`, best first.
pub fn parse(header: &str) -> Vec<Clause> {
    let mut clauses: Vec<Clause> = header.split(',').filter_map(clause).collect();
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then((a.kind == "*").cmp(&(b.kind == "*")))
            .then((a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

/// Whether a JSON answer is acceptable: some clause takes `application/json`; no header takes anything.
pub fn accepts_json(header: Option<&str>) -> bool {
    match header.map(str::trim).filter(|h| !h.is_empty()) {
        None => true,
        Some(h) => parse(h).iter().any(|c| c.accepts("application", "json")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn kinds(header: &str) -> Vec<String> {
        parse(header)
            .into_iter()
            .map(|c| format!("{}/{}", c.kind, c.subtype))
            .collect()
    }

    #[rstest]
    #[case::in_order_given("application/json, application/yaml", &["application/json", "application/yaml"])]
    #[case::by_weight("application/yaml;q=0.5, application/json", &["application/json", "application/yaml"])]
    #[case::wildcards_last("*/*, application/*, application/json", &["application/json", "application/*", "*/*"])]
    #[case::bare_star("*", &["*/*"])]
    #[case::unreadable_weight_is_zero("application/yaml;q=x, text/plain;q=0.1", &["text/plain", "application/yaml"])]
    #[case::junk_left_out("json, a/b/c, , application/json", &["application/json"])]
    fn clauses_are_ordered_as_goautoneg_orders_them(#[case] header: &str, #[case] want: &[&str]) {
        assert_eq!(kinds(header), want);
    }

    #[test]
    fn parameters_are_kept_without_the_weight() {
        let c = &parse(
            " application/json ; g=apidiscovery.k8s.io;v=v2 ;as=APIGroupDiscoveryList;q=0.9",
        )[0];
        assert_eq!(c.param("g"), Some("apidiscovery.k8s.io"));
        assert_eq!(c.param("v"), Some("v2"));
        assert_eq!(c.param("as"), Some("APIGroupDiscoveryList"));
        assert_eq!(c.param("q"), None);
        assert_eq!(c.q, 0.9);
    }

    #[rstest]
    #[case::none(None, true)]
    #[case::empty(Some(""), true)]
    #[case::json(Some("application/json"), true)]
    #[case::anything(Some("*/*"), true)]
    #[case::application_anything(Some("application/*"), true)]
    #[case::protobuf_then_json(
        Some("application/com.github.proto-openapi.spec.v3.v1.0+protobuf, application/json"),
        true
    )]
    #[case::protobuf_only(
        Some("application/com.github.proto-openapi.spec.v3.v1.0+protobuf"),
        false
    )]
    #[case::yaml_only(Some("application/yaml"), false)]
    fn json_is_acceptable_when_a_clause_takes_it(#[case] header: Option<&str>, #[case] want: bool) {
        assert_eq!(accepts_json(header), want);
    }
}
