//! `olm.constraint` CEL rules (OLM's `constraints.CelEnvironment`): a rule is compiled once and evaluated
//! against each candidate bundle with one variable, `properties`: the bundle's properties as a list of
//! `{type, value}` maps. The rule must yield a bool; a bundle satisfies the constraint when it yields `true`.
//! Besides CEL's standard functions there is OLM's `semver_compare(a, b)` (-1, 0, 1, like blang's `Compare`
//! on tolerantly parsed versions). An evaluation error means "does not satisfy", as in OLM.

use std::fmt;
use std::sync::Arc;

use cel::objects::Value as CelValue;
use cel::{Context, ExecutionError, Program};

use crate::model::Property;

/// A compiled CEL rule. Equality and `Debug` go by the rule's text.
#[derive(Clone)]
pub struct CelRule {
    rule: String,
    program: Arc<Program>,
}

impl CelRule {
    /// Compiles `rule`; the error says why it does not parse.
    pub fn compile(rule: &str) -> Result<Self, String> {
        let program = Program::compile(rule).map_err(|e| e.to_string())?;
        Ok(Self {
            rule: rule.to_owned(),
            program: Arc::new(program),
        })
    }

    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// Whether a bundle with these properties satisfies the rule.
    pub fn matches(&self, properties: &[Property]) -> bool {
        self.evaluate(properties).unwrap_or(false)
    }

    /// The rule's verdict, or why it could not be evaluated (not a bool, a function failed, ...).
    pub fn evaluate(&self, properties: &[Property]) -> Result<bool, String> {
        let list: Vec<serde_json::Value> = properties
            .iter()
            .map(|p| serde_json::json!({ "type": p.type_, "value": p.value }))
            .collect();
        let mut context = Context::default();
        context
            .add_variable("properties", list)
            .map_err(|e| e.to_string())?;
        context
            .add_function("semver_compare", semver_compare)
            .map_err(|e| e.to_string())?;
        match self.program.execute(&context) {
            Ok(CelValue::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("the rule yields {other:?}, not a bool")),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl PartialEq for CelRule {
    fn eq(&self, other: &Self) -> bool {
        self.rule == other.rule
    }
}

impl fmt::Debug for CelRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CelRule({:?})", self.rule)
    }
}

/// OLM's `semver_compare`: both arguments printed as text and parsed tolerantly.
fn semver_compare(a: CelValue, b: CelValue) -> Result<i64, ExecutionError> {
    let left = tolerant_version(&a)?;
    let right = tolerant_version(&b)?;
    Ok(match left.cmp_precedence(&right) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
}

fn tolerant_version(v: &CelValue) -> Result<semver::Version, ExecutionError> {
    let text = match v {
        CelValue::String(s) => s.to_string(),
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        CelValue::Float(f) => f.to_string(),
        other => {
            return Err(ExecutionError::function_error(
                "semver_compare",
                format!("{other:?} is not a version"),
            ));
        }
    };
    parse_tolerant(&text).ok_or_else(|| {
        ExecutionError::function_error(
            "semver_compare",
            format!("unable to parse '{text}' to semver format"),
        )
    })
}

/// blang's `ParseTolerant`: surrounding spaces and a leading `v` are dropped, and a missing minor or patch
/// number counts as 0 (`1.2` is `1.2.0`).
pub fn parse_tolerant(text: &str) -> Option<semver::Version> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let split = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(split);
    let mut parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    while parts.len() < 3 {
        parts.push("0");
    }
    let numbers: Option<Vec<u64>> = parts.iter().map(|p| p.parse().ok()).collect();
    let numbers = numbers?;
    semver::Version::parse(&format!(
        "{}.{}.{}{rest}",
        numbers[0], numbers[1], numbers[2]
    ))
    .ok()
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "test inputs are literals; a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn props() -> Vec<Property> {
        vec![
            Property {
                type_: "olm.package".into(),
                value: json!({"packageName": "etcd", "version": "0.9.4"}),
            },
            Property {
                type_: "certified".into(),
                value: json!("true"),
            },
            Property {
                type_: "olm.label".into(),
                value: json!({"label": "stable"}),
            },
        ]
    }

    #[rstest]
    #[case::a_property_exists(
        r#"properties.exists(p, p.type == "certified" && p.value == "true")"#,
        Ok(true)
    )]
    #[case::a_property_is_absent(
        r#"properties.exists(p, p.type == "certified" && p.value == "false")"#,
        Ok(false)
    )]
    #[case::semver_compare_at_least(r#"properties.exists(p, p.type == "olm.package" && semver_compare(p.value.version, "0.9.0") >= 0)"#, Ok(true))]
    #[case::semver_compare_too_old(r#"properties.exists(p, p.type == "olm.package" && semver_compare(p.value.version, "v1") >= 0)"#, Ok(false))]
    #[case::a_rule_that_is_not_a_bool("1 + 1", Err(()))]
    #[case::an_unparseable_version_is_an_error(r#"semver_compare("one", "1.0.0") == 0"#, Err(()))]
    fn rules_are_evaluated_against_the_bundle_properties(
        #[case] rule: &str,
        #[case] expected: Result<bool, ()>,
    ) {
        let compiled = CelRule::compile(rule).unwrap();
        assert_eq!(
            compiled.evaluate(&props()).map_err(|_| ()),
            expected,
            "{rule}"
        );
        assert_eq!(compiled.matches(&props()), expected == Ok(true));
    }

    #[test]
    fn a_rule_that_does_not_parse_is_an_error() {
        assert!(CelRule::compile("properties.exists(p,").is_err());
    }

    #[rstest]
    #[case::plain("1.2.3", "1.2.3")]
    #[case::leading_v_and_spaces(" v1.2.3 ", "1.2.3")]
    #[case::missing_patch("1.2", "1.2.0")]
    #[case::missing_minor("1", "1.0.0")]
    #[case::prerelease_kept("1.2-alpha", "1.2.0-alpha")]
    fn versions_parse_tolerantly(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(parse_tolerant(text).unwrap().to_string(), expected);
    }
}
