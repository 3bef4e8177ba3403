//! The I/O of OperatorConditions: ensure a CSV's OperatorCondition and its Role/RoleBinding exist (the Role and
//! RoleBinding server-side applied; the condition created when absent, an existing one keeping its conditions
//! and getting its spec lists refreshed by a merge patch of those two lists alone), and copy `spec.conditions`
//! into the status.

use super::{access, desired, status_update};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_condition::OperatorCondition;
use olm_runtime::error::{self as api_error, Class};

/// Create the CSV's OperatorCondition (or refresh its service accounts and deployments) and its access.
pub async fn ensure(
    client: &Client,
    csv: &ClusterServiceVersion,
    existing: Option<&OperatorCondition>,
) -> Result<(), kube::Error> {
    let (Some(want), Some(namespace)) = (desired(csv), csv.metadata.namespace.as_deref()) else {
        return Ok(());
    };
    let name = want.metadata.name.clone().unwrap_or_default();
    // The access first: a CSV is ensured again only while its OperatorCondition is missing or stale, so a
    // failed write of the Role or RoleBinding after the condition was created was never retried (the chaos
    // runs' API fault proxy: a CSV left with no RoleBinding for its OperatorCondition).
    // Applied (`crate::apply`): a Role or RoleBinding changed since is repaired, as OLM's update on a difference.
    if let Some((role, binding)) = access(csv, &want.spec) {
        let applied = |f: crate::apply::Failed| f.source;
        crate::apply::apply(&Api::namespaced(client.clone(), namespace), &role)
            .await
            .map_err(applied)?;
        crate::apply::apply(&Api::namespaced(client.clone(), namespace), &binding)
            .await
            .map_err(applied)?;
    }
    let api: Api<OperatorCondition> = Api::namespaced(client.clone(), namespace);
    match existing {
        None => create_if_absent(&api, &want).await?,
        Some(have)
            if have.spec.service_accounts != want.spec.service_accounts
                || have.spec.deployments != want.spec.deployments =>
        {
            let patch = serde_json::json!({"spec": {
                "serviceAccounts": want.spec.service_accounts,
                "deployments": want.spec.deployments,
            }});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Some(_) => {}
    }
    Ok(())
}

async fn create_if_absent<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(e) if api_error::is(&e, Class::AlreadyExists) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Copy `spec.conditions` into `status.conditions` (OLM's OperatorCondition controller).
pub async fn sync_status(client: &Client, oc: &OperatorCondition) -> Result<(), kube::Error> {
    let (Some(update), Some(name), Some(namespace)) = (
        status_update(oc),
        oc.metadata.name.as_deref(),
        oc.metadata.namespace.as_deref(),
    ) else {
        return Ok(());
    };
    let api: Api<OperatorCondition> = Api::namespaced(client.clone(), namespace);
    let patch = serde_json::json!({"status": {"conditions": update.conditions}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}
