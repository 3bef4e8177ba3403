//! The universe of choices for one namespace: every installed CSV and every (non-skipped) catalog
//! entry becomes a variable, with indexes by provided API and by package in OLM's preference order.
//!
//! Preference order of dependency providers (OLM `sortableSnapshots` + `sortBundles`): installed CSVs
//! first, then the depending bundle's own catalog, then higher catalog priority, then catalogs in the
//! resolving namespace, then catalog name; inside a catalog: default channel first, then package name,
//! channel name, and position in the replacement chain (head first).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use semver::Version;

use crate::channel::{self, ChannelError};
use crate::explain::BundleRef;
use crate::model::{BundleEntry, CatalogKey, CatalogSnapshot, CsvPhase, Gvk, Namespace, Property};
use crate::range::VersionRange;
use crate::requirement::{self, Dependency, Requirement};

pub(crate) type VarId = u32;

/// Where a variable comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The namespace's virtual `@existing` catalog (index into `Namespace::installed`).
    Installed(usize),
    /// A catalog (index into `Problem::catalogs`) and an entry of it.
    Catalog { catalog: usize, entry: usize },
}

#[derive(Debug)]
pub(crate) struct Var {
    pub name: String,
    pub package: Option<String>,
    pub channel: Option<String>,
    pub version: Version,
    pub source: Source,
    pub provides: Vec<Gvk>,
    pub deps: Vec<Dependency>,
    /// Why this variable can never be chosen, if its properties are unreadable.
    pub invalid: Option<String>,
    pub deprecated: bool,
    pub replaces: Option<String>,
    pub skips: Vec<String>,
    pub skip_range: Option<VersionRange>,
    /// Position in the global preference order (lower is preferred).
    pub rank: u32,
}

/// Key of one channel of one package in one catalog.
pub(crate) type ChannelKey = (usize, String, String);

pub(crate) struct Problem<'a> {
    pub ns: &'a Namespace,
    /// Visible catalogs, in preference order.
    pub catalogs: Vec<&'a CatalogSnapshot>,
    pub vars: Vec<Var>,
    pub by_gvk: HashMap<Gvk, Vec<VarId>>,
    pub by_package: HashMap<String, Vec<VarId>>,
    /// Catalog variables of each channel, head first.
    pub channels: HashMap<ChannelKey, Vec<VarId>>,
    pub channel_errors: HashMap<ChannelKey, ChannelError>,
    /// Names of entries left out of each channel because another entry skips them.
    pub skipped: HashMap<ChannelKey, Vec<String>>,
    pub default_channel: HashMap<(usize, String), String>,
    /// Installed CSV name -> variable (absent when fail-forward hides it).
    pub installed: HashMap<String, VarId>,
    pub warnings: Vec<String>,
}

impl<'a> Problem<'a> {
    pub fn build(ns: &'a Namespace) -> Self {
        let mut catalogs: Vec<&CatalogSnapshot> = ns.catalogs.iter().collect();
        catalogs.sort_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then_with(|| (a.key.namespace != ns.name).cmp(&(b.key.namespace != ns.name)))
                .then_with(|| a.key.name.cmp(&b.key.name))
                .then_with(|| a.key.namespace.cmp(&b.key.namespace))
        });
        let mut p = Problem {
            ns,
            catalogs,
            vars: Vec::new(),
            by_gvk: HashMap::new(),
            by_package: HashMap::new(),
            channels: HashMap::new(),
            channel_errors: HashMap::new(),
            skipped: HashMap::new(),
            default_channel: HashMap::new(),
            installed: HashMap::new(),
            warnings: Vec::new(),
        };
        p.add_installed();
        for c in 0..p.catalogs.len() {
            p.add_catalog(c);
        }
        p
    }

    fn push(&mut self, mut var: Var) -> VarId {
        let id = self.vars.len() as VarId;
        var.rank = id;
        for g in &var.provides {
            self.by_gvk.entry(g.clone()).or_default().push(id);
        }
        if let Some(pkg) = &var.package {
            self.by_package.entry(pkg.clone()).or_default().push(id);
        }
        self.vars.push(var);
        id
    }

    fn add_installed(&mut self) {
        let ns = self.ns;
        let hidden = fail_forward_hidden(ns);
        let mut order: Vec<usize> = (0..ns.installed.len()).collect();
        order.sort_by(|&a, &b| ns.installed[a].name.cmp(&ns.installed[b].name));
        for i in order {
            let csv = &ns.installed[i];
            if hidden.contains(csv.name.as_str()) {
                continue;
            }
            let package = csv.package.clone().or_else(|| {
                let mut pkgs: Vec<&str> = ns
                    .subscriptions
                    .iter()
                    .filter(|s| s.installed_csv.as_deref() == Some(csv.name.as_str()))
                    .map(|s| s.package.as_str())
                    .collect();
                pkgs.dedup();
                match pkgs.as_slice() {
                    [one] => Some((*one).to_owned()),
                    _ => None,
                }
            });
            let (deps, invalid) =
                match requirement::dependencies(&csv.required_apis, &csv.properties) {
                    Ok(d) => (d, None),
                    Err(e) => (Vec::new(), Some(error_chain(&e))),
                };
            let id = self.push(Var {
                name: csv.name.clone(),
                package,
                channel: None,
                version: csv.version.clone(),
                source: Source::Installed(i),
                provides: requirement::provided_apis(&csv.provided_apis, &csv.properties),
                deps,
                invalid,
                deprecated: false,
                replaces: csv.replaces.clone(),
                skips: Vec::new(),
                skip_range: None,
                rank: 0,
            });
            self.installed.insert(csv.name.clone(), id);
        }
    }

    fn add_catalog(&mut self, c: usize) {
        let cat = self.catalogs[c];
        for pkg in &cat.packages {
            self.default_channel
                .insert((c, pkg.name.clone()), pkg.default_channel.clone());
        }
        let mut groups: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (i, e) in cat.bundles.iter().enumerate() {
            groups
                .entry((e.package.as_str(), e.channel.as_str()))
                .or_default()
                .push(i);
        }
        let mut keys: Vec<(&str, &str)> = groups.keys().copied().collect();
        keys.sort_by(|a, b| {
            let default_a = self
                .default_channel
                .get(&(c, a.0.to_owned()))
                .is_some_and(|d| d == a.1);
            let default_b = self
                .default_channel
                .get(&(c, b.0.to_owned()))
                .is_some_and(|d| d == b.1);
            default_b.cmp(&default_a).then_with(|| a.cmp(b))
        });
        for (package, channel_name) in keys {
            let idx = &groups[&(package, channel_name)];
            let entries: Vec<&BundleEntry> = idx.iter().map(|&i| &cat.bundles[i]).collect();
            let ord = channel::order(&entries);
            let key: ChannelKey = (c, package.to_owned(), channel_name.to_owned());
            if let Some(err) = ord.error {
                self.channel_errors.insert(key.clone(), err);
            }
            self.skipped.insert(
                key.clone(),
                ord.skipped
                    .iter()
                    .map(|&k| entries[k].name.clone())
                    .collect(),
            );
            let mut ids = Vec::with_capacity(ord.order.len());
            for k in ord.order {
                let e = entries[k];
                let var = self.catalog_var(c, idx[k], e);
                ids.push(self.push(var));
            }
            self.channels.insert(key, ids);
        }
    }

    fn catalog_var(&mut self, c: usize, entry: usize, e: &BundleEntry) -> Var {
        let cat_key = &self.catalogs[c].key;
        let skip_range = e.skip_range.as_deref().filter(|s| !s.trim().is_empty()).and_then(|text| match VersionRange::parse(text) {
            Ok(r) => Some(r),
            Err(err) => {
                self.warnings.push(format!(
                    "bundle {} in catalog {cat_key} has an unparseable olm.skipRange `{text}` ({err}); it is ignored, as OLM does",
                    e.name
                ));
                None
            }
        });
        let deprecated = e.deprecated || e.properties.iter().any(|p| p.type_ == "olm.deprecated");
        let (deps, invalid) = match requirement::dependencies(&e.required_apis, &e.properties) {
            Ok(d) => (d, None),
            Err(err) => (Vec::new(), Some(error_chain(&err))),
        };
        Var {
            name: e.name.clone(),
            package: Some(e.package.clone()),
            channel: Some(e.channel.clone()),
            version: e.version.clone(),
            source: Source::Catalog { catalog: c, entry },
            provides: requirement::provided_apis(&e.provided_apis, &e.properties),
            deps,
            invalid,
            deprecated,
            replaces: e.replaces.clone(),
            skips: e.skips.clone(),
            skip_range,
            rank: 0,
        }
    }

    /// The properties of a variable's bundle (catalog entry or installed CSV).
    pub fn properties(&self, v: VarId) -> &'a [Property] {
        match self.vars[v as usize].source {
            Source::Installed(i) => &self.ns.installed[i].properties,
            Source::Catalog { catalog, entry } => self.catalogs[catalog]
                .bundles
                .get(entry)
                .map_or(&[], |e| e.properties.as_slice()),
        }
    }

    /// The properties a CEL rule sees for `v`: its bundle's, and an `olm.gvk` for each API it provides that no
    /// `olm.gvk` property names (a catalog snapshot may keep provided APIs in `provided_apis` only).
    pub fn cel_properties(&self, v: VarId) -> std::borrow::Cow<'a, [Property]> {
        let own = self.properties(v);
        let named = |g: &Gvk| {
            own.iter().any(|p| {
                p.type_ == "olm.gvk"
                    && p.value.get("group").and_then(serde_json::Value::as_str)
                        == Some(g.group.as_str())
                    && p.value.get("version").and_then(serde_json::Value::as_str)
                        == Some(g.version.as_str())
                    && p.value.get("kind").and_then(serde_json::Value::as_str)
                        == Some(g.kind.as_str())
            })
        };
        let missing: Vec<Property> = self.vars[v as usize]
            .provides
            .iter()
            .filter(|g| !named(g))
            .map(|g| Property {
                type_: "olm.gvk".into(),
                value: gvk_value(g),
            })
            .collect();
        if missing.is_empty() {
            std::borrow::Cow::Borrowed(own)
        } else {
            std::borrow::Cow::Owned(own.iter().cloned().chain(missing).collect())
        }
    }

    pub fn catalog_index(&self, key: &CatalogKey) -> Option<usize> {
        self.catalogs.iter().position(|c| &c.key == key)
    }

    pub fn catalog_of(&self, v: VarId) -> Option<usize> {
        match self.vars[v as usize].source {
            Source::Installed(_) => None,
            Source::Catalog { catalog, .. } => Some(catalog),
        }
    }

    pub fn entry(&self, v: VarId) -> Option<&'a BundleEntry> {
        match self.vars[v as usize].source {
            Source::Installed(_) => None,
            Source::Catalog { catalog, entry } => self.catalogs[catalog].bundles.get(entry),
        }
    }

    pub fn bundle_ref(&self, v: VarId) -> BundleRef {
        let var = &self.vars[v as usize];
        BundleRef {
            name: var.name.clone(),
            package: var.package.clone(),
            version: var.version.to_string(),
            channel: var.channel.clone(),
            catalog: self.catalog_of(v).map(|c| self.catalogs[c].key.clone()),
        }
    }

    /// Channels of `package` in catalog `c` a Subscription to `channel` reads: that one, or (empty) all,
    /// default channel first then by name.
    pub fn sub_channels(&self, c: usize, package: &str, channel: &str) -> Vec<ChannelKey> {
        if !channel.is_empty() {
            return vec![(c, package.to_owned(), channel.to_owned())];
        }
        let default = self.default_channel.get(&(c, package.to_owned()));
        let mut keys: Vec<ChannelKey> = self
            .channels
            .keys()
            .filter(|k| k.0 == c && k.1 == package)
            .cloned()
            .collect();
        keys.sort_by(|a, b| {
            (Some(&b.2) == default)
                .cmp(&(Some(&a.2) == default))
                .then_with(|| a.2.cmp(&b.2))
        });
        keys
    }

    /// Providers of one positive requirement of `dependent`, most preferred first.
    pub fn providers(&self, dependent: VarId, req: &Requirement) -> Vec<VarId> {
        let mut out = Vec::new();
        self.collect(req, &mut out);
        let mut seen = HashSet::new();
        out.retain(|v| seen.insert(*v) && *v != dependent);
        let own = self.catalog_of(dependent);
        let tier = |v: VarId| match self.catalog_of(v) {
            None => 0u8,
            Some(c) if Some(c) == own => 1,
            Some(_) => 2,
        };
        if !matches!(req, Requirement::Any(_)) {
            out.sort_by_key(|&v| (tier(v), self.vars[v as usize].rank));
        }
        out
    }

    /// Variables matching a positive requirement (also used for `None` lists).
    pub fn collect(&self, req: &Requirement, out: &mut Vec<VarId>) {
        match req {
            Requirement::Gvk(g) if g.version.is_empty() => {
                let mut found: Vec<VarId> = self
                    .by_gvk
                    .iter()
                    .filter(|(k, _)| k.group == g.group && k.kind == g.kind)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                found.sort_by_key(|&v| self.vars[v as usize].rank);
                out.extend(found);
            }
            Requirement::Gvk(g) => out.extend(self.by_gvk.get(g).into_iter().flatten().copied()),
            Requirement::Package { name, range } => out.extend(
                self.by_package
                    .get(name)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|&v| range.contains(&self.vars[v as usize].version)),
            ),
            Requirement::Label(label) => out.extend(
                (0..self.vars.len() as VarId).filter(|&v| has_label(self.properties(v), label)),
            ),
            Requirement::Cel(rule) => out.extend(
                (0..self.vars.len() as VarId).filter(|&v| rule.matches(&self.cel_properties(v))),
            ),
            Requirement::Any(all) | Requirement::None(all) => {
                for r in all {
                    self.collect(r, out);
                }
            }
            Requirement::Unsupported(_) => {}
        }
    }

    /// The ordered provider lists of every positive dependency of `v` (cached by the caller).
    pub fn dependency_options(&self, v: VarId) -> Rc<[Rc<[VarId]>]> {
        self.vars[v as usize]
            .deps
            .iter()
            .map(|d| match &d.requirement {
                Requirement::None(_) => Rc::from(Vec::new()),
                r => Rc::from(self.providers(v, r)),
            })
            .collect()
    }
}

/// An `olm.gvk` property's value: `{"group", "version", "kind"}`.
fn gvk_value(g: &Gvk) -> serde_json::Value {
    #[derive(serde::Serialize)]
    struct GvkValue<'a> {
        group: &'a str,
        version: &'a str,
        kind: &'a str,
    }
    serde_json::to_value(GvkValue {
        group: &g.group,
        version: &g.version,
        kind: &g.kind,
    })
    .unwrap_or_default()
}

/// OLM's `LabelPredicate`: an `olm.label` property whose `label` is `label`.
fn has_label(properties: &[Property], label: &str) -> bool {
    properties.iter().any(|p| {
        p.type_ == "olm.label"
            && p.value.get("label").and_then(serde_json::Value::as_str) == Some(label)
    })
}

/// Installed CSVs hidden by fail-forward: `Replacing` ones whose replacement chain ends in a `Failed` CSV.
fn fail_forward_hidden(ns: &Namespace) -> HashSet<&str> {
    let mut hidden = HashSet::new();
    if !ns.fail_forward {
        return hidden;
    }
    let replaced_by: HashMap<&str, &crate::model::InstalledOperator> = ns
        .installed
        .iter()
        .filter_map(|c| c.replaces.as_deref().map(|r| (r, c)))
        .collect();
    for csv in ns
        .installed
        .iter()
        .filter(|c| c.phase == CsvPhase::Replacing)
    {
        let mut cur = csv;
        let mut seen = HashSet::new();
        let mut ok = true;
        while let Some(next) = replaced_by.get(cur.name.as_str()) {
            if cur.phase != CsvPhase::Replacing || !seen.insert(cur.name.as_str()) {
                ok = false;
                break;
            }
            cur = next;
        }
        if ok && cur.phase == CsvPhase::Failed {
            hidden.insert(csv.name.as_str());
        }
    }
    hidden
}

/// An error and its sources as one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        text.push_str(": ");
        text.push_str(&s.to_string());
        cur = s.source();
    }
    text
}
