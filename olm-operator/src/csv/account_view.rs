//! What olm-operator keeps of each ServiceAccount of the cluster (issue 19: one per namespace at least, so the
//! store grows with the cluster): its metadata, which is all its readers use (requirement checks by name and
//! owner, the Operator view's labels and owners, OperatorGroups naming an account by name and uid). No token
//! Secret references, pull secrets or `managedFields`, and no kubectl last-applied copy. Nothing writes a
//! stored account back (accounts are created or patched from rendered objects). Pure.

use k8s_openapi::api::core::v1::ServiceAccount;
use messages::crd::annotations::LAST_APPLIED_CONFIGURATION;

/// Cut an account down to what is kept of it.
pub fn project(account: &mut ServiceAccount) {
    account.secrets = None;
    account.image_pull_secrets = None;
    account.automount_service_account_token = None;
    account.metadata.managed_fields = None;
    if let Some(annotations) = account.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_CONFIGURATION);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{LocalObjectReference, ObjectReference};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use std::collections::BTreeMap;

    #[test]
    fn an_account_keeps_its_metadata_only() {
        let meta = ObjectMeta {
            name: Some("etcd-operator".into()),
            namespace: Some("ns".into()),
            uid: Some("uid".into()),
            labels: Some(BTreeMap::from([("olm.managed".into(), "true".into())])),
            annotations: Some(BTreeMap::from([
                ("keep".into(), "me".into()),
                (LAST_APPLIED_CONFIGURATION.into(), "{}".into()),
            ])),
            owner_references: Some(vec![OwnerReference {
                kind: "ClusterServiceVersion".into(),
                name: "etcd.v1".into(),
                uid: "csv".into(),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        };
        let mut account = ServiceAccount {
            metadata: meta.clone(),
            secrets: Some(vec![ObjectReference {
                name: Some("etcd-operator-token-x".into()),
                ..ObjectReference::default()
            }]),
            image_pull_secrets: Some(vec![LocalObjectReference {
                name: "pull".into(),
            }]),
            automount_service_account_token: Some(false),
        };
        project(&mut account);
        let mut expected = meta;
        expected.annotations = Some(BTreeMap::from([("keep".into(), "me".into())]));
        assert_eq!(
            account,
            ServiceAccount {
                metadata: expected,
                ..ServiceAccount::default()
            }
        );
    }
}
