//! The CRD-upgrade check's self-grant (catalog-operator/src/self_grant.rs) with catalog-operator running as its
//! deploy/rbac ServiceAccount (a kubeconfig impersonating it, `OPERATOR_SERVICE_ACCOUNT` naming it): a plan
//! upgrading a CRD that has a custom resource lists it through a grant of `list` on exactly that CRD's resources,
//! which is revoked once the check has run; a plan whose new CRD names other resources (`spec.group: ""`,
//! `plural: secrets`, under the stored CRD's name) still gets only the stored CRD's list, and fails when the API
//! server refuses that CRD. A watch of the grants records every version they ever had.

use catalog_operator::self_grant::{GRANT_LABEL, Grantee, cr_list_grant_name};
use futures::StreamExt;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::runtime::watcher;
use messages::crd::install_plan::{
    InstallPlan, InstallPlanPhase, InstallPlanSpec, InstallPlanStatus, Step, StepResource,
    StepStatus,
};
use messages::crd::subscription::Approval;
use olm_tests::catalog_fixture::{DEADLINE, operator_group, plans};
use olm_tests::rbac::{Answer, DeployedRbac, Scope, can_i, kubeconfig_as};
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, eventually, with_namespace};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A namespaced CRD named `name` for `<plural>.<group>`, version v1, whose `spec` has an integer `size`.
fn crd(name: &str, group: &str, plural: &str) -> CustomResourceDefinition {
    let integer = JSONSchemaProps {
        type_: Some("integer".into()),
        ..Default::default()
    };
    let spec = JSONSchemaProps {
        type_: Some("object".into()),
        properties: Some(BTreeMap::from([("size".to_string(), integer)])),
        ..Default::default()
    };
    CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: group.to_string(),
            scope: "Namespaced".into(),
            names: CustomResourceDefinitionNames {
                plural: plural.to_string(),
                singular: Some("widget".into()),
                kind: "Widget".into(),
                list_kind: Some("WidgetList".into()),
                ..Default::default()
            },
            versions: vec![CustomResourceDefinitionVersion {
                name: "v1".into(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(JSONSchemaProps {
                        type_: Some("object".into()),
                        properties: Some(BTreeMap::from([("spec".to_string(), spec)])),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }],
            ..Default::default()
        },
        status: None,
    }
}

/// An approved plan, already resolved, whose one step creates or upgrades `crd`; returns its name.
async fn crd_plan(ctx: &TestContext, crd: &CustomResourceDefinition) -> anyhow::Result<String> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let created = plans(ctx)
        .create(
            &PostParams::default(),
            &InstallPlan {
                metadata: ObjectMeta {
                    generate_name: Some("crd-".into()),
                    ..Default::default()
                },
                spec: InstallPlanSpec {
                    source: None,
                    source_namespace: None,
                    cluster_service_version_names: vec!["widgets.v2".into()],
                    approval: Approval::Automatic,
                    approved: true,
                    generation: Some(1),
                },
                status: None,
            },
        )
        .await?;
    let plan_name = created.metadata.name.clone().unwrap_or_default();
    let mut with_status = created;
    with_status.status = Some(InstallPlanStatus {
        phase: InstallPlanPhase::Installing,
        plan: vec![Step {
            resolving: "widgets.v2".into(),
            resource: StepResource {
                source_name: "cat".into(),
                source_namespace: ctx.namespace.clone(),
                group: "apiextensions.k8s.io".into(),
                version: "v1".into(),
                kind: "CustomResourceDefinition".into(),
                name,
                manifest: serde_json::to_string(crd)?,
            },
            optional: false,
            status: StepStatus::Unknown,
        }],
        ..Default::default()
    });
    plans(ctx)
        .replace_status(&plan_name, &PostParams::default(), &with_status)
        .await?;
    Ok(plan_name)
}

async fn await_plan(
    ctx: &TestContext,
    name: &str,
    phase: InstallPlanPhase,
) -> anyhow::Result<InstallPlan> {
    await_object(&plans(ctx), name, DEADLINE, &format!("{phase:?}"), |p| {
        p.and_then(|p| p.status.as_ref())
            .is_some_and(|s| s.phase == phase)
    })
    .await
}

/// Every `rules` the grants labelled for `namespace` have had, from a watch started before any exists.
struct GrantHistory {
    seen: Arc<Mutex<Vec<Vec<PolicyRule>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl GrantHistory {
    async fn start(ctx: &TestContext) -> anyhow::Result<Self> {
        let roles: Api<ClusterRole> = Api::all(ctx.client.clone());
        let config = watcher::Config::default().labels(&format!("{GRANT_LABEL}={}", ctx.namespace));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (listed, ready) = tokio::sync::oneshot::channel();
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                let mut listed = Some(listed);
                let mut events = watcher(roles, config).boxed();
                while let Some(event) = events.next().await {
                    match event {
                        Ok(watcher::Event::InitDone) => {
                            if let Some(tx) = listed.take() {
                                let _ = tx.send(());
                            }
                        }
                        Ok(watcher::Event::Apply(role) | watcher::Event::InitApply(role)) => seen
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push(role.rules.unwrap_or_default()),
                        Ok(_) | Err(_) => {}
                    }
                }
            }
        });
        tokio::time::timeout(DEADLINE, ready).await??;
        Ok(Self { seen, task })
    }

    fn rules(&self) -> Vec<Vec<PolicyRule>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for GrantHistory {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn the_crd_upgrade_check_lists_through_a_grant_of_the_stored_crd_and_revokes_it()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "crdgrant", |ctx| async move {
        let rbac = DeployedRbac::apply(&ctx)?;
        let result = upgrade_as_the_service_account(&ctx, &rbac).await;
        rbac.delete_cluster_objects(&ctx);
        let roles: Api<ClusterRole> = Api::all(ctx.client.clone());
        let bindings: Api<ClusterRoleBinding> = Api::all(ctx.client.clone());
        let grants =
            kube::api::ListParams::default().labels(&format!("{GRANT_LABEL}={}", ctx.namespace));
        let _ = roles.delete_collection(&Default::default(), &grants).await;
        let _ = bindings
            .delete_collection(&Default::default(), &grants)
            .await;
        result
    })
    .await
}

async fn upgrade_as_the_service_account(
    ctx: &TestContext,
    rbac: &DeployedRbac,
) -> anyhow::Result<()> {
    let group = format!("{}.grant.olm-rs.io", ctx.namespace);
    let crd_name = format!("widgets.{group}");
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    crds.create(&PostParams::default(), &crd(&crd_name, &group, "widgets"))
        .await?;
    let result = upgrade_existing(ctx, rbac, &crd_name, &group).await;
    let _ = crds.delete(&crd_name, &Default::default()).await;
    result
}

async fn upgrade_existing(
    ctx: &TestContext,
    rbac: &DeployedRbac,
    crd_name: &str,
    group: &str,
) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    olm_tests::widgets::await_established(&ctx.client, crd_name, DEADLINE).await?;
    let ar = ApiResource {
        group: group.to_string(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let mut widget = DynamicObject::new("small", &ar).within(&ctx.namespace);
    widget.data = serde_json::json!({"spec": {"size": 3}});
    Api::<DynamicObject>::namespaced_with(ctx.client.clone(), &ctx.namespace, &ar)
        .create(&PostParams::default(), &widget)
        .await?;
    operator_group(ctx).await?;

    let history = GrantHistory::start(ctx).await?;
    let account = rbac.account("catalog-operator");
    let user = rbac.user("catalog-operator");
    let kubeconfig = kubeconfig_as(ctx, &user)?;
    let kubeconfig = kubeconfig.display().to_string();
    let _operator = OperatorProcess::start_with_env(
        ctx.cluster,
        "catalog-operator",
        &[
            "--watched-namespaces",
            &ctx.namespace,
            "--namespace",
            &ctx.namespace,
            "--install-plan-retry-timeout",
            "2s",
        ],
        &[
            ("KUBECONFIG", kubeconfig.as_str()),
            ("OPERATOR_SERVICE_ACCOUNT", account.as_str()),
        ],
    )
    .await?;
    let widgets = format!("widgets.{group}");
    anyhow::ensure!(
        can_i(ctx, &user, "list", &widgets, Scope::AllNamespaces)? == Answer::No,
        "{account} lists {widgets} before the plan: deploy/rbac grants it"
    );

    // An upgrade the existing widget passes (a new optional field): listed through the grant, then revoked.
    let mut upgraded = crd(crd_name, group, "widgets");
    if let Some(spec) = upgraded.spec.versions[0]
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
        .and_then(|s| s.properties.as_mut())
        .and_then(|p| p.get_mut("spec"))
        .and_then(|s| s.properties.as_mut())
    {
        spec.insert(
            "label".into(),
            JSONSchemaProps {
                type_: Some("string".into()),
                ..Default::default()
            },
        );
    }
    let plan = crd_plan(ctx, &upgraded).await?;
    await_plan(ctx, &plan, InstallPlanPhase::Complete).await?;
    let stored = crds.get(crd_name).await?;
    let stored_spec = serde_json::to_value(&stored.spec)?;
    anyhow::ensure!(
        stored_spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["label"]
            .is_object(),
        "the CRD was not upgraded: {stored_spec}"
    );
    let grantee = Grantee {
        namespace: ctx.namespace.clone(),
        name: account.clone(),
        package_server: None,
    };
    let grant = cr_list_grant_name(&grantee, crd_name);
    let revoked = |what: &'static str| {
        let grant = grant.clone();
        async move {
            let roles: Api<ClusterRole> = Api::all(ctx.client.clone());
            let bindings: Api<ClusterRoleBinding> = Api::all(ctx.client.clone());
            let role = roles.get_opt(&grant).await?;
            let binding = bindings.get_opt(&grant).await?;
            anyhow::ensure!(
                role.as_ref()
                    .is_some_and(|r| r.rules.as_ref().is_none_or(Vec::is_empty)),
                "{what}: the grant's role still holds rules (or was never made): {role:?}"
            );
            anyhow::ensure!(
                binding
                    .as_ref()
                    .is_some_and(|b| b.subjects.as_ref().is_none_or(Vec::is_empty)),
                "{what}: the grant's binding still names a subject: {binding:?}"
            );
            anyhow::Ok(())
        }
    };
    revoked("after the upgrade").await?;
    eventually(DEADLINE, "the list grant revoked", || async {
        Ok(
            (can_i(ctx, &user, "list", &widgets, Scope::AllNamespaces)? == Answer::No)
                .then_some(()),
        )
    })
    .await?;

    // A new CRD naming other resources under the stored CRD's name: the grant is still the stored CRD's, and the
    // API server refuses the replace.
    let hostile = crd(crd_name, "", "secrets");
    let plan = crd_plan(ctx, &hostile).await?;
    let failed = await_plan(ctx, &plan, InstallPlanPhase::Failed).await?;
    revoked("after the refused upgrade").await?;
    anyhow::ensure!(
        can_i(ctx, &user, "list", "secrets", Scope::AllNamespaces)? == Answer::No,
        "{account} lists secrets after the refused upgrade"
    );

    let wanted = PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(vec!["widgets".to_string()]),
        verbs: vec!["list".to_string()],
        ..Default::default()
    };
    let history = history.rules();
    anyhow::ensure!(
        history
            .iter()
            .any(|rules| rules == std::slice::from_ref(&wanted)),
        "the check never granted the list of {widgets} (the plan listed without it?): {history:?}; plan: {:?}",
        failed.status.map(|s| s.message)
    );
    let strays: Vec<_> = history
        .iter()
        .filter(|rules| !rules.is_empty() && *rules != std::slice::from_ref(&wanted))
        .collect();
    anyhow::ensure!(
        strays.is_empty(),
        "a grant named other resources than {widgets}: {strays:?}"
    );
    Ok(())
}
