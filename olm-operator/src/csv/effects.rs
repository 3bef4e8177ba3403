//! The I/O of one reconcile, run inside the actor's `AtomicResponse` so reconciles of one CSV never
//! interleave: annotate, ensure RBAC, install (server-side apply the strategy's RBAC and Deployments, see
//! `crate::apply`; delete CSV-owned deployments no longer in it), delete the CSV, then write the status
//! subresource and emit an Event for a phase change. Install errors become a Failed status here (classified in
//! `error.rs`).

use super::apply_object::{apply_object, shown};
use super::machine::{self, Decision, Effect, Step};
use super::status;
use crate::error::Error;
use crate::events;
use crate::strategy::{self, Rendered};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::events::Recorder;
use kube::{Api, Client, Resource};
use messages::crd::csv::{ClusterServiceVersion, RequirementStatus};
use messages::key::ObjectKey;
use olm_runtime::error::{self as api_error, Class};
use std::sync::Arc;

/// Everything one reconcile's I/O needs (all owned, so the future is `'static`).
pub struct Plan {
    pub key: ObjectKey,
    pub csv: Arc<ClusterServiceVersion>,
    pub decision: Decision,
    pub requirement_statuses: Vec<RequirementStatus>,
    pub rendered: Option<Rendered>,
    /// Skip `EnsureRbac` when every service account requirement is already present.
    pub rbac_in_place: bool,
    /// For the effects that message other actors (the OperatorGroup's).
    pub shared: crate::shared::Shared,
    /// The CSV's OperatorCondition as the store had it.
    pub operator_condition: Option<Arc<messages::crd::operator_condition::OperatorCondition>>,
}

/// What happened.
#[derive(Default)]
pub struct Applied {
    /// The CSV as written by our status patch (fresher than the watch).
    pub written: Option<Arc<ClusterServiceVersion>>,
    pub error: Option<Error>,
    pub deleted: bool,
    pub announced: bool,
}

pub async fn apply(client: Client, recorder: Recorder, plan: Plan) -> Applied {
    let Plan {
        key,
        csv,
        decision,
        requirement_statuses,
        rendered,
        rbac_in_place,
        shared,
        operator_condition,
    } = plan;
    let namespace = key.namespace_or_empty().to_string();
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), &namespace);
    let mut step = decision.step.clone();
    let mut applied = Applied::default();
    let mut certs = None;
    // The CSV's RBAC and Deployments are written as the OperatorGroup's service account, if it names one.
    let applier = super::scoped::granted_applier(&client, &shared, &namespace).await;
    for effect in &decision.effects {
        let result = match effect {
            Effect::AnnotateGroup(wanted) => {
                let patch = serde_json::json!({ "metadata": { "annotations": wanted } });
                csvs.patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
                    .map_err(|source| Error::Annotate {
                        key: key.clone(),
                        source,
                    })
            }
            Effect::EnsureRbac if rbac_in_place => Ok(()),
            Effect::EnsureRbac => match (&rendered, &applier) {
                (Some(r), Ok(applier)) => ensure_rbac(&applier.client, r).await,
                (Some(_), Err(message)) => Err(Error::Scoped(message.clone())),
                (None, _) => Ok(()),
            },
            Effect::Install => {
                let installed = match (&rendered, &applier) {
                    (Some(r), Ok(applier)) => super::served::install::with_certs(
                        &client,
                        &shared,
                        &csv,
                        r,
                        async |r: &Rendered| {
                            let known = shared.stores.csv.deployments.state();
                            install(
                                &applier.client,
                                &namespace,
                                &key.name,
                                r,
                                &known,
                                rbac_in_place,
                            )
                            .await
                        },
                    )
                    .await
                    .map(|times| certs = times),
                    (Some(_), Err(message)) => Err(Error::Scoped(message.clone())),
                    (None, _) => Ok(()),
                };
                if let Err(e) = installed {
                    // Acting as the group's account too: a forbidden write fails the CSV for good until the
                    // group's account changes (OLM retries; we do not watch users' RBAC, see the README).
                    let unrecoverable = matches!(e.kind(), Class::Forbidden | Class::Invalid);
                    step = Step::To(machine::install_failed(unrecoverable, &e.chain()));
                    tracing::warn!(csv = %key, error = &e as &dyn std::error::Error, "install failed");
                    applied.error = Some(e);
                }
                Ok(())
            }
            Effect::CountUpgrade => Ok(()),
            Effect::ChangeProvidedApis(change, apis) => {
                // A refusal or a lost reply is retried by the decision's recheck; it is not an API error of ours.
                if let Err(e) = crate::operator_group::notify::change_provided_apis(
                    &shared,
                    &key,
                    *change,
                    apis.clone(),
                )
                .await
                {
                    tracing::warn!(csv = %key, error = %api_error::chain(&e), "the operator group did not change its provided apis");
                }
                Ok(())
            }
            Effect::CleanupDeployments => cleanup_deployments(&client, &namespace, &key.name).await,
            Effect::EnsureOperatorCondition => crate::operator_condition::sync::ensure(
                &client,
                &csv,
                operator_condition.as_deref(),
            )
            .await
            .map_err(|source| Error::Apply {
                verb: "ensure",
                kind: "OperatorCondition",
                name: key.to_string(),
                source,
            }),
            Effect::SettleCaBundles => super::served::install::settle(&client, &shared, &csv).await,
            Effect::DeleteSelf => match csvs.delete(&key.name, &DeleteParams::background()).await {
                Ok(_) => {
                    applied.deleted = true;
                    Ok(())
                }
                Err(e) if api_error::is(&e, Class::NotFound) => {
                    applied.deleted = true;
                    Ok(())
                }
                Err(source) => Err(Error::DeleteCsv {
                    key: key.clone(),
                    source,
                }),
            },
        };
        if let Err(e) = result {
            tracing::warn!(csv = %key, error = &e as &dyn std::error::Error, "effect failed");
            if matches!(effect, Effect::AnnotateGroup(_) | Effect::DeleteSelf) {
                applied.error = Some(e);
                return applied;
            }
            applied.error.get_or_insert(e);
        }
    }
    if applied.deleted {
        return applied;
    }
    let now = Time(Timestamp::now());
    let update = status::next_status(csv.status.as_ref(), &step, &requirement_statuses, &now);
    if let Some(update) = &update {
        let patch = serde_json::json!({ "status": update.status });
        match csvs
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(written) => applied.written = Some(Arc::new(written)),
            Err(source) => {
                let e = Error::PatchStatus {
                    key: key.clone(),
                    source,
                };
                tracing::warn!(csv = %key, error = &e as &dyn std::error::Error, "status write failed");
                applied.error = Some(e);
                return applied;
            }
        }
    }
    // After the status write above, which carries the old certificate times.
    if let Some(times) = certs {
        match super::served::install::write_cert_times(&csvs, &key.name, times).await {
            Ok(written) => applied.written = Some(Arc::new(written)),
            Err(e) => {
                tracing::warn!(csv = %key, error = &e as &dyn std::error::Error, "cannot write the certificate times");
                applied.error.get_or_insert(e);
            }
        }
    }
    let Some(update) = update else {
        return applied;
    };
    if let Some(t) = update.announce {
        applied.announced = true;
        events::announce_phase(
            &shared.process.phase_events,
            recorder,
            csv.object_ref(&()),
            &t,
        )
        .await;
    }
    applied
}

async fn ensure_rbac(client: &Client, r: &Rendered) -> Result<(), Error> {
    for sa in &r.service_accounts {
        ensure_account(namespaced(client, sa), sa).await?;
    }
    for role in &r.roles {
        apply_object(namespaced(client, role), role, "Role").await?;
    }
    for binding in &r.role_bindings {
        apply_object(namespaced(client, binding), binding, "RoleBinding").await?;
    }
    for role in &r.cluster_roles {
        apply_object(Api::all(client.clone()), role, "ClusterRole").await?;
    }
    for binding in &r.cluster_role_bindings {
        apply_object(Api::all(client.clone()), binding, "ClusterRoleBinding").await?;
    }
    Ok(())
}

async fn install(
    client: &Client,
    namespace: &str,
    csv_name: &str,
    r: &Rendered,
    known: &[Arc<Deployment>],
    rbac_in_place: bool,
) -> Result<(), Error> {
    // RBAC already granting what the CSV asks for (the InstallPlan created it, or `EnsureRbac` did) is not
    // written again: that was a create, a read and a replace per object on every install (issue 19).
    if !rbac_in_place {
        ensure_rbac(client, r).await?;
    }
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for d in &r.deployments {
        apply_object(api.clone(), d, "Deployment").await?;
    }
    // CSV-owned deployments the strategy no longer lists are deleted (found in the Deployment store).
    let wanted: Vec<&str> = r
        .deployments
        .iter()
        .filter_map(|d| d.metadata.name.as_deref())
        .collect();
    for name in super::stale::stale_deployments(known, csv_name, namespace, &wanted) {
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if api_error::is(&e, Class::NotFound) => {}
            Err(source) => {
                return Err(Error::Apply {
                    verb: "delete",
                    kind: "Deployment",
                    name,
                    source,
                });
            }
        }
    }
    Ok(())
}

fn namespaced<K>(client: &Client, obj: &K) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(
        client.clone(),
        obj.meta().namespace.as_deref().unwrap_or_default(),
    )
}

/// Create the service account, or add this CSV to the owners of an existing one (a newer CSV of the same
/// operator shares its predecessor's account; OLM's catalog operator adopts it likewise). Nothing else of an
/// existing account is touched: its token secrets are its own. Not applied: an apply of our owner reference
/// alone would drop the predecessor's reference we applied before, and the account is shared with the
/// InstallPlan that created it and with users (docs/applying-objects.md).
async fn ensure_account(api: Api<ServiceAccount>, sa: &ServiceAccount) -> Result<(), Error> {
    let err = |verb: &'static str| {
        move |source| Error::Apply {
            verb,
            kind: "ServiceAccount",
            name: shown(sa),
            source,
        }
    };
    match api.create(&crate::apply::post_params(), sa).await {
        Ok(_) => return Ok(()),
        Err(e) if api_error::is(&e, Class::AlreadyExists) => {}
        Err(source) => return Err(err("create")(source)),
    }
    let name = sa.meta().name.clone().unwrap_or_default();
    let live = api.get(&name).await.map_err(err("read"))?;
    let mut owners = live.metadata.owner_references.clone().unwrap_or_default();
    let mine = sa.metadata.owner_references.clone().unwrap_or_default();
    let missing: Vec<_> = mine
        .into_iter()
        .filter(|m| !owners.iter().any(|o| o.uid == m.uid))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    owners.extend(missing);
    let patch = serde_json::json!({ "metadata": { "ownerReferences": owners, "resourceVersion": live.metadata.resource_version } });
    let params = PatchParams {
        field_manager: Some(crate::apply::MANAGER.into()),
        ..PatchParams::default()
    };
    api.patch(&name, &params, &Patch::Merge(&patch))
        .await
        .map(|_| ())
        .map_err(err("adopt"))
}

/// Delete the deployments labelled for this CSV (OperatorGroup provided-API failures; OLM's cleanup).
async fn cleanup_deployments(client: &Client, namespace: &str, csv: &str) -> Result<(), Error> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(&strategy::owner_selector(csv, namespace));
    let listed = api
        .list_metadata(&params)
        .await
        .map_err(|source| Error::Apply {
            verb: "list",
            kind: "Deployment",
            name: csv.to_string(),
            source,
        })?;
    for deployment in listed.items {
        let name = deployment.metadata.name.unwrap_or_default();
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if api_error::is(&e, Class::NotFound) => {}
            Err(source) => {
                return Err(Error::Apply {
                    verb: "delete",
                    kind: "Deployment",
                    name,
                    source,
                });
            }
        }
    }
    Ok(())
}
