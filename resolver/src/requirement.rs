//! A bundle's dependencies, read from its required APIs and its properties.
//!
//! Understood property types: `olm.gvk.required`, `olm.package.required`, `olm.label.required` and
//! `olm.constraint` with `gvk`, `package`, `all`, `any`, `not` and `cel` (OLM's CEL environment, see
//! [`crate::cel`]). Provided APIs come from
//! `providedApis` plus `olm.gvk` properties. Other property types are ignored, as OLM ignores them.

use std::fmt;

use serde::Deserialize;

use crate::cel::CelRule;
use crate::model::{Gvk, Property};
use crate::range::VersionRange;

/// One thing a bundle needs from the rest of the namespace.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// Some selected bundle provides this API.
    Gvk(Gvk),
    /// Some selected bundle of this package has a version in the range.
    Package { name: String, range: VersionRange },
    /// Some selected bundle carries an `olm.label` property with this label (`olm.label.required`).
    Label(String),
    /// Some selected bundle's properties satisfy this CEL rule (`olm.constraint` with `cel`).
    Cel(CelRule),
    /// At least one of these holds (only `Gvk`/`Package`/`Any` inside).
    Any(Vec<Requirement>),
    /// No selected bundle satisfies any of these (only `Gvk`/`Package` inside).
    None(Vec<Requirement>),
    /// A form this resolver does not evaluate; the bundle can never be selected.
    Unsupported(String),
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Gvk(g) => write!(f, "API {g}"),
            Requirement::Package { name, range } => {
                write!(f, "package {name} with version in `{range}`")
            }
            Requirement::Any(all) => {
                f.write_str("any of [")?;
                write_list(f, all)?;
                f.write_str("]")
            }
            Requirement::None(all) => {
                f.write_str("none of [")?;
                write_list(f, all)?;
                f.write_str("]")
            }
            Requirement::Label(label) => write!(f, "a bundle with label `{label}`"),
            Requirement::Cel(rule) => {
                write!(f, "a bundle whose properties satisfy `{}`", rule.rule())
            }
            Requirement::Unsupported(text) => write!(f, "unsupported constraint {text}"),
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, all: &[Requirement]) -> fmt::Result {
    for (i, r) in all.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{r}")?;
    }
    Ok(())
}

/// A requirement with the author's optional `failureMessage`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dependency {
    pub requirement: Requirement,
    pub failure_message: Option<String>,
}

/// Why a property could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertyError {
    #[error("property {kind} has an unreadable value: {reason}")]
    Shape { kind: String, reason: String },
    #[error("property {kind} has a CEL rule that does not compile: `{rule}`: {reason}")]
    Cel {
        kind: String,
        rule: String,
        reason: String,
    },
    #[error("property {kind} has an invalid versionRange `{text}`")]
    Range {
        kind: String,
        text: String,
        #[source]
        source: crate::range::RangeError,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageRequired {
    package_name: String,
    version_range: String,
}

#[derive(Deserialize)]
struct GvkValue {
    group: String,
    #[serde(default)]
    version: String,
    kind: String,
}

#[derive(Deserialize)]
struct LabelValue {
    label: String,
}

#[derive(Deserialize)]
struct CelValue {
    rule: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConstraintValue {
    #[serde(default)]
    failure_message: Option<String>,
    #[serde(default)]
    gvk: Option<GvkValue>,
    #[serde(default)]
    package: Option<PackageRequired>,
    #[serde(default)]
    all: Option<Compound>,
    #[serde(default)]
    any: Option<Compound>,
    #[serde(default)]
    not: Option<Compound>,
    #[serde(default)]
    cel: Option<CelValue>,
}

#[derive(Deserialize)]
struct Compound {
    #[serde(default)]
    constraints: Vec<ConstraintValue>,
}

fn shape(kind: &str, e: impl fmt::Display) -> PropertyError {
    PropertyError::Shape {
        kind: kind.to_owned(),
        reason: e.to_string(),
    }
}

fn parse_range(kind: &str, text: &str) -> Result<VersionRange, PropertyError> {
    VersionRange::parse(text).map_err(|source| PropertyError::Range {
        kind: kind.to_owned(),
        text: text.to_owned(),
        source,
    })
}

/// APIs a bundle provides: its `providedApis` plus `olm.gvk` properties, deduplicated and sorted.
pub fn provided_apis(provided: &[Gvk], properties: &[Property]) -> Vec<Gvk> {
    let mut out: Vec<Gvk> = provided.to_vec();
    for p in properties.iter().filter(|p| p.type_ == "olm.gvk") {
        if let Ok(g) = GvkValue::deserialize(&p.value) {
            out.push(Gvk::new(&g.group, &g.version, &g.kind));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A bundle's dependencies: one per required API, plus one per dependency property, in that order.
pub fn dependencies(
    required: &[Gvk],
    properties: &[Property],
) -> Result<Vec<Dependency>, PropertyError> {
    let mut out: Vec<Dependency> = Vec::new();
    let mut push = |d: Dependency| {
        if !out.contains(&d) {
            out.push(d);
        }
    };
    for g in required {
        push(Dependency {
            requirement: Requirement::Gvk(g.clone()),
            failure_message: None,
        });
    }
    for p in properties {
        let kind = p.type_.as_str();
        match kind {
            "olm.gvk.required" => {
                let g = GvkValue::deserialize(&p.value).map_err(|e| shape(kind, e))?;
                push(Dependency {
                    requirement: Requirement::Gvk(Gvk::new(&g.group, &g.version, &g.kind)),
                    failure_message: None,
                });
            }
            "olm.package.required" => {
                let v = PackageRequired::deserialize(&p.value).map_err(|e| shape(kind, e))?;
                let range = parse_range(kind, &v.version_range)?;
                push(Dependency {
                    requirement: Requirement::Package {
                        name: v.package_name,
                        range,
                    },
                    failure_message: None,
                });
            }
            "olm.label.required" => {
                let v = LabelValue::deserialize(&p.value).map_err(|e| shape(kind, e))?;
                push(Dependency {
                    requirement: Requirement::Label(v.label),
                    failure_message: None,
                });
            }
            "olm.constraint" => {
                let v = ConstraintValue::deserialize(&p.value).map_err(|e| shape(kind, e))?;
                let failure_message = v.failure_message.clone();
                for requirement in constraint(&v)? {
                    push(Dependency {
                        requirement,
                        failure_message: failure_message.clone(),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// One `olm.constraint` value as a list of requirements that must all hold.
fn constraint(v: &ConstraintValue) -> Result<Vec<Requirement>, PropertyError> {
    const KIND: &str = "olm.constraint";
    let mut out = Vec::new();
    if let Some(g) = &v.gvk {
        out.push(Requirement::Gvk(Gvk::new(&g.group, &g.version, &g.kind)));
    }
    if let Some(p) = &v.package {
        out.push(Requirement::Package {
            name: p.package_name.clone(),
            range: parse_range(KIND, &p.version_range)?,
        });
    }
    if let Some(all) = &v.all {
        for c in &all.constraints {
            out.extend(constraint(c)?);
        }
    }
    if let Some(any) = &v.any {
        let mut options = Vec::new();
        for c in &any.constraints {
            match constraint(c)?.as_slice() {
                [single] if is_positive(single) => options.push(single.clone()),
                _ => {
                    return Ok(vec![Requirement::Unsupported(
                        "`any` over a compound or negated constraint".into(),
                    )]);
                }
            }
        }
        out.push(Requirement::Any(options));
    }
    if let Some(not) = &v.not {
        let mut options = Vec::new();
        for c in &not.constraints {
            for r in constraint(c)? {
                match r {
                    Requirement::Gvk(_)
                    | Requirement::Package { .. }
                    | Requirement::Label(_)
                    | Requirement::Cel(_) => options.push(r),
                    _ => {
                        return Ok(vec![Requirement::Unsupported(
                            "`not` over a compound constraint".into(),
                        )]);
                    }
                }
            }
        }
        out.push(Requirement::None(options));
    }
    if let Some(cel) = &v.cel {
        let rule = CelRule::compile(&cel.rule).map_err(|reason| PropertyError::Cel {
            kind: KIND.to_owned(),
            rule: cel.rule.clone(),
            reason,
        })?;
        out.push(Requirement::Cel(rule));
    }
    if out.is_empty() {
        return Err(shape(
            KIND,
            "none of gvk, package, all, any, not or cel is set",
        ));
    }
    Ok(out)
}

fn is_positive(r: &Requirement) -> bool {
    match r {
        Requirement::Gvk(_)
        | Requirement::Package { .. }
        | Requirement::Label(_)
        | Requirement::Cel(_) => true,
        Requirement::Any(all) => all.iter().all(is_positive),
        Requirement::None(_) | Requirement::Unsupported(_) => false,
    }
}

/// Legacy registry `dependencies` (`olm.gvk`, `olm.package` with `version`) as the equivalent properties.
pub fn dependency_as_property(type_: &str, value: &serde_json::Value) -> Option<Property> {
    match type_ {
        "olm.gvk" => Some(Property {
            type_: "olm.gvk.required".into(),
            value: value.clone(),
        }),
        "olm.label" => Some(Property {
            type_: "olm.label.required".into(),
            value: value.clone(),
        }),
        "olm.constraint" => Some(Property {
            type_: "olm.constraint".into(),
            value: value.clone(),
        }),
        "olm.package" => {
            let name = value.get("packageName")?.clone();
            let range = value.get("version")?.clone();
            Some(Property {
                type_: "olm.package.required".into(),
                value: serde_json::json!({ "packageName": name, "versionRange": range }),
            })
        }
        _ => None,
    }
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

    fn prop(t: &str, v: serde_json::Value) -> Property {
        Property {
            type_: t.into(),
            value: v,
        }
    }

    #[rstest]
    #[case::a_required_gvk_property_is_an_api_requirement(
        prop("olm.gvk.required", json!({"group":"g","version":"v1","kind":"K"})), "API K (g/v1)")]
    #[case::a_required_package_keeps_its_range(
        prop("olm.package.required", json!({"packageName":"p","versionRange":">2.0.0"})), "package p with version in `>2.0.0`")]
    #[case::an_any_constraint_lists_its_options(
        prop("olm.constraint", json!({"failureMessage":"x","any":{"constraints":[
            {"package":{"packageName":"a","versionRange":">=1.0.0"}},
            {"package":{"packageName":"b","versionRange":">=1.0.0"}}]}})),
        "any of [package a with version in `>=1.0.0`, package b with version in `>=1.0.0`]")]
    #[case::a_not_constraint_forbids(
        prop("olm.constraint", json!({"not":{"constraints":[{"gvk":{"group":"g","version":"v","kind":"K"}}]}})),
        "none of [API K (g/v)]")]
    #[case::a_cel_rule_is_a_predicate_on_properties(
        prop("olm.constraint", json!({"cel":{"rule":"properties.exists(p, p.type == \"certified\")"}})),
        "a bundle whose properties satisfy `properties.exists(p, p.type == \"certified\")`")]
    #[case::a_required_label(
        prop("olm.label.required", json!({"label":"stable"})), "a bundle with label `stable`")]
    #[case::a_label_inside_any(
        prop("olm.constraint", json!({"any":{"constraints":[{"cel":{"rule":"true"}},{"gvk":{"group":"g","version":"v","kind":"K"}}]}})),
        "any of [a bundle whose properties satisfy `true`, API K (g/v)]")]
    fn properties_become_requirements(#[case] p: Property, #[case] expected: &str) {
        let deps = dependencies(&[], &[p]).unwrap();
        assert_eq!(deps.len(), 1);
        assert_eq!(deps[0].requirement.to_string(), expected);
    }

    #[rstest]
    #[case::a_bad_range_names_the_text(
        prop("olm.package.required", json!({"packageName":"p","versionRange":"latest"})),
        "property olm.package.required has an invalid versionRange `latest`: `latest` is not a version: `latest` is not a number")]
    #[case::a_cel_rule_that_does_not_compile_names_the_rule(
        prop("olm.constraint", json!({"cel":{"rule":"properties.exists(p,"}})),
        "property olm.constraint has a CEL rule that does not compile: `properties.exists(p,`")]
    #[case::a_label_without_label_is_a_shape_error(
        prop("olm.label.required", json!({"name":"x"})),
        "property olm.label.required has an unreadable value: missing field `label`")]
    #[case::a_missing_field_is_a_shape_error(
        prop("olm.package.required", json!({"packageName":"p"})),
        "property olm.package.required has an unreadable value: missing field `versionRange`")]
    fn unreadable_properties_are_errors(#[case] p: Property, #[case] expected: &str) {
        let err = dependencies(&[], &[p]).unwrap_err();
        let mut text = err.to_string();
        if let Some(s) = std::error::Error::source(&err) {
            text = format!("{text}: {s}");
        }
        assert!(text.starts_with(expected), "{text}");
    }
}
