//! olm-operator's right to read and replace the certificate Secrets of one CSV, granted to itself before it touches
//! them: deploy/rbac lets it only *create* Secrets (a create names no object RBAC could limit it to), so reading a
//! certificate pair back and replacing it (`install::prepare`, `install::settle`) go through a Role in the CSV's
//! namespace with `get` and `update` on exactly that CSV's `<service>-cert` Secrets (`resourceNames`), bound to
//! olm-operator's own account (`olm_runtime::own_account`), owned by the CSV (so it goes with it), labelled
//! [`GRANT_LABEL`] and server-side applied. After writing it, olm-operator asks the API server (a
//! SelfSubjectAccessReview) until it is in effect, and remembers it for the life of the process. Without
//! `OPERATOR_SERVICE_ACCOUNT` (the tests' admin kubeconfig) nothing is granted. Writing it needs what olm-operator
//! holds for installs anyway: `create`/`patch` on Roles and RoleBindings with `escalate` and `bind`.

use super::objects::Owner;
use crate::shared::Process;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use olm_runtime::own_account::Grantee;
use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::time::Duration;

/// The label on every grant (value: olm-operator's namespace).
pub const GRANT_LABEL: &str = "olm-rs.io/olm-operator-grant";
const MANAGER: &str = "olm-operator-grant";
/// How long olm-operator waits for a new grant to be in effect before the install is retried.
const IN_EFFECT_WITHIN: Duration = Duration::from_secs(5);

/// The name of the grant of `owner`'s certificates to `grantee`.
pub fn grant_name(grantee: &Grantee, owner: &Owner) -> String {
    let name = format!(
        "olm-rs:{}:{}:certs:{}",
        grantee.namespace, grantee.name, owner.name
    );
    let mut cut = name.len().min(253);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    name[..cut].to_string()
}

/// `get` and `update` on exactly `secrets` in the CSV's namespace, bound to `grantee`; None when there are none.
pub fn grant(grantee: &Grantee, owner: &Owner, secrets: &[String]) -> Option<(Role, RoleBinding)> {
    let mut names: Vec<String> = secrets.iter().filter(|s| !s.is_empty()).cloned().collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return None;
    }
    let name = grant_name(grantee, owner);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(owner.namespace.clone()),
        labels: Some(BTreeMap::from([(
            GRANT_LABEL.to_string(),
            grantee.namespace.clone(),
        )])),
        owner_references: Some(vec![owner.reference.clone()]),
        ..Default::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".into()]),
            resource_names: Some(names),
            verbs: vec!["get".into(), "update".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name,
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

/// Apply the grant of `owner`'s `secrets` for `grantee`, as `client`. Returns whether there was anything to grant.
pub async fn apply_grant(
    client: &Client,
    grantee: &Grantee,
    owner: &Owner,
    secrets: &[String],
) -> Result<bool, kube::Error> {
    let Some((role, binding)) = grant(grantee, owner, secrets) else {
        return Ok(false);
    };
    let name = grant_name(grantee, owner);
    let params = PatchParams::apply(MANAGER).force();
    Api::<Role>::namespaced(client.clone(), &owner.namespace)
        .patch(&name, &params, &Patch::Apply(&role))
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), &owner.namespace)
        .patch(&name, &params, &Patch::Apply(&binding))
        .await?;
    Ok(true)
}

async fn may_read(client: &Client, namespace: &str, secret: &str) -> Result<bool, kube::Error> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_string()),
                verb: Some("get".into()),
                resource: Some("secrets".into()),
                name: Some(secret.to_string()),
                ..Default::default()
            }),
            non_resource_attributes: None,
        },
        ..Default::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Before reading or replacing `owner`'s certificate Secrets: make sure olm-operator may (once per CSV, set of
/// Secrets and process). Nothing to do without `OPERATOR_SERVICE_ACCOUNT`.
pub async fn ensure(
    client: &Client,
    process: &Process,
    owner: &Owner,
    secrets: &[String],
) -> Result<(), String> {
    let Some(grantee) = process.own_account.grantee() else {
        return Ok(());
    };
    let mut names: Vec<String> = secrets.to_vec();
    names.sort();
    names.dedup();
    let key = (
        owner.namespace.clone(),
        owner.reference.uid.clone(),
        names.clone(),
    );
    let granted = &process.cert_grants;
    if granted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&key)
    {
        return Ok(());
    }
    let failed = |e: kube::Error| {
        format!(
            "cannot grant olm-operator its certificate Secrets in {}: {e}",
            owner.namespace
        )
    };
    if !apply_grant(client, grantee, owner, &names)
        .await
        .map_err(failed)?
    {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + IN_EFFECT_WITHIN;
    let mut delay = Duration::from_millis(50);
    for secret in &names {
        while !may_read(client, &owner.namespace, secret)
            .await
            .map_err(failed)?
        {
            if tokio::time::Instant::now() + delay > deadline {
                return Err(format!(
                    "olm-operator's grant of the Secret {}/{secret} is not in effect yet",
                    owner.namespace
                ));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(500));
        }
    }
    tracing::info!(csv = %owner.name, namespace = %owner.namespace, secrets = ?names, "granted olm-operator its certificate Secrets");
    granted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use rstest::rstest;

    fn me() -> Grantee {
        Grantee {
            namespace: "olm".into(),
            name: "olm-operator".into(),
        }
    }

    fn owner() -> Owner {
        Owner {
            name: "webhook.v1".into(),
            namespace: "team".into(),
            reference: OwnerReference {
                api_version: "operators.coreos.com/v1alpha1".into(),
                kind: "ClusterServiceVersion".into(),
                name: "webhook.v1".into(),
                uid: "u1".into(),
                ..Default::default()
            },
        }
    }

    #[rstest]
    #[case::one(&["svc-cert"], Some(vec!["svc-cert"]))]
    #[case::sorted_and_deduplicated(&["b-cert", "a-cert", "b-cert"], Some(vec!["a-cert", "b-cert"]))]
    #[case::empty_names_dropped(&["", "a-cert"], Some(vec!["a-cert"]))]
    #[case::none(&[], None)]
    fn the_grant_names_exactly_the_csvs_certificate_secrets(
        #[case] secrets: &[&str],
        #[case] expected: Option<Vec<&str>>,
    ) {
        let secrets: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
        let got = grant(&me(), &owner(), &secrets);
        let Some(expected) = expected else {
            assert!(got.is_none());
            return;
        };
        let (role, binding) = got.expect("a grant");
        assert_eq!(
            role.rules,
            Some(vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["secrets".into()]),
                resource_names: Some(expected.iter().map(|s| s.to_string()).collect()),
                verbs: vec!["get".into(), "update".into()],
                ..Default::default()
            }])
        );
        assert_eq!(role.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(
            role.metadata.name.as_deref(),
            Some("olm-rs:olm:olm-operator:certs:webhook.v1")
        );
        let owners = role.metadata.owner_references.expect("owner");
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].uid.as_str()),
            ("ClusterServiceVersion", "u1")
        );
        let subjects = binding.subjects.expect("subjects");
        assert_eq!(
            (subjects[0].name.as_str(), subjects[0].namespace.as_deref()),
            ("olm-operator", Some("olm"))
        );
        assert_eq!(binding.role_ref.name, grant_name(&me(), &owner()));
    }
}
