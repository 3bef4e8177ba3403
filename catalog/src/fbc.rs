//! File-based catalogs: walking a directory tree (honouring `.indexignore`), reading the
//! `olm.package`, `olm.channel`, `olm.bundle` and `olm.deprecations` documents, and
//! assembling them into the [`Catalog`] model. Structural problems (unknown schema,
//! duplicates, dangling references) are collected as diagnostics, not returned one by one.

use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics, Problem, Scope};
use crate::documents::{Document, is_manifest_file, read_documents};
use crate::error::{LoadError, Result};
use crate::model::{
    Bundle, Catalog, Channel, ChannelEntry, CustomBlob, Icon, Origin, Package, Property,
    RelatedImage,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageDoc {
    name: String,
    #[serde(default)]
    default_channel: String,
    description: Option<String>,
    icon: Option<IconDoc>,
    #[serde(default)]
    properties: Vec<PropertyDoc>,
}

#[derive(Deserialize)]
struct IconDoc {
    #[serde(default)]
    base64data: String,
    #[serde(default)]
    mediatype: String,
}

#[derive(Deserialize)]
struct ChannelDoc {
    package: String,
    name: String,
    #[serde(default)]
    entries: Vec<EntryDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryDoc {
    name: String,
    #[serde(default)]
    replaces: Option<String>,
    #[serde(default)]
    skips: Vec<String>,
    #[serde(default)]
    skip_range: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BundleDoc {
    package: String,
    name: String,
    #[serde(default)]
    image: String,
    #[serde(default)]
    related_images: Vec<RelatedImageDoc>,
    #[serde(default)]
    properties: Vec<PropertyDoc>,
}

#[derive(Deserialize)]
struct RelatedImageDoc {
    #[serde(default)]
    name: String,
    #[serde(default)]
    image: String,
}

#[derive(Deserialize)]
struct PropertyDoc {
    #[serde(rename = "type")]
    type_: String,
    #[serde(default)]
    value: Value,
}

#[derive(Deserialize)]
struct DeprecationsDoc {
    package: String,
    #[serde(default)]
    entries: Vec<DeprecationEntryDoc>,
}

#[derive(Deserialize)]
struct DeprecationEntryDoc {
    reference: ReferenceDoc,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct ReferenceDoc {
    schema: String,
    #[serde(default)]
    name: String,
}

/// The FBC schemas this crate understands, with their wire strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    Package,
    Channel,
    Bundle,
    Deprecations,
}

impl Schema {
    pub fn from_wire(s: &str) -> Option<Schema> {
        match s {
            "olm.package" => Some(Schema::Package),
            "olm.channel" => Some(Schema::Channel),
            "olm.bundle" => Some(Schema::Bundle),
            "olm.deprecations" => Some(Schema::Deprecations),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Schema::Package => "olm.package",
            Schema::Channel => "olm.channel",
            Schema::Bundle => "olm.bundle",
            Schema::Deprecations => "olm.deprecations",
        }
    }
}

/// Lists the catalog files under `root` (or `root` itself if it is a file), sorted,
/// leaving out files matched by `.indexignore` patterns and the `.indexignore` files.
pub fn catalog_files(root: &Path) -> Result<Vec<PathBuf>> {
    if root.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut ignores: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|source| LoadError::Walk {
            path: root.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if entry.file_type().is_dir() {
            let ignore = path.join(".indexignore");
            if ignore.is_file() {
                let text = std::fs::read_to_string(&ignore).map_err(|source| LoadError::Read {
                    path: ignore.clone(),
                    source,
                })?;
                let patterns = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string)
                    .collect();
                ignores.push((path.to_path_buf(), patterns));
            }
            continue;
        }
        if path.file_name().is_some_and(|n| n == ".indexignore") {
            continue;
        }
        let ignored = ignores.iter().any(|(dir, pats)| {
            path.strip_prefix(dir)
                .is_ok_and(|rel| pats.iter().any(|p| ignore_matches(p, rel)))
        });
        if !ignored {
            files.push(path.to_path_buf());
        }
    }
    Ok(files)
}

/// A small gitignore subset: `*`/`?` globs matched against the relative path or any
/// of its components (a pattern with `/` is anchored to the ignore file's folder).
fn ignore_matches(pattern: &str, rel: &Path) -> bool {
    let pattern = pattern.trim_end_matches('/');
    let rel_str = rel.to_string_lossy();
    if let Some(anchored) = pattern.strip_prefix('/') {
        return glob(anchored, &rel_str) || rel_str.starts_with(&format!("{anchored}/"));
    }
    if pattern.contains('/') {
        return glob(pattern, &rel_str) || rel_str.starts_with(&format!("{pattern}/"));
    }
    rel.components()
        .any(|c| glob(pattern, &c.as_os_str().to_string_lossy()))
}

fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

/// Loads an FBC directory (or a single FBC file) into the model. Does not run the
/// semantic checks of [`crate::validate`]; it reports only structural problems.
pub fn load_dir(root: &Path) -> Result<Catalog> {
    let files: Vec<PathBuf> = catalog_files(root)?
        .into_iter()
        .filter(|f| !root.is_dir() || is_manifest_file(f))
        .collect();
    load_files(&files)
}

/// Loads the given FBC files as one catalog (no semantic validation).
pub fn load_files(files: &[PathBuf]) -> Result<Catalog> {
    let mut asm = Assembler::default();
    for parsed in crate::documents::parallel_map(files, |f| parse_file(f)) {
        for p in parsed? {
            asm.accept(p);
        }
    }
    asm.finish()
}

/// The catalog files of `root` grouped by their first folder under it (a file directly in
/// `root` is a group of its own): the usual one-folder-per-package layout, so groups can be
/// loaded one at a time.
pub fn units(root: &Path) -> Result<Vec<Vec<PathBuf>>> {
    let mut groups: std::collections::BTreeMap<PathBuf, Vec<PathBuf>> =
        std::collections::BTreeMap::new();
    for f in catalog_files(root)?
        .into_iter()
        .filter(|f| !root.is_dir() || is_manifest_file(f))
    {
        let key = match f
            .strip_prefix(root)
            .ok()
            .and_then(|rel| rel.components().next())
        {
            Some(first)
                if f.strip_prefix(root)
                    .is_ok_and(|rel| rel.components().count() > 1) =>
            {
                root.join(first)
            }
            _ => f.clone(),
        };
        groups.entry(key).or_default().push(f);
    }
    Ok(groups.into_values().collect())
}

/// Reads the Meta envelope: `schema`, `package`, `name` are matched case-insensitively.
fn meta_field<'a>(doc: &'a Value, key: &str) -> std::result::Result<Option<&'a str>, Problem> {
    let Some(map) = doc.as_object() else {
        return Ok(None);
    };
    let mut found = None;
    let mut count = 0;
    for (k, v) in map {
        if k.eq_ignore_ascii_case(key) {
            count += 1;
            found = v.as_str();
        }
    }
    if count > 1 {
        return Err(Problem::CaseDuplicateKey(key.to_string()));
    }
    Ok(found)
}

/// Builds a catalog from already-parsed FBC documents.
pub fn from_documents(docs: Vec<Document>) -> Result<Catalog> {
    let mut asm = Assembler::default();
    for doc in docs {
        asm.accept(classify(doc));
    }
    asm.finish()
}

/// One FBC document, typed (its JSON tree is dropped as soon as it is converted).
enum Parsed {
    Package(PackageDoc, Origin),
    Channel(Channel, String),
    Bundle(Bundle),
    Deprecations(DeprecationsDoc, Origin),
    Custom(CustomBlob),
    Problem(Diagnostic),
}

fn classify(doc: Document) -> Parsed {
    let Document { origin, value } = doc;
    let problem = |origin: Origin, problem| {
        Parsed::Problem(Diagnostic {
            origin: Some(origin),
            scope: Scope::Document,
            problem,
        })
    };
    let schema = match meta_field(&value, "schema") {
        Ok(Some(s)) => s.to_string(),
        Ok(None) => return problem(origin, Problem::MissingSchema),
        Err(p) => return problem(origin, p),
    };
    for key in ["package", "name"] {
        if let Err(p) = meta_field(&value, key) {
            return problem(origin, p);
        }
    }
    let Some(kind) = Schema::from_wire(&schema) else {
        if schema.starts_with("olm.") {
            return problem(origin, Problem::UnknownSchema(schema));
        }
        let package = meta_field(&value, "package")
            .ok()
            .flatten()
            .unwrap_or_default()
            .to_string();
        return Parsed::Custom(CustomBlob {
            package,
            schema,
            blob: value,
            origin: Some(origin),
        });
    };
    let bad = |e: serde_json::Error| Problem::BadDocument {
        schema: kind.as_str().to_string(),
        message: e.to_string(),
    };
    match kind {
        Schema::Package => match serde_json::from_value::<PackageDoc>(value) {
            Ok(d) => Parsed::Package(d, origin),
            Err(e) => problem(origin, bad(e)),
        },
        Schema::Channel => match serde_json::from_value::<ChannelDoc>(value) {
            Ok(d) => {
                let channel = Channel {
                    name: d.name,
                    entries: d
                        .entries
                        .into_iter()
                        .map(|e| ChannelEntry {
                            name: e.name,
                            replaces: e.replaces.filter(|r| !r.is_empty()),
                            skips: e.skips,
                            skip_range: e.skip_range.filter(|r| !r.is_empty()),
                        })
                        .collect(),
                    deprecation: None,
                    origin: Some(origin),
                };
                Parsed::Channel(channel, d.package)
            }
            Err(e) => problem(origin, bad(e)),
        },
        Schema::Bundle => match serde_json::from_value::<BundleDoc>(value) {
            Ok(d) => Parsed::Bundle(Bundle {
                name: d.name,
                package: d.package,
                image: d.image,
                properties: d
                    .properties
                    .into_iter()
                    .map(|p| Property {
                        type_: p.type_,
                        value: p.value,
                    })
                    .collect(),
                related_images: d
                    .related_images
                    .into_iter()
                    .map(|r| RelatedImage {
                        name: r.name,
                        image: r.image,
                    })
                    .collect(),
                deprecation: None,
                origin: Some(origin),
            }),
            Err(e) => problem(origin, bad(e)),
        },
        Schema::Deprecations => match serde_json::from_value::<DeprecationsDoc>(value) {
            Ok(d) => Parsed::Deprecations(d, origin),
            Err(e) => problem(origin, bad(e)),
        },
    }
}

/// Reads and classifies one file.
fn parse_file(path: &Path) -> Result<Vec<Parsed>> {
    Ok(read_documents(path)?.into_iter().map(classify).collect())
}

#[derive(Default)]
struct Assembler {
    catalog: Catalog,
    channels: Vec<(Channel, String)>,
    bundles: Vec<Bundle>,
    deprecations: Vec<(DeprecationsDoc, Origin)>,
    problems: Vec<Diagnostic>,
}

fn describe(origin: &Option<Origin>) -> String {
    origin
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "another source".into())
}

impl Assembler {
    fn problem(&mut self, origin: &Origin, scope: Scope, problem: Problem) {
        self.problems.push(Diagnostic {
            origin: Some(origin.clone()),
            scope,
            problem,
        });
    }

    fn accept(&mut self, parsed: Parsed) {
        match parsed {
            Parsed::Package(d, origin) => self.add_package(d, origin),
            Parsed::Channel(c, package) => self.channels.push((c, package)),
            Parsed::Bundle(b) => self.bundles.push(b),
            Parsed::Deprecations(d, origin) => self.deprecations.push((d, origin)),
            Parsed::Custom(c) => self.catalog.custom.push(c),
            Parsed::Problem(d) => self.problems.push(d),
        }
    }

    fn add_package(&mut self, d: PackageDoc, origin: Origin) {
        let scope = Scope::Package {
            package: d.name.clone(),
        };
        match self.catalog.packages.entry(d.name.clone()) {
            Entry::Occupied(prev) => {
                let other = describe(&prev.get().origin);
                self.problem(&origin, scope, Problem::DuplicatePackage { other });
            }
            Entry::Vacant(slot) => {
                let mut pkg = Package::new(d.name);
                pkg.default_channel = d.default_channel;
                pkg.description = d.description.filter(|s| !s.is_empty());
                pkg.icon = d.icon.map(|i| Icon {
                    base64data: i.base64data,
                    mediatype: i.mediatype,
                });
                pkg.properties = d
                    .properties
                    .into_iter()
                    .map(|p| Property {
                        type_: p.type_,
                        value: p.value,
                    })
                    .collect();
                pkg.origin = Some(origin);
                slot.insert(pkg);
            }
        }
    }

    fn finish(mut self) -> Result<Catalog> {
        for (channel, package) in std::mem::take(&mut self.channels) {
            let origin = channel.origin.clone();
            let scope = Scope::Channel {
                package: package.clone(),
                channel: channel.name.clone(),
            };
            let problem = match self.catalog.packages.get_mut(&package) {
                None => Some(Problem::UnknownPackage(package)),
                Some(pkg) => match pkg.channels.entry(channel.name.clone()) {
                    Entry::Occupied(prev) => Some(Problem::DuplicateChannel {
                        other: describe(&prev.get().origin),
                    }),
                    Entry::Vacant(slot) => {
                        slot.insert(channel);
                        None
                    }
                },
            };
            if let Some(problem) = problem {
                self.problems.push(Diagnostic {
                    origin,
                    scope,
                    problem,
                });
            }
        }
        for bundle in std::mem::take(&mut self.bundles) {
            let origin = bundle.origin.clone();
            let scope = Scope::Bundle {
                package: bundle.package.clone(),
                bundle: bundle.name.clone(),
            };
            let problem = match self.catalog.packages.get_mut(&bundle.package) {
                None => Some(Problem::UnknownPackage(bundle.package.clone())),
                Some(pkg) => match pkg.bundles.entry(bundle.name.clone()) {
                    Entry::Occupied(prev) => Some(Problem::DuplicateBundle {
                        other: describe(&prev.get().origin),
                    }),
                    Entry::Vacant(slot) => {
                        slot.insert(bundle);
                        None
                    }
                },
            };
            if let Some(problem) = problem {
                self.problems.push(Diagnostic {
                    origin,
                    scope,
                    problem,
                });
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (d, origin) in std::mem::take(&mut self.deprecations) {
            let scope = Scope::Package {
                package: d.package.clone(),
            };
            if !seen.insert(d.package.clone()) {
                self.problem(&origin, scope, Problem::DuplicateDeprecations);
                continue;
            }
            let Some(pkg) = self.catalog.packages.get_mut(&d.package) else {
                self.problem(&origin, scope, Problem::UnknownPackage(d.package.clone()));
                continue;
            };
            let mut problems = Vec::new();
            for e in d.entries {
                if e.message.is_empty() {
                    problems.push(Problem::DeprecationEmptyMessage);
                    continue;
                }
                let target = match e.reference.schema.as_str() {
                    "olm.package" if e.reference.name.is_empty() => Some(&mut pkg.deprecation),
                    "olm.channel" => pkg
                        .channels
                        .get_mut(&e.reference.name)
                        .map(|c| &mut c.deprecation),
                    "olm.bundle" => pkg
                        .bundles
                        .get_mut(&e.reference.name)
                        .map(|b| &mut b.deprecation),
                    _ => None,
                };
                match target {
                    Some(slot) => *slot = Some(e.message),
                    None => problems.push(Problem::DeprecationUnknownRef {
                        schema: e.reference.schema,
                        name: e.reference.name,
                    }),
                }
            }
            for p in problems {
                self.problem(
                    &origin,
                    Scope::Package {
                        package: d.package.clone(),
                    },
                    p,
                );
            }
        }
        if self.problems.is_empty() {
            Ok(self.catalog)
        } else {
            Err(LoadError::Invalid(Diagnostics(self.problems)))
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain_name_matches_anywhere("*.md", "sub/README.md", true)]
    #[case::folder_name_matches_its_files("drafts", "drafts/a.yaml", true)]
    #[case::anchored_pattern_only_at_root("/x.yaml", "sub/x.yaml", false)]
    #[case::unrelated_file_is_kept("*.md", "catalog.yaml", false)]
    fn indexignore_patterns_select_files(#[case] pat: &str, #[case] rel: &str, #[case] want: bool) {
        assert_eq!(ignore_matches(pat, Path::new(rel)), want);
    }
}
