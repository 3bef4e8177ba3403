//! The right to act as one ServiceAccount, granted to the operator itself in that account's namespace, before a
//! scoped install acts as it (OLM's scoped installs, [`crate::scoped_install`]). deploy/rbac grants no
//! `impersonate` at all: an operator may act only as an account an OperatorGroup names (and olm-operator has synced
//! into its `status.serviceAccountRef`), in that group's namespace.
//!
//! The grant is a Role `olm-rs:<ns>:<sa>:impersonate` in the account's namespace with `impersonate` on exactly
//! that ServiceAccount (`resourceNames`), bound to the operator's own account (`OPERATOR_SERVICE_ACCOUNT` in its
//! namespace), owned by the impersonated ServiceAccount (so it goes with it), labelled [`GRANT_LABEL`] and
//! server-side applied: a group naming another account moves the grant to it. Writing it needs what the
//! operators hold for installs anyway: `create`/`patch` on Roles and RoleBindings with `escalate` and `bind`.
//! After writing, the operator asks the API server (a SelfSubjectAccessReview) until the grant is in effect, and
//! remembers the account for the life of the process (a grant deleted behind its back comes back when the process
//! restarts). Without `OPERATOR_SERVICE_ACCOUNT` (the tests' admin
//! kubeconfig) nothing is granted.

use crate::own_account::{Grantee, OwnAccount};
use crate::scoped_install::Identity;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::time::Duration;

/// The label on every grant (value: the grantee's namespace).
pub const GRANT_LABEL: &str = "olm-rs.io/impersonation-grant";
const MANAGER: &str = "olm-rs-impersonation-grant";
/// How long the operator waits for a new grant to be in effect before it reports the install as not ready yet.
const IN_EFFECT_WITHIN: Duration = Duration::from_secs(5);

/// The name of the grant of `grantee` (one per namespace: a namespace has one OperatorGroup, naming one account).
pub fn grant_name(grantee: &Grantee) -> String {
    let name = format!("olm-rs:{}:{}:impersonate", grantee.namespace, grantee.name);
    let mut cut = name.len().min(253);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    name[..cut].to_string()
}

/// The Role and RoleBinding letting `grantee` impersonate exactly `account` (its namespace, name and uid).
pub fn grant(grantee: &Grantee, account: &ObjectReference) -> Option<(Role, RoleBinding)> {
    let namespace = account.namespace.as_deref().filter(|n| !n.is_empty())?;
    let name = account.name.as_deref().filter(|n| !n.is_empty())?;
    let grant = grant_name(grantee);
    let meta = ObjectMeta {
        name: Some(grant.clone()),
        namespace: Some(namespace.to_string()),
        labels: Some(BTreeMap::from([(
            GRANT_LABEL.to_string(),
            grantee.namespace.clone(),
        )])),
        owner_references: account.uid.as_ref().filter(|u| !u.is_empty()).map(|uid| {
            vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ServiceAccount".into(),
                name: name.to_string(),
                uid: uid.clone(),
                ..Default::default()
            }]
        }),
        ..Default::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["serviceaccounts".into()]),
            resource_names: Some(vec![name.to_string()]),
            verbs: vec!["impersonate".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: grant,
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: grantee.name.clone(),
            namespace: Some(grantee.namespace.clone()),
            ..Default::default()
        }]),
    };
    Some((role, binding))
}

/// Apply the grant of `account` for `grantee`, as `client` (tests call this as the ServiceAccount).
pub async fn apply_grant(
    client: &Client,
    grantee: &Grantee,
    account: &ObjectReference,
) -> Result<(), String> {
    let Some((role, binding)) = grant(grantee, account) else {
        return Err(format!("no service account to grant: {account:?}"));
    };
    let namespace = role.metadata.namespace.clone().unwrap_or_default();
    let name = grant_name(grantee);
    let params = PatchParams::apply(MANAGER).force();
    Api::<Role>::namespaced(client.clone(), &namespace)
        .patch(&name, &params, &Patch::Apply(&role))
        .await
        .map_err(|e| format!("cannot grant the operator impersonation in {namespace}: {e}"))?;
    Api::<RoleBinding>::namespaced(client.clone(), &namespace)
        .patch(&name, &params, &Patch::Apply(&binding))
        .await
        .map_err(|e| format!("cannot grant the operator impersonation in {namespace}: {e}"))?;
    Ok(())
}

/// Whether the API server lets `client`'s identity impersonate `namespace/name` now.
async fn may_impersonate(client: &Client, namespace: &str, name: &str) -> Result<bool, String> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_string()),
                verb: Some("impersonate".into()),
                resource: Some("serviceaccounts".into()),
                name: Some(name.to_string()),
                ..Default::default()
            }),
            non_resource_attributes: None,
        },
        ..Default::default()
    };
    Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map(|answer| answer.status.is_some_and(|s| s.allowed))
        .map_err(|e| format!("cannot review the operator's impersonation right: {e}"))
}

/// Before acting as `who`: make sure this process may (a grant as above, once per account and process). Nothing to
/// do for the operator itself, or without `OPERATOR_SERVICE_ACCOUNT`.
pub async fn ensure(operator: &Client, own: &OwnAccount, who: &Identity) -> Result<(), String> {
    let (Identity::Account(account), Some(grantee)) = (who, own.grantee()) else {
        return Ok(());
    };
    let key = (
        account.namespace.clone().unwrap_or_default(),
        account.name.clone().unwrap_or_default(),
    );
    let uid = account.uid.clone().unwrap_or_default();
    let granted = &own.impersonations;
    if granted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        == Some(&uid)
    {
        return Ok(());
    }
    apply_grant(operator, grantee, account).await?;
    let deadline = tokio::time::Instant::now() + IN_EFFECT_WITHIN;
    let mut delay = Duration::from_millis(50);
    while !may_impersonate(operator, &key.0, &key.1).await? {
        if tokio::time::Instant::now() + delay > deadline {
            return Err(format!(
                "the operator's grant to act as {}/{} is not in effect yet",
                key.0, key.1
            ));
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
    tracing::info!(namespace = %key.0, service_account = %key.1, "granted the operator impersonation of the group's service account");
    granted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, uid);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn me() -> Grantee {
        Grantee {
            namespace: "olm".into(),
            name: "catalog-operator".into(),
        }
    }

    fn account(namespace: Option<&str>, name: &str, uid: Option<&str>) -> ObjectReference {
        ObjectReference {
            namespace: namespace.map(str::to_string),
            name: Some(name.to_string()),
            uid: uid.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn the_grant_names_exactly_one_account_in_its_namespace() {
        let (role, binding) =
            grant(&me(), &account(Some("team"), "deployer", Some("u1"))).expect("a grant");
        assert_eq!(role.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("olm-rs:olm:catalog-operator:impersonate")
        );
        let rules = role.rules.expect("rules");
        assert_eq!(
            rules,
            vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["serviceaccounts".into()]),
                resource_names: Some(vec!["deployer".into()]),
                verbs: vec!["impersonate".into()],
                ..Default::default()
            }]
        );
        let owner = &role.metadata.owner_references.expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("ServiceAccount", "deployer", "u1")
        );
        assert_eq!(binding.role_ref.kind, "Role");
        let subjects = binding.subjects.expect("subjects");
        assert_eq!(subjects.len(), 1);
        assert_eq!(
            (subjects[0].name.as_str(), subjects[0].namespace.as_deref()),
            ("catalog-operator", Some("olm"))
        );
    }

    #[rstest]
    #[case::no_namespace(account(None, "deployer", Some("u1")), false, false)]
    #[case::empty_namespace(account(Some(""), "deployer", Some("u1")), false, false)]
    #[case::no_name(account(Some("team"), "", Some("u1")), false, false)]
    #[case::no_uid_no_owner(account(Some("team"), "deployer", None), true, false)]
    #[case::with_uid(account(Some("team"), "deployer", Some("u1")), true, true)]
    fn a_grant_needs_a_namespace_and_a_name(
        #[case] account: ObjectReference,
        #[case] granted: bool,
        #[case] owned: bool,
    ) {
        let got = grant(&me(), &account);
        assert_eq!(got.is_some(), granted);
        if let Some((role, _)) = got {
            assert_eq!(role.metadata.owner_references.is_some(), owned);
        }
    }

    #[test]
    fn two_operators_do_not_share_a_grant() {
        let other = Grantee {
            name: "olm-operator".into(),
            ..me()
        };
        assert_ne!(grant_name(&me()), grant_name(&other));
    }
}
