//! `replaces` chains on the real control plane (spec §2.7, scenario 11): a 3-CSV chain converges to its newest
//! member whatever order the CSVs arrive in, and an upgrade replaces the running CSV step by step.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use messages::crd::csv::{CsvPhase, CsvReason};
use olm_tests::csv_fixture::*;

/// then the group: the chain must converge to a.v3 Succeeded, with a.v1 and a.v2 replaced and deleted.
async fn chain_converges(prefix: &str, order: [u32; 3]) -> anyhow::Result<()> {
    with_operator(prefix, |ctx, port| async move {
        for n in order {
            let replaces = (n > 1).then(|| format!("a.v{}", n - 1));
            create_csv(
                &ctx,
                csv(
                    &format!("a.v{n}"),
                    &format!("{n}.0.0"),
                    replaces.as_deref(),
                    "a",
                    &format!("example.com/a:{n}"),
                ),
            )
            .await?;
        }
        create_group(&ctx).await?;
        await_phase(
            &ctx,
            "a.v3",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        await_gone(&csvs(&ctx), "a.v1").await?;
        await_gone(&csvs(&ctx), "a.v2").await?;
        let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("a")
            .await?;
        let image = deployment
            .spec
            .and_then(|s| s.template.spec)
            .map(|p| p.containers[0].image.clone().unwrap_or_default());
        assert_eq!(image.as_deref(), Some("example.com/a:3"));
        for old in ["a.v1", "a.v2"] {
            let reasons = event_reasons(&ctx, old).await?;
            assert!(
                reasons.contains(&"BeingReplaced".to_string())
                    && reasons.contains(&"Replaced".to_string()),
                "{old}: {reasons:?}"
            );
        }
        let text = metrics(port).await?;
        let upgrades = metric_value(&text, "csv_upgrade_count").unwrap_or(0.0);
        assert!(
            upgrades >= 2.0,
            "both older CSVs counted as upgrades: {upgrades}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_replaces_chain_arriving_oldest_first_converges_to_the_newest() -> anyhow::Result<()> {
    chain_converges("csv-chain-123", [1, 2, 3]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_newest_first_converges_to_the_newest() -> anyhow::Result<()> {
    chain_converges("csv-chain-321", [3, 2, 1]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_middle_first_converges_to_the_newest() -> anyhow::Result<()> {
    chain_converges("csv-chain-213", [2, 1, 3]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_newest_then_oldest_converges_to_the_newest() -> anyhow::Result<()>
{
    chain_converges("csv-chain-312", [3, 1, 2]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_oldest_then_newest_converges_to_the_newest() -> anyhow::Result<()>
{
    chain_converges("csv-chain-132", [1, 3, 2]).await
}

#[tokio::test]
async fn a_replaces_chain_arriving_middle_then_newest_converges_to_the_newest() -> anyhow::Result<()>
{
    chain_converges("csv-chain-231", [2, 3, 1]).await
}

#[tokio::test]
async fn an_upgrade_replaces_the_running_csv_step_by_step() -> anyhow::Result<()> {
    with_operator("csv-upgrade", |ctx, _port| async move {
        create_group(&ctx).await?;
        create_csv(&ctx, csv("a.v1", "1.0.0", None, "a", "example.com/a:1")).await?;
        await_phase(
            &ctx,
            "a.v1",
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
        )
        .await?;
        for n in [2u32, 3] {
            let (old, new) = (format!("a.v{}", n - 1), format!("a.v{n}"));
            create_csv(
                &ctx,
                csv(
                    &new,
                    &format!("{n}.0.0"),
                    Some(&old),
                    "a",
                    &format!("example.com/a:{n}"),
                ),
            )
            .await?;
            await_phase(&ctx, &new, CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
            await_gone(&csvs(&ctx), &old).await?;
            let reasons = event_reasons(&ctx, &old).await?;
            let replacing = reasons.iter().position(|r| r == "BeingReplaced");
            let replaced = reasons.iter().position(|r| r == "Replaced");
            assert!(
                matches!((replacing, replaced), (Some(a), Some(b)) if a < b),
                "{old} went Replacing then Deleting: {reasons:?}"
            );
        }
        // The deployment survived the hand-overs and now belongs to the newest CSV only.
        let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get("a")
            .await?;
        let owners: Vec<String> = deployment
            .metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| o.name)
            .collect();
        assert_eq!(owners, vec!["a.v3".to_string()]);
        Ok(())
    })
    .await
}
