//! The I/O of an OperatorGroup sync: status, namespace labels, member annotations, `olm.providedAPIs`,
//! the generated ClusterRoles and the copied CSVs. Each function is one kind of write; errors carry context.

use super::machine::LabelChange;
use super::provided_apis::{self, ApiSet};
use super::writes::{CopyWrite, TenantRbac};
use crate::apply;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::{OperatorGroup, OperatorGroupStatus};
use messages::key::ObjectKey;
use messages::msg::ApiChange;
use olm_runtime::error::{self as api_error, Class};
use std::collections::BTreeMap;

/// How many writes of one fan-out run at once.
const FAN_OUT: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing the status of operator group {key}")]
    Status {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("labelling namespace {namespace}")]
    Label {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("annotating csv {key}")]
    Annotate {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("reading operator group {key}")]
    ReadGroup {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("writing olm.providedAPIs of {key}")]
    ProvidedApis {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("olm.providedAPIs of {key} kept changing under us")]
    ProvidedApisContended { key: ObjectKey },
    #[error("applying cluster role {name}")]
    ClusterRole {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("labelling service account {key} as managed")]
    LabelAccount {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("writing the copy {key}")]
    Copy {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub async fn write_status(
    client: &Client,
    key: &ObjectKey,
    status: &OperatorGroupStatus,
) -> Result<OperatorGroup> {
    let api: Api<OperatorGroup> = Api::namespaced(client.clone(), key.namespace_or_empty());
    // A merge patch leaves absent fields alone: send the conditions (maybe empty) explicitly so a removed
    // condition goes away.
    let mut body = serde_json::to_value(status).unwrap_or_default();
    if let Some(obj) = body.as_object_mut() {
        obj.insert(
            "conditions".into(),
            serde_json::to_value(&status.conditions).unwrap_or_default(),
        );
        // Likewise a cleared service account reference.
        obj.entry("serviceAccountRef")
            .or_insert(serde_json::Value::Null);
    }
    let patch = serde_json::json!({ "status": body });
    api.patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::Status {
            key: key.clone(),
            source,
        })
}

/// Label the group's service account `olm.managed=true` (OLM's `UserDefinedServiceAccountSyncer`).
pub async fn label_account(client: &Client, key: &ObjectKey) -> Result<()> {
    let api: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), key.namespace_or_empty());
    let patch =
        serde_json::json!({"metadata": {"labels": {messages::crd::annotations::MANAGED: "true"}}});
    match api
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if api_error::is(&e, Class::NotFound) => Ok(()),
        Err(source) => Err(Error::LabelAccount {
            key: key.clone(),
            source,
        }),
    }
}

pub async fn label_namespaces(client: &Client, changes: Vec<LabelChange>) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let results: Vec<Result<()>> = stream::iter(changes)
        .map(|change| {
            let api = api.clone();
            async move {
                let (namespace, patch) = match change {
                    LabelChange::Add { namespace, key } => (
                        namespace,
                        serde_json::json!({"metadata": {"labels": {key: ""}}}),
                    ),
                    LabelChange::Remove { namespace, key } => (
                        namespace,
                        serde_json::json!({"metadata": {"labels": {key: null}}}),
                    ),
                };
                match api
                    .patch(&namespace, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if api_error::is(&e, Class::NotFound) => Ok(()),
                    Err(source) => Err(Error::Label { namespace, source }),
                }
            }
        })
        .buffer_unordered(FAN_OUT)
        .collect()
        .await;
    results.into_iter().collect()
}

pub async fn annotate_csv(
    client: &Client,
    key: &ObjectKey,
    wanted: &BTreeMap<String, String>,
) -> Result<()> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), key.namespace_or_empty());
    let patch = serde_json::json!({"metadata": {"annotations": wanted}});
    match api
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if api_error::is(&e, Class::NotFound) => Ok(()),
        Err(source) => Err(Error::Annotate {
            key: key.clone(),
            source,
        }),
    }
}

/// Read-modify-write of `olm.providedAPIs` with the resourceVersion as precondition, retried on conflict. Only
/// the group's own actor calls this, one call at a time, so our writers never race each other; the
/// precondition guards against writers outside olm-operator.
pub async fn change_provided_apis(
    client: &Client,
    key: &ObjectKey,
    edit: impl Fn(&ApiSet) -> ApiSet,
) -> Result<ApiSet> {
    let api: Api<OperatorGroup> = Api::namespaced(client.clone(), key.namespace_or_empty());
    for _ in 0..8 {
        let group = api
            .get(&key.name)
            .await
            .map_err(|source| Error::ReadGroup {
                key: key.clone(),
                source,
            })?;
        let current = provided_apis::of_group(&group);
        let wanted = edit(&current);
        if wanted == current {
            return Ok(current);
        }
        let patch = serde_json::json!({"metadata": {
            "resourceVersion": group.metadata.resource_version,
            "annotations": {annotations::PROVIDED_APIS: provided_apis::format(&wanted)},
        }});
        match api
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(wanted),
            Err(e) if api_error::classify(&e).is_conflict() => continue,
            Err(source) => {
                return Err(Error::ProvidedApis {
                    key: key.clone(),
                    source,
                });
            }
        }
    }
    Err(Error::ProvidedApisContended { key: key.clone() })
}

/// The set after `change` (for [`change_provided_apis`]).
pub fn edit_for(change: ApiChange, apis: ApiSet) -> impl Fn(&ApiSet) -> ApiSet {
    move |current| super::intersection::apply(current, change, &apis)
}

/// Server-side apply of generated ClusterRoles (`crate::apply`).
pub async fn apply_cluster_roles(client: &Client, roles: Vec<ClusterRole>) -> Result<()> {
    let api: Api<ClusterRole> = Api::all(client.clone());
    for role in roles {
        apply::apply(&api, &role)
            .await
            .map_err(|f| Error::ClusterRole {
                name: role.metadata.name.clone().unwrap_or_default(),
                source: f.source,
            })?;
    }
    Ok(())
}

/// Run the copy writes, [`FAN_OUT`] at a time. Returns how many API requests were made and the first error.
pub async fn write_copies(client: &Client, writes: Vec<CopyWrite>) -> (usize, Result<()>) {
    let results: Vec<(usize, Result<()>)> = stream::iter(writes)
        .map(|w| write_copy(client.clone(), w))
        .buffer_unordered(FAN_OUT)
        .collect()
        .await;
    let requests = results.iter().map(|(n, _)| n).sum();
    (requests, results.into_iter().try_for_each(|(_, r)| r))
}

async fn write_copy(client: Client, write: CopyWrite) -> (usize, Result<()>) {
    match write {
        CopyWrite::Create(wanted) => {
            let wanted = *wanted;
            let key = ObjectKey::of(&wanted).unwrap_or_else(|| ObjectKey::new("", ""));
            let api: Api<ClusterServiceVersion> = Api::namespaced(client, key.namespace_or_empty());
            let status = wanted.status.clone();
            let created = match api.create(&PostParams::default(), &wanted).await {
                Ok(created) => created,
                Err(e) if api_error::is(&e, Class::AlreadyExists) => return (1, Ok(())),
                Err(source) => return (1, Err(Error::Copy { key, source })),
            };
            let mut with_status = created;
            with_status.status = status;
            match replace_status(&api, &key, &with_status).await {
                Ok(()) => (2, Ok(())),
                Err(e) => (2, Err(e)),
            }
        }
        CopyWrite::Update {
            wanted,
            existing,
            drift,
        } => {
            let (wanted, existing) = (*wanted, *existing);
            let key = ObjectKey::of(&wanted).unwrap_or_else(|| ObjectKey::new("", ""));
            let api: Api<ClusterServiceVersion> = Api::namespaced(client, key.namespace_or_empty());
            let mut requests = 0;
            let mut current = existing;
            if drift.object {
                requests += 1;
                let mut next = current.clone();
                let mut annotations = wanted.metadata.annotations.clone().unwrap_or_default();
                for (k, v) in current.metadata.annotations.clone().unwrap_or_default() {
                    if k != annotations::TARGET_NAMESPACES {
                        annotations.entry(k).or_insert(v);
                    }
                }
                let mut labels = current.metadata.labels.clone().unwrap_or_default();
                labels.extend(wanted.metadata.labels.clone().unwrap_or_default());
                next.metadata.annotations = Some(annotations);
                next.metadata.labels = Some(labels);
                next.spec = wanted.spec.clone();
                match api.replace(&key.name, &PostParams::default(), &next).await {
                    Ok(updated) => current = updated,
                    Err(e)
                        if matches!(
                            api_error::classify(&e),
                            Class::Conflict | Class::AlreadyExists | Class::NotFound
                        ) =>
                    {
                        return (requests, Ok(()));
                    }
                    Err(source) => return (requests, Err(Error::Copy { key, source })),
                }
            }
            if drift.status || current.status != wanted.status {
                requests += 1;
                current.status = wanted.status.clone();
                if let Err(e) = replace_status(&api, &key, &current).await {
                    return (requests, Err(e));
                }
            }
            (requests, Ok(()))
        }
        CopyWrite::Delete(key) => {
            let api: Api<ClusterServiceVersion> = Api::namespaced(client, key.namespace_or_empty());
            match api.delete(&key.name, &DeleteParams::default()).await {
                Ok(_) => (1, Ok(())),
                Err(e) if api_error::is(&e, Class::NotFound) => (1, Ok(())),
                Err(source) => (1, Err(Error::Copy { key, source })),
            }
        }
    }
}

async fn replace_status(
    api: &Api<ClusterServiceVersion>,
    key: &ObjectKey,
    csv: &ClusterServiceVersion,
) -> Result<()> {
    match api
        .replace_status(&key.name, &PostParams::default(), csv)
        .await
    {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                api_error::classify(&e),
                Class::Conflict | Class::AlreadyExists | Class::NotFound
            ) =>
        {
            Ok(())
        }
        Err(source) => Err(Error::Copy {
            key: key.clone(),
            source,
        }),
    }
}

/// Apply the operators' RBAC of one target: Roles by server-side apply (rules refreshed), the rest created
/// only when absent (OLM: bindings are only created; lifted RBAC is create-only).
pub async fn apply_tenant_rbac(client: &Client, rbac: &TenantRbac) -> Result<()> {
    use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
    for role in &rbac.roles {
        let ns = role.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Role> = Api::namespaced(client.clone(), &ns);
        apply::apply(&api, role)
            .await
            .map_err(|f| Error::ClusterRole {
                name: role.metadata.name.clone().unwrap_or_default(),
                source: f.source,
            })?;
    }
    for binding in &rbac.bindings {
        let api: Api<RoleBinding> = Api::namespaced(
            client.clone(),
            binding.metadata.namespace.as_deref().unwrap_or_default(),
        );
        create_if_absent(&api, binding).await?;
    }
    for role in &rbac.cluster_roles {
        create_if_absent(&Api::<ClusterRole>::all(client.clone()), role).await?;
    }
    for binding in &rbac.cluster_bindings {
        create_if_absent(&Api::<ClusterRoleBinding>::all(client.clone()), binding).await?;
    }
    if let Some((csv, namespace)) = &rbac.unlift {
        let params = kube::api::ListParams::default()
            .labels(&crate::rbac::tenant::lifted_selector(csv, namespace));
        let delete = kube::api::DeleteParams::background();
        Api::<ClusterRoleBinding>::all(client.clone())
            .delete_collection(&delete, &params)
            .await
            .map_err(|source| Error::ClusterRole {
                name: format!("lifted bindings of {namespace}/{csv}"),
                source,
            })?;
        Api::<ClusterRole>::all(client.clone())
            .delete_collection(&delete, &params)
            .await
            .map_err(|source| Error::ClusterRole {
                name: format!("lifted roles of {namespace}/{csv}"),
                source,
            })?;
    }
    Ok(())
}

async fn create_if_absent<K>(api: &Api<K>, obj: &K) -> Result<()>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(e) if api_error::is(&e, Class::AlreadyExists) => Ok(()),
        Err(source) => Err(Error::ClusterRole {
            name: obj.meta().name.clone().unwrap_or_default(),
            source,
        }),
    }
}
