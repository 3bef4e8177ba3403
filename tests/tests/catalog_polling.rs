//! Registry polling (spec §8 scenario 35, OLM e2e "registry polls on the correct interval"): a CatalogSource
//! with `updateStrategy.registryPoll.interval` re-reads its content on that interval and records each poll
//! in `status.latestImageRegistryPoll`; an interval that does not parse is reported as
//! `InvalidIntervalError` (the default 15m is used meanwhile) and the report clears once it is fixed.

use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use messages::crd::catalog_source::CatalogSource;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use serde_json::json;
use std::time::Duration;

fn last_poll(c: Option<&CatalogSource>) -> Option<Timestamp> {
    c.and_then(|c| c.status.as_ref())
        .and_then(|s| s.latest_image_registry_poll.as_ref())
        .map(|t| t.0)
}

#[tokio::test]
async fn a_catalog_polls_on_its_interval_and_an_invalid_interval_is_reported_until_fixed()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "catpoll", |ctx| async move {
        let _op = catalog_operator(&ctx, &[]).await?;
        let catalog = Catalog::with(vec![Op::new("pi", "1.0.0")]);
        create::<k8s_openapi::api::core::v1::ConfigMap>(&ctx, catalog.configmap("polled")).await?;
        create(&ctx, Catsrc::named("polled").config_map("polled").poll("2s").build()).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);

        // Three successive polls: the status moves on each, about two seconds apart (timestamps have whole seconds).
        let first = await_object(&catalogs, "polled", DEADLINE, "a first poll", |c| last_poll(c).is_some()).await?;
        let mut seen = vec![last_poll(Some(&first)).ok_or_else(|| anyhow::anyhow!("no poll time"))?];
        while seen.len() < 3 {
            let previous = seen[seen.len() - 1];
            let next = await_object(&catalogs, "polled", Duration::from_secs(30), "the next poll", |c| {
                last_poll(c).is_some_and(|t| t > previous)
            })
            .await?;
            seen.extend(last_poll(Some(&next)));
        }
        let span = seen[2].duration_since(seen[0]);
        assert!(
            span >= k8s_openapi::jiff::SignedDuration::from_secs(3) && span <= k8s_openapi::jiff::SignedDuration::from_secs(15),
            "two 2s intervals between the first and third poll, got {span:?} ({seen:?})"
        );
        let status = catalogs.get("polled").await?.status.ok_or_else(|| anyhow::anyhow!("no status"))?;
        assert_eq!(status.reason.as_str(), "", "a valid interval reports nothing: {status:?}");

        // An interval that does not parse.
        catalogs
            .patch("polled", &PatchParams::default(), &Patch::Merge(json!({"spec": {"updateStrategy": {"registryPoll": {"interval": "every tuesday"}}}})))
            .await?;
        let invalid = await_object(&catalogs, "polled", DEADLINE, "InvalidIntervalError", |c| {
            c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.reason.as_str() == "InvalidIntervalError")
        })
        .await?;
        let message = invalid.status.map(|s| s.message).unwrap_or_default();
        assert!(
            message.starts_with("error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead."),
            "{message}"
        );

        // Fixed: the report clears.
        catalogs
            .patch("polled", &PatchParams::default(), &Patch::Merge(json!({"spec": {"updateStrategy": {"registryPoll": {"interval": "30s"}}}})))
            .await?;
        await_object(&catalogs, "polled", DEADLINE, "the interval error cleared", |c| {
            c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.reason.as_str() != "InvalidIntervalError" && !s.message.contains("registryPoll"))
        })
        .await?;
        Ok(())
    })
    .await
}
