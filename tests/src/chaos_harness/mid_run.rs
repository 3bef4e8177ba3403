//! The workload's mid-run changes, made with the test's own client (never through the fault proxy) while the
//! faults go on: the Manual plan approved, the global group narrowed, the temp namespace created and deleted; the
//! states the fault-free run waits for instead of a seeded moment; the run's namespaces made and removed.

use super::workload::{
    CONVERGE, GLOBAL_HEAD, SIDE_HEAD, Scope, TEMP_HEAD, gizmo, in_namespace, namespaces,
};
use crate::catalog_fixture::*;
use crate::converge::cluster_rbac;
use crate::{TestContext, eventually};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use messages::crd::annotations::OWNER_NAMESPACE;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::operator_group::OperatorGroup;
use serde_json::json;

/// Narrow the global OperatorGroup from all namespaces to the first (the same in every run; seeds: at a seeded
/// moment; the baseline: once the global CSV is copied into the second namespace).
pub async fn narrow_global(ctx: &TestContext) -> anyhow::Result<()> {
    let groups: Api<OperatorGroup> =
        Api::namespaced(ctx.client.clone(), &format!("{}-g", ctx.namespace));
    groups
        .patch(
            "global",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"targetNamespaces": [ctx.namespace]}})),
        )
        .await?;
    Ok(())
}

/// A user's write made mid-run, while etcd or the apiserver may be restarting (the test's own client does not
/// go through the fault proxy, but a restart breaks it too): retried until it is done, within [`CONVERGE`].
/// The write must be idempotent ([`exists_is_done`]).
pub async fn until_done<F, Fut>(what: &str, mut write: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    eventually(CONVERGE, what, || {
        let done = write();
        async move { done.await.map(Some) }
    })
    .await
}

/// A create retried after a lost answer may find its object made: that is done.
pub fn exists_is_done<T>(result: anyhow::Result<T>) -> anyhow::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(e)
            if e.downcast_ref::<kube::Error>().is_some_and(
                |k| matches!(k, kube::Error::Api(s) if s.reason == "AlreadyExists"),
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The namespace created mid-run: an OperatorGroup and an Automatic Subscription to `temp` (whose CSV has
/// `clusterPermissions`), from the first namespace's ConfigMap catalog.
pub async fn create_temp(ctx: &TestContext) -> anyhow::Result<()> {
    let nsd = format!("{}-d", ctx.namespace);
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(nsd.clone());
    ns.metadata.labels = Some([("olm-rs.io/test".to_string(), "true".to_string())].into());
    exists_is_done(
        api.create(&PostParams::default(), &ns)
            .await
            .map_err(anyhow::Error::from),
    )?;
    let temp = in_namespace(ctx, nsd);
    exists_is_done(operator_group(&temp).await)?;
    exists_is_done(
        subscription(
            &temp,
            sub_to(&temp, "temp", "temp", "cat")
                .source("cat", &ctx.namespace)
                .approval(Approval::Automatic),
        )
        .await,
    )
}

pub async fn delete_temp(ctx: &TestContext) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    match api
        .delete(&format!("{}-d", ctx.namespace), &DeleteParams::background())
        .await
    {
        Ok(_) => Ok(()),
        // Deleted by an earlier try whose answer was lost.
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The baseline's moments (states, not times): the global CSV copied into the second namespace before the
/// group narrows; the temp CSV Succeeded with its cluster RBAC made before its namespace is deleted.
pub async fn copied_into_second(ctx: &TestContext) -> anyhow::Result<Option<()>> {
    let csvs: Api<ClusterServiceVersion> =
        Api::namespaced(ctx.client.clone(), &format!("{}-b", ctx.namespace));
    Ok(csvs
        .get_opt(GLOBAL_HEAD)
        .await?
        .filter(|c| c.phase() == CsvPhase::Succeeded)
        .map(|_| ()))
}

pub async fn temp_installed(ctx: &TestContext) -> anyhow::Result<Option<()>> {
    let nsd = format!("{}-d", ctx.namespace);
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &nsd);
    let succeeded = csvs
        .get_opt(TEMP_HEAD)
        .await?
        .is_some_and(|c| c.phase() == CsvPhase::Succeeded);
    let cluster = cluster_rbac(&ctx.client, &nsd).await?;
    let made = ["ClusterRoles", "ClusterRoleBindings"].iter().all(|kind| {
        cluster
            .iter()
            .any(|(k, owner, _)| k == kind && owner == TEMP_HEAD)
    });
    Ok((succeeded && made).then_some(()))
}

/// Create the run's namespaces ([`namespaces`]) but the one made and deleted mid-run.
pub async fn create_namespaces(ctx: &TestContext, scope: Scope) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    for (_, name) in namespaces(&ctx.namespace, scope)
        .into_iter()
        .filter(|(role, _)| *role != "nsd")
    {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name);
        ns.metadata.labels = Some([("olm-rs.io/test".to_string(), "true".to_string())].into());
        api.create(&PostParams::default(), &ns).await?;
    }
    Ok(())
}

/// Delete the run's namespaces, its CRD and the cluster-scoped RBAC labelled as owned in its namespaces (what
/// the operators' janitor deletes while they run; they are stopped by now). Best effort: the run's result is
/// already known. `OLM_TEST_NO_CLEANUP` keeps everything.
pub async fn delete_namespaces(ctx: &TestContext, scope: Scope) {
    if std::env::var_os("OLM_TEST_NO_CLEANUP").is_some() {
        return;
    }
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let roles: Api<ClusterRole> = Api::all(ctx.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.client.clone());
    for (_, name) in namespaces(&ctx.namespace, scope) {
        let _ = api.delete(&name, &DeleteParams::background()).await;
        let owned = ListParams::default().labels(&format!("{OWNER_NAMESPACE}={name}"));
        let _ = roles
            .delete_collection(&DeleteParams::background(), &owned)
            .await;
        let _ = bindings
            .delete_collection(&DeleteParams::background(), &owned)
            .await;
    }
    if scope == Scope::Full {
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let _ = crds
            .delete(&gizmo(&ctx.namespace).name(), &DeleteParams::background())
            .await;
    }
}

/// Whether every namespace of the run is gone (a rerun of a seed uses the same names) and nothing of an earlier
/// run is left in them ([`super::leftovers`]: what is found is removed, named on stderr, and looked at again).
pub async fn namespaces_gone(ctx: &TestContext, scope: Scope) -> anyhow::Result<Option<()>> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    for (_, name) in namespaces(&ctx.namespace, scope) {
        if api.get_opt(&name).await?.is_some() {
            return Ok(None);
        }
    }
    let mut left = Vec::new();
    for (_, name) in namespaces(&ctx.namespace, scope) {
        for found in super::leftovers::remove(&ctx.client, &name).await? {
            left.push(format!("{name}: {found}"));
        }
    }
    if left.is_empty() {
        return Ok(Some(()));
    }
    eprintln!(
        "chaos: the deleted namespaces of an earlier run left {} objects (removed): {}",
        left.len(),
        left.join(", ")
    );
    Ok(None)
}

/// Whether the namespace created and deleted mid-run reads as gone.
pub async fn temp_gone(ctx: &TestContext) -> anyhow::Result<Option<()>> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let nsd = format!("{}-d", ctx.namespace);
    Ok(api.get_opt(&nsd).await?.is_none().then_some(()))
}

/// Approve the side Subscription's Manual plan once it exists (a user approving mid-run, under the faults):
/// `spec.approved` set on the plan for [`SIDE_HEAD`], with the test's own client (not through the fault proxy).
pub async fn approve_side(ctx: &TestContext) -> anyhow::Result<()> {
    eventually(
        CONVERGE,
        "the side Subscription's plan approved",
        || async {
            for p in plans(ctx).list(&ListParams::default()).await?.items {
                if p.spec.cluster_service_version_names != [SIDE_HEAD]
                    || !p.spec.approval.is_manual()
                {
                    continue;
                }
                if !p.spec.approved {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    crate::catalog_fixture::approve_plan(&plans(ctx), &name).await?;
                }
                return Ok(Some(()));
            }
            Ok(None)
        },
    )
    .await
}
