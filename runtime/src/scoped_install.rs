//! OLM's scoped install, the decision both operators share (`pkg/lib/scoped`: `UserDefinedServiceAccountQuerier`,
//! `ClientAttenuator`): when the namespace's one OperatorGroup names `spec.serviceAccountName`, what OLM installs
//! for an operator is applied acting as that account, once olm-operator has synced it into the group's
//! `status.serviceAccountRef`. Pure, except [`client_for`], which builds the impersonating client
//! ([`crate::impersonate`]).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;

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
    /// The operator itself: the group names no account.
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

/// The client to apply with: the operator's own, or one acting as the account.
pub fn client_for(operator: &Client, who: &Identity) -> Result<Client, String> {
    match who {
        Identity::Operator => Ok(operator.clone()),
        Identity::Account(r) => crate::impersonate::as_service_account(
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

    const NOT_SYNCED: &str =
        "please make sure the service account exists. sa=deployer operatorgroup=ns/og";

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
    #[case::named_but_missing_waits_with_olms_message(
        group(Some("deployer"), None),
        Err(NOT_SYNCED)
    )]
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
        #[derive(Clone)]
        struct Unused;
        impl tower::Service<http::Request<kube::client::Body>> for Unused {
            type Response = http::Response<kube::client::Body>;
            type Error = std::convert::Infallible;
            type Future = std::future::Pending<Result<Self::Response, Self::Error>>;
            fn poll_ready(
                &mut self,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), Self::Error>> {
                std::task::Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: http::Request<kube::client::Body>) -> Self::Future {
                std::future::pending()
            }
        }
        let base = Client::new(Unused, "ns");
        let bad = Identity::Account(sa_ref(Some("ns"), "a:b"));
        assert!(client_for(&base, &bad).is_err());
    }
}
