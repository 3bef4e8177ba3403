//! Sqlite index images (issue 13): the catalog images built by `opm index add` before file-based catalogs hold
//! operator-registry's sqlite index at `/database/index.db` and no `/configs`. Such an image, pushed to the
//! local registry and naming real community bundle images by digest (`bundlepath`), is served in-process by a
//! CatalogSource with `spec.image` (READY, no Pod), and a Subscription installs from it.

use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::with_namespace;
use rusqlite::{Connection, params};
use serde_json::json;

/// operator-registry's tables, as an index built by `opm index add` has them (pkg/sqlite migrations).
const SCHEMA: &str = "
    CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT);
    CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY(name, package_name));
    CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT, skiprange TEXT, version TEXT, replaces TEXT, skips TEXT, substitutesfor TEXT);
    CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT, operatorbundle_name TEXT, replaces INTEGER, depth INTEGER);
    CREATE TABLE properties (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
    CREATE TABLE related_image (image TEXT, operatorbundle_name TEXT);
    CREATE TABLE api (group_name TEXT, version TEXT, kind TEXT, plural TEXT NOT NULL, PRIMARY KEY(group_name,version,kind));
    CREATE TABLE api_provider (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
    CREATE TABLE deprecated (operatorbundle_name TEXT PRIMARY KEY);
";

/// An index of package `etcd`, channel `singlenamespace-alpha`: 0.9.0 → 0.9.2 (head), each bundle by image.
fn index_db(path: &std::path::Path, v090: &str, v092: &str) -> anyhow::Result<Vec<u8>> {
    let db = Connection::open(path)?;
    db.execute_batch(SCHEMA)?;
    db.execute(
        "INSERT INTO package VALUES ('etcd', 'singlenamespace-alpha')",
        [],
    )?;
    db.execute(
        "INSERT INTO channel VALUES ('singlenamespace-alpha', 'etcd', 'etcdoperator.v0.9.2')",
        [],
    )?;
    for (name, image, version, replaces) in [
        ("etcdoperator.v0.9.0", v090, "0.9.0", None),
        (
            "etcdoperator.v0.9.2",
            v092,
            "0.9.2",
            Some("etcdoperator.v0.9.0"),
        ),
    ] {
        db.execute(
            "INSERT INTO operatorbundle VALUES (?1, '', '', ?2, NULL, ?3, ?4, NULL, NULL)",
            params![name, image, version, replaces],
        )?;
        let package = json!({"packageName": "etcd", "version": version}).to_string();
        db.execute(
            "INSERT INTO properties VALUES ('olm.package', ?1, ?2, ?3, ?4)",
            params![package, name, version, image],
        )?;
    }
    db.execute_batch(
        "INSERT INTO channel_entry VALUES
           (1, 'singlenamespace-alpha', 'etcd', 'etcdoperator.v0.9.2', 2, 0),
           (2, 'singlenamespace-alpha', 'etcd', 'etcdoperator.v0.9.0', NULL, 1);",
    )?;
    drop(db);
    Ok(std::fs::read(path)?)
}

#[tokio::test]
async fn a_sqlite_index_image_is_served_and_installs() -> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "idximg", |ctx| async move {
        let SampleEtcd {
            registry,
            prefix,
            published,
        } = SampleEtcd::push(&ctx.namespace).await?;
        let image = |csv: &str| {
            published
                .bundles
                .get(csv)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("{csv} not published"))
        };
        let path = std::env::temp_dir().join(format!("olm-rs-{}-index.db", ctx.namespace));
        let _ = std::fs::remove_file(&path);
        let db = index_db(
            &path,
            &image("etcdoperator.v0.9.0")?,
            &image("etcdoperator.v0.9.2")?,
        )?;
        let _ = std::fs::remove_file(&path);
        let tag = format!("{prefix}/index:v1");
        oci::publish::push_catalog_files(
            &registry,
            vec![(oci::SQLITE_INDEX.to_string(), db)],
            &tag,
        )
        .await?;

        let repo = format!("{}/etcd-bundle", ctx.namespace);
        let before = requests_for(&repo)?;
        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        create(&ctx, Catsrc::named("index").image(&tag).build()).await?;
        let cs = await_catalog_ready(&ctx, "index").await?;
        assert!(
            cs.status.unwrap_or_default().registry_service.is_none(),
            "served in-process, no registry Service"
        );

        let csv = install_sample_etcd(&ctx, "index", "etcdoperator.v0.9.2").await?;
        assert!(
            csv.spec.replaces.is_none(),
            "a fresh install replaces nothing (as OLM sets it)"
        );
        assert!(
            requests_for(&repo)? > before,
            "the bundle was pulled from its image in the registry"
        );
        // catalog-operator records installedCSV once it sees the CSV Succeeded: after, not with, the phase.
        let subs_api = subs(&ctx);
        let subs_ref = &subs_api;
        olm_tests::eventually(DEADLINE, "the Subscription's installedCSV", || async move {
            let sub = subs_ref.get("etcd").await?;
            let installed = sub.status.map(|s| s.installed_csv).unwrap_or_default();
            Ok((installed == "etcdoperator.v0.9.2").then_some(()))
        })
        .await?;
        Ok(())
    })
    .await
}
