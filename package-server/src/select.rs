//! `labelSelector` and `fieldSelector` of list and watch requests: label selectors with Kubernetes' syntax
//! (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma-separated, all must hold) and the
//! field selectors OLM's packageserver supports, `metadata.name` and `metadata.namespace` (`=`, `==`, `!=`).

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
enum LabelTerm {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelTerm>);

#[derive(Clone, Debug, PartialEq)]
enum Field {
    Name,
    Namespace,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector(Vec<(Field, bool, String)>);

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SelectorError {
    #[error("unable to parse requirement: {0:?}")]
    Label(String),
    #[error("field label not supported: {0}")]
    FieldLabel(String),
    #[error("invalid field selector: {0:?}")]
    Field(String),
}

/// Split on commas outside parentheses.
fn terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn set_term(term: &str, op: &str) -> Option<(String, Vec<String>)> {
    let at = term.find(op)?;
    let key = term[..at].trim();
    let rest = term[at + op.len()..].trim();
    let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    let values = inner.split(',').map(|v| v.trim().to_string()).collect();
    Some((key.to_string(), values))
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && !k.contains(|c: char| c.is_whitespace() || "=!(),".contains(c))
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut out = Vec::new();
        for term in terms(s) {
            let bad = || SelectorError::Label(term.to_string());
            let parsed = if let Some((k, v)) = set_term(term, " notin ") {
                LabelTerm::NotIn(k, v)
            } else if let Some((k, v)) = set_term(term, " in ") {
                LabelTerm::In(k, v)
            } else if let Some((k, v)) = term.split_once("!=") {
                LabelTerm::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                LabelTerm::Equals(k.trim().into(), v.trim().into())
            } else if let Some(k) = term.strip_prefix('!') {
                LabelTerm::NotExists(k.trim().into())
            } else {
                LabelTerm::Exists(term.into())
            };
            let key = match &parsed {
                LabelTerm::Equals(k, _)
                | LabelTerm::NotEquals(k, _)
                | LabelTerm::In(k, _)
                | LabelTerm::NotIn(k, _)
                | LabelTerm::Exists(k)
                | LabelTerm::NotExists(k) => k,
            };
            if !valid_key(key) {
                return Err(bad());
            }
            out.push(parsed);
        }
        Ok(LabelSelector(out))
    }

    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
        self.0.iter().all(|t| match t {
            LabelTerm::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelTerm::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelTerm::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelTerm::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelTerm::Exists(k) => get(k).is_some(),
            LabelTerm::NotExists(k) => get(k).is_none(),
        })
    }
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut out = Vec::new();
        for term in terms(s) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(SelectorError::Field(term.to_string()));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => return Err(SelectorError::FieldLabel(other.to_string())),
            };
            out.push((field, equal, value.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    pub fn matches(&self, name: &str, namespace: &str) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => name,
                Field::Namespace => namespace,
            };
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn labels() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("catalog".to_string(), "community".to_string()),
            ("provider".to_string(), "Red Hat".to_string()),
        ])
    }

    #[rstest]
    #[case::empty("", true)]
    #[case::equals("catalog=community", true)]
    #[case::double_equals("catalog==community", true)]
    #[case::equals_other("catalog=certified", false)]
    #[case::not_equals("catalog!=certified", true)]
    #[case::not_equals_missing_key("tier!=gold", true)]
    #[case::in_set("catalog in (certified, community)", true)]
    #[case::not_in_set("catalog notin (certified,community)", false)]
    #[case::not_in_missing_key("tier notin (gold)", true)]
    #[case::exists("provider", true)]
    #[case::not_exists("!provider", false)]
    #[case::both("catalog=community,provider", true)]
    #[case::one_fails("catalog=community,!provider", false)]
    fn label_selectors(#[case] selector: &str, #[case] matches: bool) {
        let s = LabelSelector::parse(selector).expect("parse");
        assert_eq!(s.matches(Some(&labels())), matches, "{selector}");
    }

    #[rstest]
    #[case::no_key("=x")]
    #[case::bad_set("catalog in community")]
    fn bad_label_selectors(#[case] selector: &str) {
        assert!(LabelSelector::parse(selector).is_err(), "{selector}");
    }

    #[rstest]
    #[case::name("metadata.name=etcd", true)]
    #[case::name_other("metadata.name==redis", false)]
    #[case::not_name("metadata.name!=redis", true)]
    #[case::namespace("metadata.namespace=team", true)]
    #[case::both("metadata.name=etcd,metadata.namespace=other", false)]
    fn field_selectors(#[case] selector: &str, #[case] matches: bool) {
        let s = FieldSelector::parse(selector).expect("parse");
        assert_eq!(s.matches("etcd", "team"), matches, "{selector}");
    }

    #[test]
    fn other_fields_are_refused_as_olm_does() {
        assert_eq!(
            FieldSelector::parse("status.catalogSource=x"),
            Err(SelectorError::FieldLabel("status.catalogSource".into()))
        );
    }
}
