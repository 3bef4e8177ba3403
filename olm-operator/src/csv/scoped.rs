//! Which identity a CSV's RBAC and Deployments are written with (OLM's scoped install: olm-operator builds its
//! install strategy's client through the same `ClientAttenuator` as catalog-operator): when the namespace's one
//! OperatorGroup names `spec.serviceAccountName`, acting as that account once olm-operator has synced it into the
//! group's `status.serviceAccountRef`; otherwise olm-operator itself. The decision is
//! `olm_runtime::scoped_install`'s; this reads the group from the store.

use crate::shared::Shared;
use kube::Client;
use messages::crd::operator_group::OperatorGroup;
use olm_runtime::scoped_install::{self, GroupAccount};

/// The namespace's group as the decision reads it: `None` unless exactly one group is in the namespace (the CSV
/// machine never installs without exactly one).
pub fn group_account(groups: &[&OperatorGroup], namespace: &str) -> Option<GroupAccount> {
    let [group] = groups
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(namespace))
        .collect::<Vec<_>>()[..]
    else {
        return None;
    };
    Some(GroupAccount {
        namespace: namespace.to_string(),
        group: group.metadata.name.clone().unwrap_or_default(),
        named: group.spec.service_account_name.clone(),
        synced: group
            .status
            .as_ref()
            .and_then(|s| s.service_account_ref.clone()),
    })
}

/// Who writes the CSV's RBAC and Deployments.
pub struct Applier {
    pub client: Client,
    /// The operator, or the group's account it acts as.
    pub who: scoped_install::Identity,
}

/// [`applier`], once this process may act as the group's account (`olm_runtime::impersonation_grant`).
pub async fn granted_applier(
    operator: &Client,
    shared: &Shared,
    namespace: &str,
) -> Result<Applier, String> {
    let applier = applier(operator, shared, namespace)?;
    olm_runtime::impersonation_grant::ensure(operator, &shared.process.own_account, &applier.who)
        .await?;
    Ok(applier)
}

/// The client to write the CSV's RBAC and Deployments with, or why the group's account cannot be used yet.
pub fn applier(operator: &Client, shared: &Shared, namespace: &str) -> Result<Applier, String> {
    let groups = shared.stores.operator_groups.state();
    let refs: Vec<&OperatorGroup> = groups.iter().map(|g| g.as_ref()).collect();
    let who = match group_account(&refs, namespace) {
        None => scoped_install::Identity::Operator,
        Some(g) => scoped_install::identity(&g)?,
    };
    Ok(Applier {
        client: scoped_install::client_for(operator, &who)?,
        who,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use messages::crd::operator_group::{OperatorGroupSpec, OperatorGroupStatus};
    use rstest::rstest;

    fn group(ns: &str, name: &str, sa: Option<&str>, synced: Option<&str>) -> OperatorGroup {
        let mut g = OperatorGroup::new(
            name,
            OperatorGroupSpec {
                service_account_name: sa.map(str::to_string),
                ..Default::default()
            },
        );
        g.metadata.namespace = Some(ns.into());
        g.status = Some(OperatorGroupStatus {
            service_account_ref: synced.map(|n| ObjectReference {
                name: Some(n.into()),
                namespace: Some(ns.into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        g
    }

    #[rstest]
    #[case::no_group(vec![], None)]
    #[case::a_group_elsewhere(vec![group("other", "og", Some("sa"), Some("sa"))], None)]
    #[case::two_groups(vec![group("ns", "a", None, None), group("ns", "b", None, None)], None)]
    #[case::one_group_with_its_account(
        vec![group("ns", "og", Some("sa"), Some("sa")), group("other", "og", None, None)],
        Some(("og", Some("sa"), Some("sa")))
    )]
    #[case::one_group_not_synced(vec![group("ns", "og", Some("sa"), None)], Some(("og", Some("sa"), None)))]
    fn the_namespaces_one_group_is_read(
        #[case] groups: Vec<OperatorGroup>,
        #[case] want: Option<(&str, Option<&str>, Option<&str>)>,
    ) {
        let refs: Vec<&OperatorGroup> = groups.iter().collect();
        let got = group_account(&refs, "ns");
        let got = got.as_ref().map(|g| {
            (
                g.group.as_str(),
                g.named.as_deref(),
                g.synced.as_ref().and_then(|r| r.name.as_deref()),
            )
        });
        assert_eq!(got, want);
    }
}
