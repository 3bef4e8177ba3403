//! What one Subscription costs catalog-operator's actors: the reconcile runs of each kind (namespace resolution,
//! Subscription, InstallPlan) from the Subscription's creation to its plan Complete and the operator idle, read
//! from `controller_runtime_reconcile_total` on `/metrics` before and after. Resolution runs are the expensive
//! ones (each reads the whole namespace and may resolve); the bound below is the path of
//! [architecture.md](../../docs/architecture.md#message-flow). No olm-operator runs, so the CSV's phases
//! (each a `CsvChanged` resolution) do not count: only its creation by the plan does. Every status the second
//! Subscription passes through is watched: none may say its resolution failed (a namespace resolved while its
//! CSV exists but its plan is not Complete must not offer that bundle again beside the CSV).

use futures::StreamExt;
use kube::Api;
use kube::runtime::watcher;
use messages::crd::subscription::Subscription;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, OperatorProcess, eventually, with_namespace};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const KINDS: [&str; 3] = ["Namespace", "Subscription", "InstallPlan"];

/// Reconcile runs by actor kind, every result summed.
async fn runs(op: &OperatorProcess) -> anyhow::Result<BTreeMap<String, u64>> {
    let (code, body) = op.get("/metrics").await?;
    anyhow::ensure!(code == 200, "/metrics answered {code}");
    let text = String::from_utf8_lossy(&body);
    let mut out: BTreeMap<String, u64> = KINDS.iter().map(|k| (k.to_string(), 0)).collect();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("controller_runtime_reconcile_total{controller=\"")
        else {
            continue;
        };
        let Some((kind, tail)) = rest.split_once('"') else {
            continue;
        };
        let value: u64 = tail
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if let Some(n) = out.get_mut(kind) {
            *n += value;
        }
    }
    Ok(out)
}

/// The counts once two probes in a row read the same (the operator is idle).
async fn settled(op: &OperatorProcess) -> anyhow::Result<BTreeMap<String, u64>> {
    let last: Mutex<Option<BTreeMap<String, u64>>> = Mutex::new(None);
    eventually(DEADLINE, "catalog-operator idle", || async {
        let now = runs(op).await?;
        let mut last = last.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        if last.as_ref() == Some(&now) {
            return Ok(Some(now));
        }
        *last = Some(now);
        Ok(None)
    })
    .await
}

#[tokio::test]
async fn one_subscription_install_costs_few_resolution_runs() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "subhops", |ctx| async move {
        let op = catalog_operator(&ctx, &[]).await?;
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(vec![Op::new("warm", "1.0.0"), Op::new("solo", "1.0.0")]),
            0,
        )
        .await?;
        // The catalog loaded and resolved once with nothing to do.
        subscription(&ctx, sub_to(&ctx, "warm", "warm", "cat")).await?;
        await_sub(&ctx, "warm", "installed", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let before = settled(&op).await?;

        // Every condition the Subscription "solo" is seen with, from before its creation.
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (listed, ready) = tokio::sync::oneshot::channel();
        let history = tokio::spawn({
            let seen = seen.clone();
            let api: Api<Subscription> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let config = watcher::Config::default().fields("metadata.name=solo");
            async move {
                let mut listed = Some(listed);
                let mut events = watcher(api, config).boxed();
                while let Some(event) = events.next().await {
                    match event {
                        Ok(watcher::Event::InitDone) => {
                            if let Some(tx) = listed.take() {
                                let _ = tx.send(());
                            }
                        }
                        Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) => {
                            let conditions = s.status.map(|st| st.conditions).unwrap_or_default();
                            seen.lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .extend(conditions.into_iter().filter(|c| c.status == "True").map(
                                    |c| format!("{:?}/{:?}: {}", c.type_, c.reason, c.message),
                                ));
                        }
                        Ok(_) | Err(_) => {}
                    }
                }
            }
        });
        tokio::time::timeout(DEADLINE, ready).await??;

        subscription(&ctx, sub_to(&ctx, "solo", "solo", "cat")).await?;
        await_sub(&ctx, "solo", "installed", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let after = settled(&op).await?;
        history.abort();
        let failed: Vec<String> = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|c| c.starts_with("ResolutionFailed"))
            .cloned()
            .collect();
        assert!(
            failed.is_empty(),
            "an install that succeeded showed a failed resolution on its way: {failed:?}"
        );
        let cost: BTreeMap<&str, u64> = KINDS
            .iter()
            .map(|k| {
                (
                    *k,
                    after.get(*k).copied().unwrap_or(0) - before.get(*k).copied().unwrap_or(0),
                )
            })
            .collect();
        eprintln!("HOPS one Subscription install, reconcile runs by kind: {cost:?}");
        if std::env::var_os("OLM_RS_HOPS_LOG").is_some() {
            eprintln!("{}", op.logs());
        }
        let namespace_runs = cost.get("Namespace").copied().unwrap_or(0);
        assert!(namespace_runs >= 1, "the install was resolved: {cost:?}");
        assert!(
            namespace_runs <= MAX_NAMESPACE_RUNS,
            "resolution ran {namespace_runs} times for one install: {cost:?}"
        );
        Ok(())
    })
    .await
}

/// Resolution runs one install may cost: the want (which asks for the bundle), the fetched bundle (which makes
/// the plan), the CSV the plan creates and the plan Complete; acknowledgements, the Subscription's own status
/// writes and the plan's first status cost none.
const MAX_NAMESPACE_RUNS: u64 = 4;
