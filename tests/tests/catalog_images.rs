//! Catalog images served in-process (issue 13): a file-based catalog image referencing real community bundle
//! images by digest, pushed to the local registry (Debian's docker-registry) with `oci::publish`. A CatalogSource
//! with `spec.image` and a registry poll serves it (READY, no Pod); a Subscription installs from it; re-pushing
//! the tag with a newer channel head upgrades the operator across its `replaces` edge once the poll sees the new
//! digest. A catalog image without a catalog and an invalid poll interval end in clear status messages. A poll
//! that fails (the tag re-pushed with an image that is not a catalog) keeps serving the last good catalog.

use kube::Api;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::csv::ClusterServiceVersion;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_csv_succeeded, await_object, eventually, with_namespace};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The FBC stream without bundle `drop` (and its channel entries): an older catalog.
fn without(fbc: &[u8], drop: &str) -> anyhow::Result<Vec<u8>> {
    let docs: Vec<Value> = serde_json::Deserializer::from_slice(fbc)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for mut d in docs {
        if d["schema"] == "olm.bundle" && d["name"] == drop {
            continue;
        }
        if d["schema"] == "olm.channel"
            && let Some(entries) = d["entries"].as_array_mut()
        {
            entries.retain(|e| e["name"] != drop);
            for e in entries.iter_mut() {
                if let Some(skips) = e.get_mut("skips").and_then(Value::as_array_mut) {
                    skips.retain(|s| s != drop);
                }
            }
        }
        out.extend(serde_json::to_vec(&d)?);
        out.push(b'\n');
    }
    Ok(out)
}

async fn push_catalog(
    registry: &oci::Registry,
    fbc: Vec<u8>,
    reference: &str,
) -> anyhow::Result<String> {
    let files = vec![("configs/catalog.json".to_string(), fbc)];
    Ok(oci::publish::push_catalog_files(registry, files, reference).await?)
}

#[tokio::test]
async fn a_catalog_image_installs_and_a_repushed_tag_upgrades_across_replaces() -> anyhow::Result<()>
{
    // The repo's sample etcd package (the community etcd bundles, with the `resources[].name` OLM's schema
    // requires added, see deploy/samples/catalog/SOURCES.md).
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "catimg", |ctx| async move {
        let SampleEtcd {
            registry,
            prefix,
            published,
        } = SampleEtcd::push(&ctx.namespace).await?;
        let tag = format!("{prefix}/catalog:latest");
        let old = without(&published.fbc, "etcdoperator.v0.9.4")?;
        let first = push_catalog(&registry, old, &tag).await?;

        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        let started = Instant::now();
        create(
            &ctx,
            Catsrc::named("community").image(&tag).poll("2s").build(),
        )
        .await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let cs = await_catalog_ready(&ctx, "community").await?;
        eprintln!("catalog image tag → READY in {:?}", started.elapsed());
        let status = cs.status.unwrap_or_default();
        assert!(
            status.registry_service.is_none(),
            "served in-process, no registry Service"
        );

        install_sample_etcd(&ctx, "community", "etcdoperator.v0.9.2").await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);

        // The tag moves to a catalog with a newer head; the poll sees the new digest and the operator upgrades.
        let second = push_catalog(&registry, published.fbc.clone(), &tag).await?;
        assert_ne!(first, second);
        let polled_at = Instant::now();
        await_csv_succeeded(
            &ctx.client,
            &ctx.namespace,
            "etcdoperator.v0.9.4",
            Duration::from_secs(180),
        )
        .await?;
        eprintln!(
            "re-pushed tag → upgraded CSV Succeeded in {:?}",
            polled_at.elapsed()
        );
        let csv = csvs.get("etcdoperator.v0.9.4").await?;
        assert_eq!(csv.spec.replaces.as_deref(), Some("etcdoperator.v0.9.2"));
        let csvs_ref = &csvs;
        eventually(DEADLINE, "the replaced CSV deleted", || async move {
            Ok(csvs_ref
                .get_opt("etcdoperator.v0.9.2")
                .await?
                .is_none()
                .then_some(()))
        })
        .await?;
        // catalog-operator records installedCSV once it sees the new CSV Succeeded: after, not with, the phase.
        let subs_api = subs(&ctx);
        let subs_ref = &subs_api;
        eventually(
            DEADLINE,
            "the Subscription's installedCSV is the upgraded CSV",
            || async move {
                let sub = subs_ref.get("etcd").await?;
                let installed = sub.status.map(|s| s.installed_csv).unwrap_or_default();
                Ok((installed == "etcdoperator.v0.9.4").then_some(()))
            },
        )
        .await?;
        let cs = catalogs.get("community").await?;
        assert!(
            cs.status
                .and_then(|s| s.latest_image_registry_poll)
                .is_some(),
            "latestImageRegistryPoll recorded"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_catalog_image_without_a_catalog_and_an_invalid_poll_interval_say_so()
-> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "catimgbad", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let layer = oci::build::tar_gz(&[("bin/opm".to_string(), b"#!/bin/sh\n".to_vec())])?;
        let empty = format!("{prefix}/empty:v1");
        registry
            .push(
                &empty,
                &oci::Auth::Anonymous,
                vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
                &Default::default(),
            )
            .await?;
        let good = format!("{prefix}/good:v1");
        let docs = fbc_package(
            "p",
            &[("p.v1.0.0", "1.0.0", None, "127.0.0.1:1/p@sha256:0")],
        );
        push_catalog(&registry, fbc_text(&docs).into_bytes(), &good).await?;

        let _cat = catalog_operator(&ctx, &[]).await?;
        create(&ctx, Catsrc::named("empty").image(&empty).build()).await?;
        create(
            &ctx,
            Catsrc::named("often").image(&good).poll("often").build(),
        )
        .await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let cs = await_object(&catalogs, "empty", DEADLINE, "not a catalog", |c| {
            c.and_then(|c| c.status.as_ref())
                .is_some_and(|s| s.message.contains("is not a catalog"))
        })
        .await?;
        let status = cs.status.unwrap_or_default();
        assert_eq!(status.reason.as_str(), "RegistryServerError");
        assert!(
            status
                .message
                .contains("no file-based catalog under /configs"),
            "{}",
            status.message
        );
        let cs = await_object(&catalogs, "often", DEADLINE, "InvalidIntervalError", |c| {
            c.and_then(|c| c.status.as_ref())
                .is_some_and(|s| s.reason.as_str() == "InvalidIntervalError")
        })
        .await?;
        let message = cs.status.unwrap_or_default().message;
        assert!(message.contains("often"), "{message}");
        Ok(())
    })
    .await
}

/// Bad input while indexing (issue 33) is a status naming what and where, never a crash: a catalog file that
/// does not parse names its path in the image; a cache folder that cannot be written (a file stands where it
/// should be) names that folder; catalog-operator keeps running.
#[tokio::test]
async fn a_catalog_that_does_not_parse_and_an_unwritable_cache_folder_say_where()
-> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "catimgidx", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let broken = format!("{prefix}/broken:v1");
        push_catalog(
            &registry,
            b"{\"schema\": \"olm.package\", not json".to_vec(),
            &broken,
        )
        .await?;
        let good = format!("{prefix}/good:v1");
        let docs = fbc_package(
            "p",
            &[("p.v1.0.0", "1.0.0", None, "127.0.0.1:1/p@sha256:0")],
        );
        push_catalog(&registry, fbc_text(&docs).into_bytes(), &good).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let message_of = |name: &'static str, says: &'static str| {
            let catalogs = catalogs.clone();
            async move {
                let cs = await_object(&catalogs, name, DEADLINE, says, |c| {
                    c.and_then(|c| c.status.as_ref())
                        .is_some_and(|s| s.message.contains(says))
                })
                .await?;
                anyhow::Ok(cs.status.unwrap_or_default().message)
            }
        };

        let mut op = catalog_operator(&ctx, &[]).await?;
        create(&ctx, Catsrc::named("broken").image(&broken).build()).await?;
        let message = message_of("broken", "is not a catalog").await?;
        assert!(message.contains("/configs/catalog.json"), "{message}");
        assert!(op.exited().is_none(), "catalog-operator keeps running");
        drop(op);

        let dir = tempfile::tempdir()?;
        let blocked = dir.path().join("not-a-folder");
        std::fs::write(&blocked, "a file where the cache folder goes")?;
        let blocked_s = blocked.display().to_string();
        let mut op = catalog_operator(&ctx, &["--catalog-cache-dir", &blocked_s]).await?;
        create(&ctx, Catsrc::named("good").image(&good).build()).await?;
        let message = message_of("good", "cannot stage catalog image").await?;
        assert!(message.contains(&blocked_s), "{message}");
        assert!(op.exited().is_none(), "catalog-operator keeps running");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_failed_poll_keeps_serving_the_last_good_catalog() -> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "catimgkeep", |ctx| async move {
        let SampleEtcd {
            registry,
            prefix,
            published,
        } = SampleEtcd::push(&ctx.namespace).await?;
        let tag = format!("{prefix}/catalog:latest");
        let good = push_catalog(
            &registry,
            without(&published.fbc, "etcdoperator.v0.9.4")?,
            &tag,
        )
        .await?;

        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        create(
            &ctx,
            Catsrc::named("community").image(&tag).poll("2s").build(),
        )
        .await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_catalog_ready(&ctx, "community").await?;

        // The tag now names an image that is not a catalog: the next poll fails to load it.
        let layer = oci::build::tar_gz(&[("bin/opm".to_string(), b"#!/bin/sh\n".to_vec())])?;
        let bad = registry
            .push(
                &tag,
                &oci::Auth::Anonymous,
                vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
                &Default::default(),
            )
            .await?;
        assert_ne!(good, bad);
        let cs = await_object(
            &catalogs,
            "community",
            DEADLINE,
            "the failed poll reported",
            |c| {
                c.and_then(|c| c.status.as_ref())
                    .is_some_and(|s| s.message.contains("is not a catalog"))
            },
        )
        .await?;
        let status = cs.status.unwrap_or_default();
        assert!(
            status
                .message
                .contains("still serving the last catalog that loaded"),
            "{}",
            status.message
        );
        assert_eq!(
            status
                .connection_state
                .map(|s| s.last_observed_state.as_str().to_string())
                .unwrap_or_default(),
            "READY",
            "the last good catalog still serves"
        );

        // Resolution still reads the last good catalog: a Subscription made now installs from it.
        install_sample_etcd(&ctx, "community", "etcdoperator.v0.9.2").await?;
        let sub = subs(&ctx).get("etcd").await?;
        let unhealthy = sub
            .status
            .as_ref()
            .and_then(|s| sub_condition(s, "CatalogSourcesUnhealthy"));
        assert_ne!(
            unhealthy.map(|c| c.0).as_deref(),
            Some("True"),
            "the catalog counts as healthy while it serves"
        );

        // The tag back on a good catalog clears the error.
        push_catalog(&registry, published.fbc.clone(), &tag).await?;
        await_object(&catalogs, "community", DEADLINE, "the error cleared", |c| {
            c.and_then(|c| c.status.as_ref())
                .is_some_and(|s| s.message.is_empty())
        })
        .await?;
        Ok(())
    })
    .await
}
