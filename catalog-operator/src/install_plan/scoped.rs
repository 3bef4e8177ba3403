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

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use messages::crd::operator_group::OperatorGroup;

/// What of the namespace's one OperatorGroup decides the identity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupAccount {
    pub namespace: String,
    pub group: String,
    /// `spec.serviceAccountName`.
    pub named: Option<String>,
    /// `status.serviceAccountRef`, written by olm-operator once the account exists.
    pub synced: Option<ObjectReference>,
}

/// Who applies the steps.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// catalog-operator itself: the group names no account.
    Operator,
    /// The group's account (its synced reference).
    Account(ObjectReference),
}

impl Identity {
    /// The account's reference, for the plan's `status.attenuatedServiceAccountRef`.
    pub fn account(self) -> Option<ObjectReference> {
        match self {
            Identity::Operator => None,
            Identity::Account(r) => Some(r),
        }
    }
}

/// OLM's `queryServiceAccountFromNamespace` once exactly one group manages the namespace: no account named →
/// the operator; named and synced → that account; named but not synced (missing, or olm-operator has not caught
/// up) → OLM's error message, shown as the `InstallCheckFailed` condition while the plan waits.
///
/// Stricter than OLM on one point: a synced reference naming another account than the spec (the spec changed
/// and olm-operator has not synced it yet) counts as not synced, so a plan never runs as the account the admin
/// just replaced.
pub fn identity(g: &GroupAccount) -> Result<Identity, String> {
    let Some(named) = g.named.as_deref().filter(|n| !n.is_empty()) else {
        return Ok(Identity::Operator);
    };
    match &g.synced {
        Some(r)
            if r.name.as_deref() == Some(named)
                && r.namespace.as_deref().is_none_or(|ns| ns == g.namespace) =>
        {
            let mut r = r.clone();
            r.namespace = Some(g.namespace.clone());
            Ok(Identity::Account(r))
        }
        _ => Err(format!(
            "please make sure the service account exists. sa={named} operatorgroup={}/{}",
            g.namespace, g.group
        )),
    }
}

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

/// The client to apply the steps with.
pub fn client_for(operator: &Client, who: &Identity) -> Result<Client, String> {
    match who {
        Identity::Operator => Ok(operator.clone()),
        Identity::Account(r) => olm_runtime::impersonate::as_service_account(
            operator,
            r.namespace.as_deref().unwrap_or_default(),
            r.name.as_deref().unwrap_or_default(),
        )
        .map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn sa_ref(ns: Option<&str>, name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ServiceAccount".into()),
            namespace: ns.map(str::to_string),
            name: Some(name.into()),
            uid: Some("u-1".into()),
            ..Default::default()
        }
    }

    fn group(named: Option<&str>, synced: Option<ObjectReference>) -> GroupAccount {
        GroupAccount {
            namespace: "ns".into(),
            group: "og".into(),
            named: named.map(str::to_string),
            synced,
        }
    }

    const NOT_SYNCED: &str = "please make sure the service account exists. sa=deployer operatorgroup=ns/og";

    #[rstest]
    #[case::no_account_named_the_operator_applies(group(None, None), Ok(Identity::Operator))]
    #[case::an_empty_name_is_no_account(group(Some(""), None), Ok(Identity::Operator))]
    #[case::a_stale_reference_without_a_name_in_spec_is_ignored(
        group(None, Some(sa_ref(Some("ns"), "old"))),
        Ok(Identity::Operator)
    )]
    #[case::named_and_synced_the_account_applies(
        group(Some("deployer"), Some(sa_ref(Some("ns"), "deployer"))),
        Ok(Identity::Account(sa_ref(Some("ns"), "deployer")))
    )]
    #[case::a_reference_without_namespace_is_the_groups_namespace(
        group(Some("deployer"), Some(sa_ref(None, "deployer"))),
        Ok(Identity::Account(sa_ref(Some("ns"), "deployer")))
    )]
    #[case::named_but_missing_waits_with_olms_message(group(Some("deployer"), None), Err(NOT_SYNCED))]
    #[case::a_reference_to_the_replaced_account_waits(
        group(Some("deployer"), Some(sa_ref(Some("ns"), "old"))),
        Err(NOT_SYNCED)
    )]
    #[case::a_reference_into_another_namespace_waits(
        group(Some("deployer"), Some(sa_ref(Some("other"), "deployer"))),
        Err(NOT_SYNCED)
    )]
    fn the_group_decides_who_applies_the_steps(
        #[case] g: GroupAccount,
        #[case] want: Result<Identity, &str>,
    ) {
        assert_eq!(identity(&g), want.map_err(str::to_string));
    }

    #[tokio::test]
    async fn an_account_reference_that_cannot_be_impersonated_is_an_error_not_the_operator() {
        let base = Client::new(
            tower::service_fn(|_req: http::Request<kube::client::Body>| async {
                Ok::<_, std::convert::Infallible>(http::Response::new(kube::client::Body::from(
                    Vec::new(),
                )))
            }),
            "ns",
        );
        let bad = Identity::Account(sa_ref(Some("ns"), "a:b"));
        assert!(client_for(&base, &bad).is_err());
    }
}
