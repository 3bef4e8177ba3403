//! Sqlite index catalog images (`/database/index.db`, operator-registry's schema, as `opm index add` builds
//! them): read into the same FBC documents a file-based catalog holds, so they load into the same catalog model.
//! Packages (`package`: name, default channel), channels (`channel_entry`: each bundle a channel lists), bundles
//! (`operatorbundle`: name, image `bundlepath`, `version`, `replaces`, `skips`, `skiprange`) and their
//! properties (`properties`: type and JSON value), as `opm migrate` renders them.

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The FBC documents of the index at `path` (opened read-only).
pub fn documents_from_path(path: &Path) -> Result<Vec<Value>, String> {
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("cannot open the sqlite index: {e}"))?;
    read(&db).map_err(|e| format!("cannot read the sqlite index (operator-registry schema): {e}"))
}

/// The FBC documents of an index given as bytes (written to a temporary file, removed after reading).
pub fn documents(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let path = std::env::temp_dir().join(format!(
        "olm-rs-index-{}-{}.db",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::write(&path, bytes).map_err(|e| format!("cannot write the sqlite index: {e}"))?;
    let out = documents_from_path(&path);
    let _ = std::fs::remove_file(&path);
    out
}

/// An `olm.package` document.
#[derive(Serialize)]
struct PackageDoc<'a> {
    schema: &'static str,
    name: &'a str,
    #[serde(rename = "defaultChannel", skip_serializing_if = "Option::is_none")]
    default_channel: Option<&'a str>,
}

/// An `olm.channel` document.
#[derive(Serialize)]
struct ChannelDoc<'a> {
    schema: &'static str,
    package: &'a str,
    name: &'a str,
    entries: Vec<EntryDoc<'a>>,
}

/// One entry of a channel.
#[derive(Serialize)]
struct EntryDoc<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    replaces: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    skips: &'a [String],
    #[serde(rename = "skipRange", skip_serializing_if = "str::is_empty")]
    skip_range: &'a str,
}

/// An `olm.bundle` document.
#[derive(Serialize)]
struct BundleDoc<'a> {
    schema: &'static str,
    name: &'a str,
    package: &'a str,
    image: &'a str,
    properties: Vec<PropertyDoc>,
}

/// A bundle property: its type and JSON value (as stored).
#[derive(Serialize)]
struct PropertyDoc {
    #[serde(rename = "type")]
    type_: String,
    value: Value,
}

/// The `olm.package` property a bundle without one gets.
#[derive(Serialize)]
struct PackageValue<'a> {
    #[serde(rename = "packageName")]
    package_name: &'a str,
    version: &'a str,
}

/// A document as the FBC loader reads it.
fn doc(value: impl Serialize) -> rusqlite::Result<Value> {
    serde_json::to_value(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

struct Bundle {
    package: String,
    image: String,
    version: String,
    replaces: String,
    skips: Vec<String>,
    skip_range: String,
}

fn read(db: &Connection) -> rusqlite::Result<Vec<Value>> {
    let mut docs = Vec::new();
    let mut packages = db.prepare("SELECT name, default_channel FROM package ORDER BY name")?;
    let packages: Vec<(String, Option<String>)> = packages
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    // channel → (package, bundles it lists); bundle → its package (the first channel listing it).
    let mut entries = db.prepare(
        "SELECT DISTINCT package_name, channel_name, operatorbundle_name FROM channel_entry ORDER BY package_name, channel_name, operatorbundle_name",
    )?;
    let mut channels: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut package_of: BTreeMap<String, String> = BTreeMap::new();
    for row in entries.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })? {
        let (package, channel, bundle) = row?;
        package_of.entry(bundle.clone()).or_insert(package.clone());
        channels.entry((package, channel)).or_default().push(bundle);
    }
    let mut bundles = db.prepare(
        "SELECT name, IFNULL(bundlepath, ''), IFNULL(version, ''), IFNULL(replaces, ''), IFNULL(skips, ''), IFNULL(skiprange, '') FROM operatorbundle ORDER BY name",
    )?;
    let mut by_name: BTreeMap<String, Bundle> = BTreeMap::new();
    for row in bundles.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
        ))
    })? {
        let (name, image, version, replaces, skips, skip_range) = row?;
        let Some(package) = package_of.get(&name).cloned() else {
            continue; // in no channel: not installable, as in operator-registry
        };
        let skips = skips
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        by_name.insert(
            name,
            Bundle {
                package,
                image,
                version,
                replaces,
                skips,
                skip_range,
            },
        );
    }
    let mut properties = db.prepare(
        "SELECT operatorbundle_name, type, value FROM properties ORDER BY operatorbundle_name, type, value",
    )?;
    let mut props: BTreeMap<String, Vec<PropertyDoc>> = BTreeMap::new();
    for row in properties.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })? {
        let (bundle, kind, value) = row?;
        let value: Value = serde_json::from_str(&value).unwrap_or(Value::String(value));
        props
            .entry(bundle)
            .or_default()
            .push(PropertyDoc { type_: kind, value });
    }

    for (package, default_channel) in &packages {
        docs.push(doc(PackageDoc {
            schema: "olm.package",
            name: package,
            default_channel: default_channel.as_deref().filter(|c| !c.is_empty()),
        })?);
    }
    for ((package, channel), names) in &channels {
        let listed: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let entries: Vec<EntryDoc<'_>> = names
            .iter()
            .filter_map(|n| by_name.get(n).map(|b| (n, b)))
            .map(|(name, b)| EntryDoc {
                name,
                replaces: Some(b.replaces.as_str()).filter(|r| !r.is_empty() && listed.contains(r)),
                skips: &b.skips,
                skip_range: &b.skip_range,
            })
            .collect();
        docs.push(doc(ChannelDoc {
            schema: "olm.channel",
            package,
            name: channel,
            entries,
        })?);
    }
    for (name, b) in &by_name {
        let mut properties = props.remove(name).unwrap_or_default();
        if !properties.iter().any(|p| p.type_ == "olm.package") {
            properties.insert(
                0,
                PropertyDoc {
                    type_: "olm.package".to_string(),
                    value: doc(PackageValue {
                        package_name: &b.package,
                        version: &b.version,
                    })?,
                },
            );
        }
        docs.push(doc(BundleDoc {
            schema: "olm.bundle",
            name,
            package: &b.package,
            image: &b.image,
            properties,
        })?);
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    /// operator-registry's tables (pkg/sqlite migrations, as an index built by `opm index add` has them).
    const SCHEMA: &str = "
        CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT, FOREIGN KEY(name, default_channel) REFERENCES channel(package_name,name));
        CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY(name, package_name));
        CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT, skiprange TEXT, version TEXT, replaces TEXT, skips TEXT, substitutesfor TEXT);
        CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT, operatorbundle_name TEXT, replaces INTEGER, depth INTEGER);
        CREATE TABLE properties (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
        CREATE TABLE related_image (image TEXT, operatorbundle_name TEXT);
        CREATE TABLE api (group_name TEXT, version TEXT, kind TEXT, plural TEXT NOT NULL, PRIMARY KEY(group_name,version,kind));
        CREATE TABLE api_provider (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
        CREATE TABLE deprecated (operatorbundle_name TEXT PRIMARY KEY);
    ";

    /// etcd 0.9.0 → 0.9.2 → 0.9.4 in `alpha`; 0.9.4 alone in `beta` (skips 0.9.3, a skipRange); a bundle in no
    /// channel.
    fn index(path: &Path) {
        let db = Connection::open(path).expect("db");
        db.execute_batch(SCHEMA).expect("schema");
        db.execute_batch("
            INSERT INTO channel VALUES ('alpha','etcd','etcdoperator.v0.9.4'), ('beta','etcd','etcdoperator.v0.9.4');
            INSERT INTO package VALUES ('etcd','alpha');
            INSERT INTO operatorbundle VALUES
              ('etcdoperator.v0.9.0','{}','','quay.io/x/etcd@sha256:00',NULL,'0.9.0',NULL,NULL,NULL),
              ('etcdoperator.v0.9.2','{}','','quay.io/x/etcd@sha256:02',NULL,'0.9.2','etcdoperator.v0.9.0',NULL,NULL),
              ('etcdoperator.v0.9.4','{}','','quay.io/x/etcd@sha256:04','<0.9.4','0.9.4','etcdoperator.v0.9.2','etcdoperator.v0.9.3',NULL),
              ('orphan.v1','{}','','quay.io/x/orphan@sha256:01',NULL,'1.0.0',NULL,NULL,NULL);
            INSERT INTO channel_entry VALUES
              (1,'alpha','etcd','etcdoperator.v0.9.4',2,0), (2,'alpha','etcd','etcdoperator.v0.9.2',3,1),
              (3,'alpha','etcd','etcdoperator.v0.9.0',NULL,2), (4,'beta','etcd','etcdoperator.v0.9.4',NULL,0);
            INSERT INTO properties VALUES
              ('olm.package','{\"packageName\":\"etcd\",\"version\":\"0.9.4\"}','etcdoperator.v0.9.4','0.9.4','quay.io/x/etcd@sha256:04'),
              ('olm.gvk','{\"group\":\"etcd.database.coreos.com\",\"kind\":\"EtcdCluster\",\"version\":\"v1beta2\"}','etcdoperator.v0.9.4','0.9.4','quay.io/x/etcd@sha256:04');
        ").expect("rows");
    }

    fn index_bytes() -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!("olm-rs-sqlite-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join(format!("{:?}.db", std::thread::current().id()));
        let _ = std::fs::remove_file(&path);
        index(&path);
        let bytes = std::fs::read(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        bytes
    }

    fn docs() -> Vec<Value> {
        documents(&index_bytes()).expect("documents")
    }

    #[test]
    fn an_index_image_without_configs_loads_its_sqlite_index() {
        let files = oci::Files::from([(oci::SQLITE_INDEX.to_string(), index_bytes())]);
        let catalog = crate::files::catalog("reg/index:v1", "configs", &files).expect("a catalog");
        assert_eq!(catalog.packages.keys().collect::<Vec<_>>(), vec!["etcd"]);
    }

    fn find<'a>(docs: &'a [Value], schema: &str, name: &str) -> &'a Value {
        docs.iter()
            .find(|d| d["schema"] == schema && d["name"] == name)
            .unwrap_or_else(|| panic!("no {schema} {name} in {docs:#?}"))
    }

    #[rstest]
    #[case::the_package_keeps_its_default_channel("olm.package", "etcd", "/defaultChannel", json!("alpha"))]
    #[case::a_channel_lists_its_bundles_with_replaces("olm.channel", "alpha", "/entries", json!([
        {"name": "etcdoperator.v0.9.0"},
        {"name": "etcdoperator.v0.9.2", "replaces": "etcdoperator.v0.9.0"},
        {"name": "etcdoperator.v0.9.4", "replaces": "etcdoperator.v0.9.2", "skips": ["etcdoperator.v0.9.3"], "skipRange": "<0.9.4"}]))]
    #[case::replaces_outside_the_channel_is_dropped("olm.channel", "beta", "/entries", json!([
        {"name": "etcdoperator.v0.9.4", "skips": ["etcdoperator.v0.9.3"], "skipRange": "<0.9.4"}]))]
    #[case::a_bundle_has_its_image("olm.bundle", "etcdoperator.v0.9.2", "/image", json!("quay.io/x/etcd@sha256:02"))]
    #[case::a_bundle_keeps_its_stored_properties("olm.bundle", "etcdoperator.v0.9.4", "/properties/0", json!({"type": "olm.gvk", "value": {"group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"}}))]
    #[case::a_bundle_without_a_package_property_gets_one("olm.bundle", "etcdoperator.v0.9.0", "/properties", json!([{"type": "olm.package", "value": {"packageName": "etcd", "version": "0.9.0"}}]))]
    fn an_operator_registry_index_reads_as_fbc(
        #[case] schema: &str,
        #[case] name: &str,
        #[case] pointer: &str,
        #[case] want: Value,
    ) {
        let docs = docs();
        assert_eq!(find(&docs, schema, name).pointer(pointer), Some(&want));
    }

    #[test]
    fn a_bundle_in_no_channel_is_left_out_and_the_documents_load_as_a_catalog() {
        let docs = docs();
        assert!(!docs.iter().any(|d| d["name"] == "orphan.v1"));
        let origin = Path::new("/database/index.db");
        let catalog = catalog::fbc::from_documents(catalog::documents::with_origins(origin, docs))
            .expect("a catalog");
        assert_eq!(catalog.packages.len(), 1);
    }

    #[test]
    fn bytes_that_are_not_an_index_say_so() {
        let e = documents(b"not a database").expect_err("refused");
        assert!(e.contains("sqlite index"), "{e}");
    }
}
