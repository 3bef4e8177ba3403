//! The compact, read-only index a registry serves from, built once from a [`catalog::Catalog`].
//!
//! Unlike `opm serve`, which stores a full wire `Bundle` per (package, channel, bundle), each
//! bundle is stored once; channel entries keep only their edges and point at the bundle.
//! Property values are pre-encoded as opm's canonical JSON, manifests as JSON strings, and the
//! wire `Bundle` is assembled per request.

use std::collections::HashMap;

use catalog::property::{self, PropertyType};
use catalog::{Catalog, csv_json};

use crate::api;
use crate::bodies::{Bodies, BodyError, BodyMode, BodyRef, BodyWriter};

/// Group, version, kind (plural is never stored: opm leaves it empty).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Gvk {
    pub group: Box<str>,
    pub version: Box<str>,
    pub kind: Box<str>,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    fn to_wire(&self) -> api::GroupVersionKind {
        api::GroupVersionKind {
            group: self.group.to_string(),
            version: self.version.to_string(),
            kind: self.kind.to_string(),
            plural: String::new(),
        }
    }
}

impl std::fmt::Display for Gvk {
    /// The Go `%v` shape opm prints in its errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group:{:?} version:{:?} kind:{:?}",
            self.group, self.version, self.kind
        )
    }
}

/// Where a bundle's `csvJson` comes from.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum CsvSource {
    None,
    /// The object at this index in `objects`.
    Object(usize),
    /// Built from `olm.csv.metadata`, split where the package icon goes (stored once per package).
    Built {
        before_icon: BodyRef,
        after_icon: Option<BodyRef>,
    },
}

/// Marks where the icon goes in a built CSV; serialized as `"\u0000icon\u0000"`.
const ICON_MARK: &str = "\u{0}icon\u{0}";

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredBundle {
    pub name: Box<str>,
    pub package: u32,
    pub version: Box<str>,
    /// Parsed version, used to pick among several matches deterministically.
    pub semver: Option<semver::Version>,
    pub bundle_path: Box<str>,
    pub provided: Box<[Gvk]>,
    pub required: Box<[Gvk]>,
    dependencies: Box<[(Box<str>, Box<str>)]>,
    properties: Box<[(Box<str>, Box<str>)]>,
    objects: Box<[BodyRef]>,
    csv: CsvSource,
    pub deprecation: Option<Box<str>>,
}

/// A channel entry: the bundle and its edges in this channel.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredEntry {
    pub bundle: u32,
    pub replaces: Option<Box<str>>,
    pub skips: Box<[Box<str>]>,
    pub skip_range: Option<Box<str>>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredChannel {
    pub name: Box<str>,
    /// Index into `entries` of the channel head.
    pub head: usize,
    /// Sorted by bundle name.
    pub entries: Box<[StoredEntry]>,
    pub deprecation: Option<Box<str>>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredPackage {
    pub name: Box<str>,
    /// The `spec.icon` JSON of CSVs built from `olm.csv.metadata`.
    icon_json: Box<str>,
    pub default_channel: Box<str>,
    pub deprecation: Option<Box<str>>,
    /// Sorted by name.
    pub channels: Box<[StoredChannel]>,
}

type CustomKey = (Box<str>, Box<str>);

/// The whole index.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Store {
    packages: Vec<StoredPackage>,
    bundles: Vec<StoredBundle>,
    /// (package, channel, entry) in ListBundles order: (channel, package, bundle name).
    list_order: Vec<(u32, u32, u32)>,
    /// Custom-schema blobs as compact JSON, by (schema, package).
    custom: HashMap<CustomKey, Vec<Box<str>>>,
    #[serde(skip)]
    bodies: Bodies,
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error(transparent)]
    Load(#[from] catalog::LoadError),
    #[error("cannot build the index")]
    Build(#[from] BuildError),
    #[error("cannot write {}", .path.display())]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {}", .path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode the index")]
    Encode(#[from] rmp_serde::encode::Error),
    #[error("cannot decode the index in {}", .path.display())]
    Decode {
        path: std::path::PathBuf,
        #[source]
        source: rmp_serde::decode::Error,
    },
}

/// Builds a [`Store`] from one or more catalogs added in turn, so a loader can drop each
/// part's model as soon as it is indexed (the packages of all parts must be distinct).
pub struct StoreBuilder {
    store: Store,
    bodies: BodyWriter,
}

impl StoreBuilder {
    pub fn new(bodies: BodyWriter) -> Self {
        StoreBuilder {
            store: Store::default(),
            bodies,
        }
    }

    pub fn add(&mut self, catalog: Catalog) -> Result<(), BuildError> {
        let store = &mut self.store;
        let Catalog {
            packages,
            custom,
            notes: _,
        } = catalog;
        for (_, pkg) in packages {
            if store.packages.iter().any(|p| *p.name == *pkg.name) {
                return Err(BuildError::DuplicatePackage(pkg.name));
            }
            let pkg_index = store.packages.len() as u32;
            let mut bundle_ids: HashMap<String, u32> = HashMap::new();
            for b in pkg.bundles.values() {
                bundle_ids.insert(b.name.clone(), store.bundles.len() as u32);
                store
                    .bundles
                    .push(stored_bundle(&pkg, b, pkg_index, &mut self.bodies)?);
            }
            let mut channels = Vec::new();
            for ch in pkg.channels.values() {
                let head_name =
                    ch.head()
                        .map(|h| h.name.clone())
                        .ok_or_else(|| BuildError::NoHead {
                            package: pkg.name.clone(),
                            channel: ch.name.clone(),
                        })?;
                let mut entries = Vec::new();
                for e in &ch.entries {
                    let bundle =
                        *bundle_ids
                            .get(&e.name)
                            .ok_or_else(|| BuildError::MissingBundle {
                                package: pkg.name.clone(),
                                channel: ch.name.clone(),
                                entry: e.name.clone(),
                            })?;
                    entries.push(StoredEntry {
                        bundle,
                        replaces: boxed(&e.replaces),
                        skips: e.skips.iter().map(|s| s.as_str().into()).collect(),
                        skip_range: boxed(&e.skip_range),
                    });
                }
                entries.sort_by(|a, b| {
                    store.bundles[a.bundle as usize]
                        .name
                        .cmp(&store.bundles[b.bundle as usize].name)
                });
                let head = entries
                    .iter()
                    .position(|e| *store.bundles[e.bundle as usize].name == *head_name)
                    .unwrap_or_default();
                channels.push(StoredChannel {
                    name: ch.name.as_str().into(),
                    head,
                    entries: entries.into(),
                    deprecation: boxed(&ch.deprecation),
                });
            }
            let icon_json = match &pkg.icon {
                Some(i) => {
                    serde_json::json!([{ "base64data": i.base64data, "mediatype": i.mediatype }])
                        .to_string()
                }
                None => String::new(),
            };
            store.packages.push(StoredPackage {
                name: pkg.name.as_str().into(),
                icon_json: icon_json.into(),
                default_channel: pkg.default_channel.as_str().into(),
                deprecation: boxed(&pkg.deprecation),
                channels: channels.into(),
            });
        }
        for blob in custom {
            let key = (
                Box::from(blob.schema.as_str()),
                Box::from(blob.package.as_str()),
            );
            store
                .custom
                .entry(key)
                .or_default()
                .push(blob.blob.to_string().into());
        }
        Ok(())
    }

    /// Sorts packages by name and computes the ListBundles order.
    pub fn finish(self) -> Result<Store, BuildError> {
        let StoreBuilder { mut store, bodies } = self;
        let mut by_name: Vec<u32> = (0..store.packages.len() as u32).collect();
        by_name.sort_by(|a, b| {
            store.packages[*a as usize]
                .name
                .cmp(&store.packages[*b as usize].name)
        });
        let mut new_index = vec![0u32; by_name.len()];
        for (new, old) in by_name.iter().enumerate() {
            new_index[*old as usize] = new as u32;
        }
        for b in &mut store.bundles {
            b.package = new_index[b.package as usize];
        }
        let mut slots: Vec<Option<StoredPackage>> = std::mem::take(&mut store.packages)
            .into_iter()
            .map(Some)
            .collect();
        store.packages = by_name
            .iter()
            .filter_map(|old| slots[*old as usize].take())
            .collect();
        let mut order = Vec::new();
        for (pi, p) in store.packages.iter().enumerate() {
            for (ci, c) in p.channels.iter().enumerate() {
                for ei in 0..c.entries.len() {
                    order.push((pi as u32, ci as u32, ei as u32));
                }
            }
        }
        order.sort_by(|a, b| {
            let key = |(p, c, e): &(u32, u32, u32)| {
                let pkg = &store.packages[*p as usize];
                let ch = &pkg.channels[*c as usize];
                (
                    &*ch.name,
                    &*pkg.name,
                    &*store.bundles[ch.entries[*e as usize].bundle as usize].name,
                )
            };
            key(a).cmp(&key(b))
        });
        store.list_order = order;
        store.bodies = bodies.finish()?;
        Ok(store)
    }
}

/// File names inside a cache directory.
pub const CACHE_INDEX: &str = "index.msgpack";
pub const CACHE_BODIES: &str = "bodies";

impl Store {
    /// Builds the index of `catalog` into `dir` (`index.msgpack` + `bodies`), like `opm serve --cache-only`.
    pub fn write_cache(catalog: Catalog, dir: &std::path::Path) -> Result<(), CacheError> {
        let bodies_path = dir.join(CACHE_BODIES);
        let writer = BodyWriter::to_path(&bodies_path)
            .map_err(|e| CacheError::Build(BuildError::Bodies(e)))?;
        let store = Store::build_into(catalog, writer).map_err(CacheError::Build)?;
        let index_path = dir.join(CACHE_INDEX);
        let file = std::fs::File::create(&index_path).map_err(|source| CacheError::Write {
            path: index_path.clone(),
            source,
        })?;
        let mut w = std::io::BufWriter::new(file);
        rmp_serde::encode::write(&mut w, &store)?;
        std::io::Write::flush(&mut w).map_err(|source| CacheError::Write {
            path: index_path,
            source,
        })?;
        Ok(())
    }

    /// Like [`Store::write_cache`], but the catalog comes in parts from `next_part`, each
    /// indexed and dropped before the next is loaded (bounds the loader's peak memory).
    pub fn write_cache_parts(
        dir: &std::path::Path,
        mut next_part: impl FnMut() -> Option<Result<Catalog, CacheError>>,
    ) -> Result<(), CacheError> {
        let bodies_path = dir.join(CACHE_BODIES);
        let writer = BodyWriter::to_path(&bodies_path)
            .map_err(|e| CacheError::Build(BuildError::Bodies(e)))?;
        let mut builder = StoreBuilder::new(writer);
        while let Some(part) = next_part() {
            builder.add(part?)?;
        }
        let store = builder.finish()?;
        let index_path = dir.join(CACHE_INDEX);
        let file = std::fs::File::create(&index_path).map_err(|source| CacheError::Write {
            path: index_path.clone(),
            source,
        })?;
        let mut w = std::io::BufWriter::new(file);
        rmp_serde::encode::write(&mut w, &store)?;
        std::io::Write::flush(&mut w).map_err(|source| CacheError::Write {
            path: index_path,
            source,
        })?;
        Ok(())
    }

    /// Opens a cache written by [`Store::write_cache`]; with `remove`, its files are unlinked
    /// once open (the bodies stay readable through the open file).
    pub fn open_cache(
        dir: &std::path::Path,
        mode: BodyMode,
        remove: bool,
    ) -> Result<Store, CacheError> {
        let index_path = dir.join(CACHE_INDEX);
        let read_err = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| CacheError::Read { path, source }
        };
        let file = std::fs::File::open(&index_path).map_err(read_err(&index_path))?;
        let mut store: Store = rmp_serde::decode::from_read(std::io::BufReader::new(file))
            .map_err(|source| CacheError::Decode {
                path: dir.to_path_buf(),
                source,
            })?;
        let bodies_path = dir.join(CACHE_BODIES);
        store.bodies = match mode {
            BodyMode::Memory => {
                Bodies::Memory(std::fs::read(&bodies_path).map_err(read_err(&bodies_path))?)
            }
            BodyMode::Disk => {
                Bodies::File(std::fs::File::open(&bodies_path).map_err(read_err(&bodies_path))?)
            }
        };
        if remove {
            for p in [&index_path, &bodies_path] {
                std::fs::remove_file(p).map_err(read_err(p))?;
            }
            std::fs::remove_dir(dir).map_err(read_err(dir))?;
        }
        Ok(store)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("package {0:?} is defined by more than one catalog part")]
    DuplicatePackage(String),
    #[error("cannot store bundle bodies")]
    Bodies(#[from] BodyError),
    #[error("package {package:?}, channel {channel:?} has no single head")]
    NoHead { package: String, channel: String },
    #[error("package {package:?}, channel {channel:?}: entry {entry:?} has no bundle")]
    MissingBundle {
        package: String,
        channel: String,
        entry: String,
    },
}

fn boxed(s: &Option<String>) -> Option<Box<str>> {
    s.as_deref().map(Into::into)
}

impl Store {
    /// Builds the index. The catalog should have passed validation; a channel without a
    /// single head or an entry without a bundle is still an error here.
    pub fn build(catalog: Catalog) -> Result<Store, BuildError> {
        Store::build_with(catalog, BodyMode::Memory)
    }

    /// Builds the index keeping bodies as `mode` says (disk: an unlinked file in the temp dir).
    pub fn build_with(catalog: Catalog, mode: BodyMode) -> Result<Store, BuildError> {
        Store::build_into(catalog, BodyWriter::new(mode, &std::env::temp_dir())?)
    }

    /// Builds the index, appending bodies to `bodies`.
    pub fn build_into(catalog: Catalog, bodies: BodyWriter) -> Result<Store, BuildError> {
        let mut builder = StoreBuilder::new(bodies);
        builder.add(catalog)?;
        builder.finish()
    }

    pub fn packages(&self) -> &[StoredPackage] {
        &self.packages
    }

    pub fn package(&self, name: &str) -> Option<&StoredPackage> {
        self.packages
            .binary_search_by(|p| (*p.name).cmp(name))
            .ok()
            .map(|i| &self.packages[i])
    }

    pub fn bundle(&self, id: u32) -> &StoredBundle {
        &self.bundles[id as usize]
    }

    pub fn bundle_count(&self) -> usize {
        self.bundles.len()
    }

    pub fn list_order(&self) -> &[(u32, u32, u32)] {
        &self.list_order
    }

    /// Custom-schema blobs for (schema, package), as the `google.protobuf.Struct`s they are served as.
    pub fn custom(&self, schema: &str, package: &str) -> Vec<prost_types::Struct> {
        self.custom
            .get(&(Box::from(schema), Box::from(package)))
            .into_iter()
            .flatten()
            .filter_map(|b| serde_json::from_str::<serde_json::Value>(b).ok())
            .map(|v| to_struct(&v))
            .collect()
    }

    /// The wire bundle for `entry` of `channel` in `pkg`.
    /// `trimmed` clears `replaces`/`skips` (GetBundle and friends); `light` clears `csvJson`
    /// and `object` when the bundle has an image (ListBundles).
    pub fn wire_bundle(
        &self,
        pkg: &StoredPackage,
        channel: &StoredChannel,
        entry: &StoredEntry,
        trimmed: bool,
        light: bool,
    ) -> Result<api::Bundle, BodyError> {
        let b = self.bundle(entry.bundle);
        let send_bodies = !light || b.bundle_path.is_empty();
        let csv_json = match (&b.csv, send_bodies) {
            (_, false) | (CsvSource::None, _) => String::new(),
            (CsvSource::Object(i), true) => match b.objects.get(*i) {
                Some(r) => self.bodies.read(*r)?,
                None => String::new(),
            },
            (
                CsvSource::Built {
                    before_icon,
                    after_icon,
                },
                true,
            ) => {
                let mut s = self.bodies.read(*before_icon)?;
                if let Some(after) = after_icon {
                    s.push_str(&pkg.icon_json);
                    s.push_str(&self.bodies.read(*after)?);
                }
                s
            }
        };
        let object = if !send_bodies {
            Vec::new()
        } else if b.objects.is_empty() && !csv_json.is_empty() {
            vec![csv_json.clone()]
        } else {
            b.objects
                .iter()
                .map(|o| self.bodies.read(*o))
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(api::Bundle {
            csv_name: b.name.to_string(),
            package_name: pkg.name.to_string(),
            channel_name: channel.name.to_string(),
            csv_json,
            object,
            bundle_path: b.bundle_path.to_string(),
            provided_apis: b.provided.iter().map(Gvk::to_wire).collect(),
            required_apis: b.required.iter().map(Gvk::to_wire).collect(),
            version: b.version.to_string(),
            skip_range: entry.skip_range.as_deref().unwrap_or_default().to_string(),
            dependencies: b
                .dependencies
                .iter()
                .map(|(t, v)| api::Dependency {
                    r#type: t.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            properties: b
                .properties
                .iter()
                .map(|(t, v)| api::Property {
                    r#type: t.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            replaces: if trimmed {
                String::new()
            } else {
                entry.replaces.as_deref().unwrap_or_default().to_string()
            },
            skips: if trimmed {
                Vec::new()
            } else {
                entry.skips.iter().map(|s| s.to_string()).collect()
            },
            deprecation: b.deprecation.as_ref().map(|m| api::Deprecation {
                message: m.to_string(),
            }),
        })
    }

    /// Approximate heap bytes held by the strings of the index (for the benchmark).
    pub fn approx_bytes(&self) -> usize {
        self.bundles
            .iter()
            .map(|b| {
                b.objects.iter().map(|o| o.len()).sum::<usize>()
                    + b.properties
                        .iter()
                        .map(|(t, v)| t.len() + v.len())
                        .sum::<usize>()
                    + match &b.csv {
                        CsvSource::Built {
                            before_icon,
                            after_icon,
                        } => before_icon.len() + after_icon.map_or(0, BodyRef::len),
                        CsvSource::None | CsvSource::Object(_) => 0,
                    }
            })
            .sum()
    }
}

impl StoredChannel {
    pub fn entry(&self, store: &Store, name: &str) -> Option<&StoredEntry> {
        self.entries
            .binary_search_by(|e| (*store.bundle(e.bundle).name).cmp(name))
            .ok()
            .map(|i| &self.entries[i])
    }

    pub fn head(&self) -> &StoredEntry {
        &self.entries[self.head]
    }
}

impl StoredPackage {
    pub fn channel(&self, name: &str) -> Option<&StoredChannel> {
        self.channels
            .binary_search_by(|c| (*c.name).cmp(name))
            .ok()
            .map(|i| &self.channels[i])
    }
}

fn stored_bundle(
    pkg: &catalog::Package,
    b: &catalog::Bundle,
    package: u32,
    bodies: &mut BodyWriter,
) -> Result<StoredBundle, BodyError> {
    let mut provided = Vec::new();
    let mut required = Vec::new();
    let mut dependencies = Vec::new();
    let mut properties = Vec::new();
    for p in &b.properties {
        let kind = p.kind();
        match kind {
            PropertyType::Gvk => {
                if let Ok(g) = property::gvk_value(&p.value) {
                    provided.push(Gvk::new(&g.group, &g.version, &g.kind));
                }
            }
            PropertyType::GvkRequired => {
                if let Ok(g) = property::gvk_value(&p.value) {
                    required.push(Gvk::new(&g.group, &g.version, &g.kind));
                }
                dependencies.push(("olm.gvk".into(), property::canonical_json(&p.value).into()));
            }
            PropertyType::PackageRequired => {
                if let Ok(r) = property::package_required_value(&p.value) {
                    let v = serde_json::json!({ "packageName": r.package_name, "version": r.version_range });
                    dependencies.push(("olm.package".into(), property::canonical_json(&v).into()));
                }
            }
            _ => {}
        }
        if kind != PropertyType::BundleObject && kind != PropertyType::CsvMetadata {
            properties.push((
                Box::from(p.type_.as_str()),
                Box::from(property::canonical_json(&p.value)),
            ));
        }
    }
    let objects: Vec<String> = b.objects();
    let csv = match objects.iter().position(|o| {
        serde_json::from_str::<serde_json::Value>(o).is_ok_and(|v| catalog::csv::is_csv(&v))
    }) {
        Some(i) => CsvSource::Object(i),
        None => built_csv(pkg, b, bodies)?,
    };
    let objects = objects
        .iter()
        .map(|o| bodies.append(o))
        .collect::<Result<Box<[_]>, _>>()?;
    let version = b.version();
    Ok(StoredBundle {
        name: b.name.as_str().into(),
        package,
        semver: semver::Version::parse(&version).ok(),
        version: version.into(),
        bundle_path: b.image.as_str().into(),
        provided: provided.into(),
        required: required.into(),
        dependencies: dependencies.into(),
        properties: properties.into(),
        objects,
        csv,
        deprecation: boxed(&b.deprecation),
    })
}

/// The CSV built from `olm.csv.metadata`, stored without the package icon (spliced in per request).
fn built_csv(
    pkg: &catalog::Package,
    b: &catalog::Bundle,
    bodies: &mut BodyWriter,
) -> Result<CsvSource, BodyError> {
    let mut metas = b.properties_of(PropertyType::CsvMetadata);
    let meta = match (metas.next(), metas.next()) {
        (Some(m), None) => &m.value,
        _ => return Ok(CsvSource::None),
    };
    let mut csv = csv_json::csv_from_metadata(pkg, b, meta);
    if pkg.icon.is_none() {
        return Ok(CsvSource::Built {
            before_icon: bodies.append(&csv.to_string())?,
            after_icon: None,
        });
    }
    csv["spec"]["icon"] = serde_json::Value::String(ICON_MARK.to_string());
    let text = csv.to_string();
    let mark = serde_json::Value::String(ICON_MARK.to_string()).to_string();
    match text.split_once(&mark) {
        Some((before, after)) => Ok(CsvSource::Built {
            before_icon: bodies.append(before)?,
            after_icon: Some(bodies.append(after)?),
        }),
        None => Ok(CsvSource::Built {
            before_icon: bodies.append(&text)?,
            after_icon: None,
        }),
    }
}

/// JSON value to `google.protobuf.Struct` (non-object values are wrapped under `value`).
pub fn to_struct(v: &serde_json::Value) -> prost_types::Struct {
    match to_proto_value(v).kind {
        Some(prost_types::value::Kind::StructValue(s)) => s,
        other => prost_types::Struct {
            fields: [("value".to_string(), prost_types::Value { kind: other })]
                .into_iter()
                .collect(),
        },
    }
}

fn to_proto_value(v: &serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(to_proto_value).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(prost_types::Struct {
            fields: map
                .iter()
                .map(|(k, v)| (k.clone(), to_proto_value(v)))
                .collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}
