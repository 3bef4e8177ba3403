//! The janitor's writes: delete what a gone CSV left in the cluster (by its owner labels), reset the
//! conversion of the CRDs its conversion webhooks served, delete a gone OperatorGroup's ClusterRoles, and the
//! start-up sweep of orphaned cluster RBAC.
//! Each returns the first error (after trying every write) so the loop retries with its backoff.

use super::decide::{self, SweepView};
use crate::csv::served::objects::KUBE_SYSTEM;
use crate::csv::served::webhooks;
use crate::error::Error;
use crate::strategy;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition,
};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, Resource};
use messages::crd::csv::{ClusterServiceVersion, WebhookAdmissionType};
use messages::key::ObjectKey;
use olm_runtime::error::{self as api_error, Class};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Label selector of the ClusterRoles an OperatorGroup makes for its provided APIs.
const OWNED_BY_GROUP: &str = "olm.owner.kind=OperatorGroup";

/// What the sweep lists: cluster RBAC owned by a CSV or by an OperatorGroup (`decide::orphan` tells them apart).
const SWEPT: &str = "olm.owner.kind in (ClusterServiceVersion,OperatorGroup)";

/// Delete a gone OperatorGroup's ClusterRoles (its owner labels).
pub async fn clean_group(client: &Client, key: &ObjectKey) -> Result<(), Error> {
    let selector = format!(
        "{}={},{}={},{OWNED_BY_GROUP}",
        messages::crd::annotations::OWNER,
        key.name,
        messages::crd::annotations::OWNER_NAMESPACE,
        key.namespace_or_empty(),
    );
    delete_labelled(
        Api::<ClusterRole>::all(client.clone()),
        "ClusterRole",
        &selector,
    )
    .await
}

/// Delete every object of kind `K` that `selector` selects (`api` cluster-scoped or namespaced).
async fn delete_labelled<K>(api: Api<K>, kind: &'static str, selector: &str) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    api.delete_collection(
        &DeleteParams::background(),
        &ListParams::default().labels(selector),
    )
    .await
    .map(|_| ())
    .map_err(|source| Error::Apply {
        verb: "delete",
        kind,
        name: selector.to_string(),
        source,
    })
}

/// Delete what the gone CSV served and its cluster RBAC (its namespaced objects go with it through owner
/// references); with `reset_conversions`, its conversion CRDs go back to `strategy: None`.
pub async fn clean(
    client: &Client,
    key: &ObjectKey,
    csv: Option<&ClusterServiceVersion>,
    reset_conversions: bool,
) -> Result<(), Error> {
    let namespace = key.namespace_or_empty();
    let selector = strategy::owner_selector(&key.name, namespace);
    let results = [
        delete_labelled(
            Api::<ValidatingWebhookConfiguration>::all(client.clone()),
            "ValidatingWebhookConfiguration",
            &selector,
        )
        .await,
        delete_labelled(
            Api::<MutatingWebhookConfiguration>::all(client.clone()),
            "MutatingWebhookConfiguration",
            &selector,
        )
        .await,
        delete_labelled(
            Api::<APIService>::all(client.clone()),
            "APIService",
            &selector,
        )
        .await,
        delete_labelled(
            Api::<RoleBinding>::namespaced(client.clone(), KUBE_SYSTEM),
            "RoleBinding",
            &selector,
        )
        .await,
        delete_labelled(
            Api::<ClusterRoleBinding>::all(client.clone()),
            "ClusterRoleBinding",
            &selector,
        )
        .await,
        delete_labelled(
            Api::<ClusterRole>::all(client.clone()),
            "ClusterRole",
            &selector,
        )
        .await,
    ];
    let mut first = results.into_iter().find_map(Result::err);
    if let (true, Some(csv)) = (reset_conversions, csv)
        && let Err(e) = reset_conversion_crds(client, namespace, csv).await
    {
        first.get_or_insert(e);
    }
    first.map_or(Ok(()), Err)
}

/// Put the conversion of each CRD the CSV's conversion webhooks served back to `None`, if it still points at
/// the CSV's service.
async fn reset_conversion_crds(
    client: &Client,
    namespace: &str,
    csv: &ClusterServiceVersion,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut first = None;
    for desc in webhooks::of(csv)
        .iter()
        .filter(|d| d.type_ == WebhookAdmissionType::ConversionWebhook)
    {
        for crd_name in desc.conversion_crds.iter().flatten() {
            let apply_error = |source| Error::Apply {
                verb: "reset the conversion of",
                kind: "CustomResourceDefinition",
                name: crd_name.clone(),
                source,
            };
            let mut crd = match api.get_opt(crd_name).await {
                Ok(Some(crd)) => crd,
                Ok(None) => continue,
                Err(source) => {
                    first.get_or_insert(apply_error(source));
                    continue;
                }
            };
            if !served_by(&crd, namespace, &desc.service_name()) {
                continue;
            }
            crd.spec.conversion = Some(CustomResourceConversion {
                strategy: "None".into(),
                webhook: None,
            });
            if let Err(source) = api.replace(crd_name, &PostParams::default(), &crd).await {
                first.get_or_insert(apply_error(source));
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// The CRD's conversion webhook is the service `namespace/service`.
pub fn served_by(crd: &CustomResourceDefinition, namespace: &str, service: &str) -> bool {
    crd.spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref())
        .and_then(|c| c.service.as_ref())
        .is_some_and(|s| s.namespace == namespace && s.name == service)
}

/// Delete the orphaned cluster-scoped objects (RBAC, and the APIServices and webhook configurations of CSVs: an
/// APIService left pointing at a deleted Service makes every client's discovery wait on it); returns (deleted,
/// orphans too young to judge yet).
pub async fn sweep(client: &Client, view: &SweepView<'_>) -> Result<(usize, usize), Error> {
    let counts = [
        sweep_kind(
            Api::<ClusterRoleBinding>::all(client.clone()),
            "ClusterRoleBinding",
            view,
        )
        .await?,
        sweep_kind(Api::<ClusterRole>::all(client.clone()), "ClusterRole", view).await?,
        sweep_kind(Api::<APIService>::all(client.clone()), "APIService", view).await?,
        sweep_kind(
            Api::<ValidatingWebhookConfiguration>::all(client.clone()),
            "ValidatingWebhookConfiguration",
            view,
        )
        .await?,
        sweep_kind(
            Api::<MutatingWebhookConfiguration>::all(client.clone()),
            "MutatingWebhookConfiguration",
            view,
        )
        .await?,
    ];
    Ok(counts
        .iter()
        .fold((0, 0), |(d, n), (kd, kn)| (d + kd, n + kn)))
}

async fn sweep_kind<K>(
    api: Api<K>,
    kind: &'static str,
    view: &SweepView<'_>,
) -> Result<(usize, usize), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    let list = api
        .list(&ListParams::default().labels(SWEPT))
        .await
        .map_err(|source| Error::Apply {
            verb: "list",
            kind,
            name: SWEPT.to_string(),
            source,
        })?;
    for item in &list.items {
        tracing::debug!(kind, name = ?item.meta().name, verdict = ?decide::orphan(item.meta(), view), "sweep");
    }
    let mut deleted = 0;
    let not_yet = list
        .items
        .iter()
        .filter(|o| decide::orphan(o.meta(), view) == decide::Orphan::NotYet)
        .count();
    for item in list
        .items
        .iter()
        .filter(|o| decide::orphaned(o.meta(), view))
    {
        let Some(name) = item.meta().name.as_deref() else {
            continue;
        };
        // By name through `deletecollection`, which olm-operator holds on every swept kind (it may not
        // `delete` APIServices one by one: rbac_least_privilege).
        let by_name = ListParams::default().fields(&format!("metadata.name={name}"));
        match api
            .delete_collection(&DeleteParams::background(), &by_name)
            .await
        {
            Ok(_) => deleted += 1,
            Err(e) if api_error::is(&e, Class::NotFound) => {}
            Err(source) => {
                return Err(Error::Apply {
                    verb: "delete",
                    kind,
                    name: name.to_string(),
                    source,
                });
            }
        }
    }
    Ok((deleted, not_yet))
}
