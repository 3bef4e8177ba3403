//! The guarantees every resolution must keep, checked from the outside: the namespace after applying the
//! answer provides every required API and package, holds one operator per package and one provider per
//! API, and never installs an entry its channel skips.
#![allow(dead_code, reason = "shared by several test files")]

use std::collections::{HashMap, HashSet};

use resolver::requirement::{self, Requirement};
use resolver::{Gvk, Namespace, Outcome, Property, Resolution};
use semver::Version;

struct Member {
    name: String,
    package: Option<String>,
    version: Version,
    provides: Vec<Gvk>,
    required: Vec<Gvk>,
    properties: Vec<Property>,
}

/// Every broken guarantee, as sentences (empty when all hold).
pub fn violations(ns: &Namespace, r: &Resolution) -> Vec<String> {
    let mut bad = Vec::new();
    let replaced: HashSet<&str> = r
        .subscriptions
        .iter()
        .filter_map(|s| match &s.outcome {
            Outcome::Upgrade { from, .. } => Some(from.as_str()),
            _ => None,
        })
        .collect();
    let mut members: Vec<Member> = ns
        .installed
        .iter()
        .filter(|c| !replaced.contains(c.name.as_str()))
        .filter(|c| !(ns.fail_forward && c.phase == resolver::CsvPhase::Replacing))
        .map(|c| Member {
            name: c.name.clone(),
            package: c.package.clone(),
            version: c.version.clone(),
            provides: c.provided_apis.clone(),
            required: c.required_apis.clone(),
            properties: c.properties.clone(),
        })
        .collect();
    for step in &r.steps {
        let Some(cat) = ns.catalogs.iter().find(|c| c.key == step.catalog) else {
            bad.push(format!(
                "step {} names unknown catalog {}",
                step.name, step.catalog
            ));
            continue;
        };
        let Some(e) = cat
            .bundles
            .iter()
            .find(|b| b.name == step.name && b.channel == step.channel)
        else {
            bad.push(format!(
                "step {} is not in channel {} of {}",
                step.name, step.channel, step.catalog
            ));
            continue;
        };
        if cat
            .bundles
            .iter()
            .any(|o| o.package == e.package && o.channel == e.channel && o.skips.contains(&e.name))
        {
            bad.push(format!(
                "step {} is skipped by another entry of channel {}",
                e.name, e.channel
            ));
        }
        members.push(Member {
            name: e.name.clone(),
            package: Some(e.package.clone()),
            version: e.version.clone(),
            provides: e.provided_apis.clone(),
            required: e.required_apis.clone(),
            properties: e.properties.clone(),
        });
    }
    // Only judge namespaces whose installed state was consistent to begin with: the resolver cannot repair those.
    let mut packages: HashMap<&str, &str> = HashMap::new();
    let mut providers: HashMap<Gvk, &str> = HashMap::new();
    for m in &members {
        if let Some(other) = m
            .package
            .as_deref()
            .and_then(|p| packages.insert(p, &m.name).map(|o| (p, o)))
        {
            bad.push(format!(
                "package {} has two operators: {} and {}",
                other.0, other.1, m.name
            ));
        }
        for g in requirement::provided_apis(&m.provides, &m.properties) {
            if let Some(other) = providers.insert(g.clone(), &m.name) {
                bad.push(format!("API {g} has two providers: {other} and {}", m.name));
            }
        }
    }
    let satisfied = |req: &Requirement| -> bool {
        members.iter().any(|m| match req {
            Requirement::Gvk(g) => requirement::provided_apis(&m.provides, &m.properties)
                .iter()
                .any(|p| {
                    p.group == g.group
                        && p.kind == g.kind
                        && (g.version.is_empty() || p.version == g.version)
                }),
            Requirement::Package { name, range } => {
                m.package.as_deref() == Some(name) && range.contains(&m.version)
            }
            _ => false,
        })
    };
    for m in &members {
        let Ok(deps) = requirement::dependencies(&m.required, &m.properties) else {
            bad.push(format!(
                "{} has unreadable properties yet is in the namespace",
                m.name
            ));
            continue;
        };
        for d in deps {
            let ok = match &d.requirement {
                Requirement::Any(all) => all.iter().any(&satisfied),
                Requirement::None(all) => !all.iter().any(&satisfied),
                Requirement::Unsupported(_) => false,
                r => satisfied(r),
            };
            if !ok {
                bad.push(format!(
                    "{} requires {} but nothing in the namespace satisfies it",
                    m.name, d.requirement
                ));
            }
        }
    }
    bad
}
