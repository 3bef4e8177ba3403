//! What a deleted namespace of an earlier run left in etcd. A rerun of a seed uses the same namespace names, so
//! an object the namespace controller did not delete comes back with the namespace and makes the workload's
//! create fail ("og already exists", seen once in a rerun). The namespace controller deletes only the kinds its
//! discovery names at that moment; after an apiserver restart a custom resource group can be missing from it, and
//! its objects are then left behind when the namespace goes. The API server lists and deletes objects of a
//! namespace that does not exist, so they are found and removed here, before the namespaces are made again.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, Resource};
use messages::crd::catalog_source::CatalogSource;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::operator_condition::OperatorCondition;
use messages::crd::operator_group::OperatorGroup;
use messages::crd::subscription::Subscription;
use serde::de::DeserializeOwned;

/// Remove what is left in `namespace` (which reads as gone) of every kind the workload makes or the operators
/// make for it, finalizers first; returns `kind/name` of each object found.
pub async fn remove(client: &Client, namespace: &str) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    found.extend(remove_kind::<OperatorGroup>(client, namespace).await?);
    found.extend(remove_kind::<Subscription>(client, namespace).await?);
    found.extend(remove_kind::<ClusterServiceVersion>(client, namespace).await?);
    found.extend(remove_kind::<InstallPlan>(client, namespace).await?);
    found.extend(remove_kind::<CatalogSource>(client, namespace).await?);
    found.extend(remove_kind::<OperatorCondition>(client, namespace).await?);
    found.extend(remove_kind::<ConfigMap>(client, namespace).await?);
    found.extend(remove_kind::<Deployment>(client, namespace).await?);
    found.extend(remove_kind::<ServiceAccount>(client, namespace).await?);
    found.extend(remove_kind::<Role>(client, namespace).await?);
    found.extend(remove_kind::<RoleBinding>(client, namespace).await?);
    Ok(found)
}

/// A merge patch that removes `metadata.finalizers` (`{"metadata":{"finalizers":null}}`).
#[derive(serde::Serialize, Debug)]
struct NoFinalizers {
    metadata: FinalizersNull,
}

#[derive(serde::Serialize, Debug)]
struct FinalizersNull {
    finalizers: Option<Vec<String>>,
}

const NO_FINALIZERS: NoFinalizers = NoFinalizers {
    metadata: FinalizersNull { finalizers: None },
};

async fn remove_kind<K>(client: &Client, namespace: &str) -> anyhow::Result<Vec<String>>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let mut found = Vec::new();
    for obj in api.list(&ListParams::default()).await?.items {
        let Some(name) = obj.meta().name.clone() else {
            continue;
        };
        if obj
            .meta()
            .finalizers
            .as_ref()
            .is_some_and(|f| !f.is_empty())
        {
            let _ = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&NO_FINALIZERS),
                )
                .await;
        }
        let _ = api.delete(&name, &DeleteParams::background()).await;
        found.push(format!("{}/{name}", K::kind(&())));
    }
    Ok(found)
}
