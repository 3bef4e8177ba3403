//! Waiting for state with a deadline: on a watch where the state is an object's (`await_object`), or by
//! re-checking a probe until it holds (`eventually`) where no watch exists (e.g. an HTTP endpoint).

use anyhow::{Context, bail};
use kube::Api;
use kube::api::ListParams;
use kube::runtime::wait::await_condition;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// Wait until the named object satisfies `cond`, via a watch. Returns the object.
pub async fn await_object<K, F>(
    api: &Api<K>,
    name: &str,
    deadline: Duration,
    what: &str,
    cond: F,
) -> anyhow::Result<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    F: Fn(Option<&K>) -> bool + Send,
{
    let found = tokio::time::timeout(deadline, await_condition(api.clone(), name, cond))
        .await
        .with_context(|| format!("timed out after {deadline:?} waiting for {name}: {what}"))?
        .with_context(|| format!("watching {name}"))?;
    found.with_context(|| format!("{name} disappeared while waiting for: {what}"))
}

/// Wait until `api` lists nothing matching `params` (e.g. every object a label selector names deleted).
pub async fn await_none_listed<K>(
    api: &Api<K>,
    params: &ListParams,
    deadline: Duration,
    what: &str,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    eventually(deadline, what, || async {
        Ok(api.list(params).await?.items.is_empty().then_some(()))
    })
    .await
}

/// Re-run `probe` until it returns `Ok(Some(v))`, failing after `deadline` with the last error or state.
/// Between tries it yields to the runtime for a short, growing interval (a probe, not a wait for elapsed time).
pub async fn eventually<T, F, Fut>(
    deadline: Duration,
    what: &str,
    mut probe: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let start = tokio::time::Instant::now();
    let mut interval = Duration::from_millis(50);
    loop {
        let last = match probe().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => "condition not met".to_string(),
            Err(e) => format!("{e:#}"),
        };
        if start.elapsed() >= deadline {
            bail!("timed out after {deadline:?} waiting for {what} (last: {last})");
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_millis(500));
    }
}
