//! Which identity an InstallPlan's steps are applied with: OLM's scoped install (`pkg/lib/scoped`:
//! `UserDefinedServiceAccountQuerier`, `ClientAttenuator`). When the namespace's OperatorGroup names
//! `spec.serviceAccountName`, every step except CRDs (OLM applies those with its own client) is applied acting as
//! that ServiceAccount, so a step the account may not perform fails with the API server's forbidden message. The
//! account is used once olm-operator has synced it into the group's `status.serviceAccountRef`; until then the
//! plan waits with OLM's `InstallCheckFailed` message. The reference used is recorded in the plan's
//! `status.attenuatedServiceAccountRef`, as OLM records it.
//!
//! We act as the account by impersonation (`olm_runtime::impersonate`), where OLM reads the account's token
//! Secret or asks the TokenRequest API: see the README ("Scoped installs") for why.

use crate::group_view::GroupView;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use messages::crd::operator_group::OperatorGroup;
use std::sync::Arc;

pub use olm_runtime::scoped_install::{GroupAccount, Identity, client_for, identity};

/// Read the group's account facts (one GET; read as an untyped object, so a group whose other fields do not
/// decode cannot block the plan).
pub async fn read_group(
    client: &Client,
    namespace: &str,
    group: &str,
) -> Result<GroupAccount, String> {
    let ar = ApiResource::erase::<OperatorGroup>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &ar);
    let og = api
        .get(group)
        .await
        .map_err(|e| format!("cannot read the operator group {namespace}/{group}: {e}"))?;
    Ok(GroupAccount {
        namespace: namespace.to_string(),
        group: group.to_string(),
        named: og.data["spec"]["serviceAccountName"]
            .as_str()
            .map(str::to_string),
        synced: serde_json::from_value(og.data["status"]["serviceAccountRef"].clone())
            .ok()
            .flatten(),
    })
}

/// Who applies a plan's steps in `namespace`, given the group check's answer (the one group as the store shows
/// it, or OLM's message): the identity for `status.attenuatedServiceAccountRef` and the client, or the message
/// to wait with. The account comes from the store; only a group that names an account the store does not show
/// synced yet is read from the API (the store may lag olm-operator's status write).
pub async fn resolve(
    operator: &Client,
    own: &olm_runtime::own_account::OwnAccount,
    namespace: &str,
    group: Result<Arc<GroupView>, String>,
) -> Result<(Identity, Client), String> {
    let g = match fresh_read(group?.account()) {
        Ok(known) => known,
        Err(name) => read_group(operator, namespace, &name).await?,
    };
    let who = identity(&g)?;
    olm_runtime::impersonation_grant::ensure(operator, own, &who).await?;
    let client = client_for(operator, &who)?;
    Ok((who, client))
}

/// The store's account facts when they settle who applies the steps, else the group's name to read.
fn fresh_read(g: GroupAccount) -> Result<GroupAccount, String> {
    if g.named.is_some() && g.synced.is_none() {
        Err(g.group)
    } else {
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use rstest::rstest;

    fn account(named: Option<&str>, synced: bool) -> GroupAccount {
        GroupAccount {
            namespace: "ns".into(),
            group: "og".into(),
            named: named.map(str::to_string),
            synced: synced.then(|| ObjectReference {
                name: named.map(str::to_string),
                ..Default::default()
            }),
        }
    }

    #[rstest]
    #[case::no_account_named_uses_the_store(account(None, false), true)]
    #[case::a_synced_account_uses_the_store(account(Some("sa"), true), true)]
    #[case::a_named_account_not_synced_in_the_store_is_read(account(Some("sa"), false), false)]
    fn the_api_is_read_only_when_the_store_may_lag(
        #[case] g: GroupAccount,
        #[case] from_store: bool,
    ) {
        assert_eq!(fresh_read(g).is_ok(), from_store);
    }
}
