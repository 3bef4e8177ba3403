//! Installing with the OperatorGroup's service account (OLM's scoped install, issue 17): when the group names
//! `spec.serviceAccountName`, catalog-operator applies the InstallPlan's steps acting as that account (CRDs with
//! its own identity, as OLM does). An account with the rights the plan needs installs it, and the plan records
//! the account in `status.attenuatedServiceAccountRef`; a step the account may not perform keeps the plan
//! `Installing` with OLM's "retrying execution due to error: …" message carrying the API server's forbidden
//! text, creates nothing past the permitted steps, and completes once the rights are granted (OLM never fails a
//! plan on a forbidden error); a group naming an account that does not exist holds the plan with OLM's
//! `InstallCheckFailed` message until the account appears. With the operators running as their deploy/rbac
//! ServiceAccounts (no `impersonate` at all), each grants itself the impersonation of exactly that account, in
//! that namespace, and can impersonate no other.

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::install_plan::{
    InstallPlan, InstallPlanConditionType, InstallPlanPhase, StepStatus,
};
use messages::crd::operator_group::{OperatorGroup, OperatorGroupSpec};
use olm_tests::catalog_fixture::*;
use olm_tests::rbac::{Answer, DeployedRbac, Scope, can_i, kubeconfig_as};
use olm_tests::{OperatorProcess, TestContext, await_object, with_namespace};

/// The account the group names.
const DEPLOYER: &str = "deployer";

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(own(groups)),
        resources: Some(own(resources)),
        verbs: own(verbs),
        ..Default::default()
    }
}

fn meta(ctx: &TestContext, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(ctx.namespace.clone()),
        ..Default::default()
    }
}

async fn service_account(ctx: &TestContext, name: &str) -> anyhow::Result<()> {
    let api: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let sa = ServiceAccount {
        metadata: meta(ctx, name),
        ..Default::default()
    };
    api.create(&PostParams::default(), &sa).await?;
    Ok(())
}

/// A Role `name` with `rules`, bound to the deployer account.
async fn grant(ctx: &TestContext, name: &str, rules: Vec<PolicyRule>) -> anyhow::Result<()> {
    let roles: Api<Role> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let role = Role {
        metadata: meta(ctx, name),
        rules: Some(rules),
    };
    roles.create(&PostParams::default(), &role).await?;
    let bindings: Api<RoleBinding> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let binding = RoleBinding {
        metadata: meta(ctx, name),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: DEPLOYER.into(),
            namespace: Some(ctx.namespace.clone()),
            ..Default::default()
        }]),
    };
    bindings.create(&PostParams::default(), &binding).await?;
    Ok(())
}

/// The OperatorGroup `og` targeting its own namespace and naming the deployer account.
async fn scoped_group(ctx: &TestContext) -> anyhow::Result<()> {
    let api: Api<OperatorGroup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let og = OperatorGroup::new(
        "og",
        OperatorGroupSpec {
            target_namespaces: Some(vec![ctx.namespace.clone()]),
            service_account_name: Some(DEPLOYER.into()),
            ..Default::default()
        },
    );
    api.create(&PostParams::default(), &og).await?;
    Ok(())
}

/// Both operators, the scoped group, a catalog with one operator `scoped` (its CSV asks for a ServiceAccount,
/// a Role and a RoleBinding, and owns a CRD) and a Subscription to it; returns the operators and the CRD.
async fn install(ctx: &TestContext) -> anyhow::Result<(OperatorProcess, OperatorProcess, Crd)> {
    let olm = olm_operator(ctx).await?;
    // A short retry window: a forbidden step must outlive it (OLM never fails a plan on a forbidden error).
    let cat = catalog_operator(ctx, &["--install-plan-retry-timeout", "1s"]).await?;
    scoped_group(ctx).await?;
    let crd = Crd::new(
        "scopedthings",
        &format!("{}.scoped.test", ctx.namespace),
        "ScopedThing",
    );
    configmap_catalog(
        ctx,
        "cat",
        &Catalog::with(vec![Op::new("scoped", "1.0.0").owns(&crd)]),
        0,
    )
    .await?;
    subscription(ctx, sub_to(ctx, "scoped", "scoped", "cat")).await?;
    Ok((olm, cat, crd))
}

/// The name of the Subscription's InstallPlan, once it has one.
async fn plan_name(ctx: &TestContext) -> anyhow::Result<String> {
    let sub = await_sub(ctx, "scoped", "an InstallPlan", |s| {
        s.install_plan.is_some()
    })
    .await?;
    Ok(sub
        .status
        .and_then(|s| s.install_plan)
        .map(|p| p.name)
        .unwrap_or_default())
}

fn step_status(ip: &InstallPlan, kind: &str) -> Vec<StepStatus> {
    ip.status
        .iter()
        .flat_map(|s| &s.plan)
        .filter(|s| s.resource.kind == kind)
        .map(|s| s.status.clone())
        .collect()
}

fn attenuated(ip: &InstallPlan) -> Option<String> {
    ip.status
        .as_ref()
        .and_then(|s| s.attenuated_service_account_ref.as_ref())
        .and_then(|r| r.name.clone())
}

fn installed_condition(ip: &InstallPlan) -> Option<(String, String, String)> {
    ip.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == InstallPlanConditionType::Installed)
            .map(|c| {
                (
                    c.status.clone(),
                    c.reason.as_str().to_string(),
                    c.message.clone(),
                )
            })
    })
}

/// What the account needs for this plan: its CSV, ServiceAccount, Role (granting configmaps get/list, which the
/// account must hold itself to grant) and RoleBinding steps, and the Deployment olm-operator writes. No CRD
/// rights: the CRD step is the operator's.
fn install_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["operators.coreos.com"],
            &["clusterserviceversions"],
            &["*"],
        ),
        rule(&[""], &["serviceaccounts"], &["*"]),
        rule(
            &["rbac.authorization.k8s.io"],
            &["roles", "rolebindings"],
            &["*"],
        ),
        rule(&[""], &["configmaps"], &["get", "list"]),
        rule(&["apps"], &["deployments"], &["*"]),
    ]
}

#[tokio::test]
async fn a_group_account_with_the_needed_rights_installs_and_is_recorded_on_the_plan()
-> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "scopedok", |ctx| async move {
        service_account(&ctx, DEPLOYER).await?;
        grant(&ctx, "deployer-installs", install_rules()).await?;
        let (_olm, _cat, crd) = install(&ctx).await?;
        let name = plan_name(&ctx).await?;
        let ip = await_object(&plans(&ctx), &name, DEADLINE, "Complete", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
        })
        .await?;
        assert_eq!(attenuated(&ip).as_deref(), Some(DEPLOYER));
        assert_eq!(
            installed_condition(&ip).map(|c| (c.0, c.1)),
            Some(("True".to_string(), String::new()))
        );
        for kind in [
            "ClusterServiceVersion",
            "ServiceAccount",
            "Role",
            "RoleBinding",
        ] {
            let got = step_status(&ip, kind);
            assert!(
                matches!(got.as_slice(), [StepStatus::Created | StepStatus::Present]),
                "{kind}: {got:?}"
            );
        }
        // The account may not create CRDs; OLM applies them with its own identity, and so do we.
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        assert!(crds.get_opt(&crd.name()).await?.is_some());

        // olm-operator writes the CSV's RBAC and Deployment as the account too (it holds `deployments` rights).
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(&csvs, "scoped.v1.0.0", DEADLINE, "Succeeded", |c| {
            c.is_some_and(|c| c.phase() == CsvPhase::Succeeded)
        })
        .await?;
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(deployments.get_opt("scoped-operator").await?.is_some());
        let _ = crds.delete(&crd.name(), &Default::default()).await;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_step_the_account_may_not_perform_waits_with_the_forbidden_message_until_granted()
-> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "scopedno", |ctx| async move {
        service_account(&ctx, DEPLOYER).await?;
        // CSVs only: the plan's ServiceAccount step is the first the account may not perform.
        grant(
            &ctx,
            "deployer-csvs",
            vec![rule(&["operators.coreos.com"], &["clusterserviceversions"], &["*"])],
        )
        .await?;
        let (_olm, _cat, crd) = install(&ctx).await?;
        let name = plan_name(&ctx).await?;
        let denied = format!(
            "error creating ServiceAccount scoped-operator: serviceaccounts is forbidden: User \"system:serviceaccount:{ns}:{DEPLOYER}\" cannot create resource \"serviceaccounts\" in API group \"\" in the namespace \"{ns}\"",
            ns = ctx.namespace
        );
        let ip = await_object(&plans(&ctx), &name, DEADLINE, "the forbidden message", |ip| {
            ip.and_then(|ip| ip.status.as_ref())
                .is_some_and(|s| s.message.contains("is forbidden"))
        })
        .await?;
        let status = ip.status.clone().unwrap_or_default();
        assert_eq!(
            (status.phase.clone(), status.message.as_str()),
            (
                InstallPlanPhase::Installing,
                format!("retrying execution due to error: {denied}").as_str()
            )
        );
        assert_eq!(attenuated(&ip).as_deref(), Some(DEPLOYER));
        // The CSV step the account may perform is applied (Present when a retried pass found it created).
        let csv_step = step_status(&ip, "ClusterServiceVersion");
        assert!(
            matches!(csv_step.as_slice(), [StepStatus::Created | StepStatus::Present]),
            "{csv_step:?}"
        );
        for kind in ["ServiceAccount", "Role", "RoleBinding"] {
            assert_eq!(step_status(&ip, kind), vec![StepStatus::Unknown], "{kind}");
        }
        // Nothing past the permitted steps exists.
        let sas: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(sas.get_opt("scoped-operator").await?.is_none());
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(deployments.get_opt("scoped-operator").await?.is_none());
        let roles: Api<Role> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let made: Vec<String> = roles
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter_map(|r| r.metadata.name)
            // Ours, and the OperatorCondition's Role (named like the CSV), which OLM's OperatorCondition
            // controller writes with its own identity too.
            .filter(|n| !n.starts_with("deployer-") && n != "scoped.v1.0.0")
            .collect();
        assert_eq!(made, Vec::<String>::new());

        // Well past the 1 s retry window the plan still waits: OLM never fails a plan on a forbidden error.
        // Granting the rest lets the same plan complete.
        grant(&ctx, "deployer-rest", install_rules()).await?;
        let done = await_object(&plans(&ctx), &name, DEADLINE, "Complete after the grant", |ip| {
            ip.is_some_and(|ip| ip.phase() != InstallPlanPhase::Installing)
        })
        .await?;
        assert_eq!(done.phase(), InstallPlanPhase::Complete, "{:?}", done.status);
        assert!(sas.get_opt("scoped-operator").await?.is_some());
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let _ = crds.delete(&crd.name(), &Default::default()).await;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_group_naming_a_missing_account_holds_the_plan_until_the_account_exists()
-> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "scopedmissing", |ctx| async move {
        let (_olm, _cat, crd) = install(&ctx).await?;
        let name = plan_name(&ctx).await?;
        let waiting = format!(
            "please make sure the service account exists. sa={DEPLOYER} operatorgroup={}/og",
            ctx.namespace
        );
        let ip = await_object(&plans(&ctx), &name, DEADLINE, "InstallCheckFailed", |ip| {
            ip.is_some_and(|ip| {
                installed_condition(ip).is_some_and(|c| c.1 == "InstallCheckFailed")
            })
        })
        .await?;
        assert_eq!(
            installed_condition(&ip),
            Some((
                "False".to_string(),
                "InstallCheckFailed".to_string(),
                waiting
            ))
        );
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(
            csvs.get_opt("scoped.v1.0.0").await?.is_none(),
            "nothing is applied while the check fails"
        );

        service_account(&ctx, DEPLOYER).await?;
        grant(&ctx, "deployer-installs", install_rules()).await?;
        let done = await_object(
            &plans(&ctx),
            &name,
            DEADLINE,
            "Complete once the account exists",
            |ip| ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete),
        )
        .await?;
        assert_eq!(attenuated(&done).as_deref(), Some(DEPLOYER));
        assert_eq!(
            installed_condition(&done).map(|c| c.0),
            Some("True".to_string())
        );
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let _ = crds.delete(&crd.name(), &Default::default()).await;
        Ok(())
    })
    .await
}

/// Both operators started as their deploy/rbac ServiceAccounts (`olm_tests::rbac`), which hold no `impersonate`:
/// each grants itself the impersonation of the one account the group names.
async fn operators_as_their_accounts(
    ctx: &TestContext,
    rbac: &DeployedRbac,
) -> anyhow::Result<(OperatorProcess, OperatorProcess)> {
    let mut started = Vec::new();
    for (binary, extra) in [
        ("olm-operator", vec![]),
        (
            "catalog-operator",
            vec!["--install-plan-retry-timeout", "1s"],
        ),
    ] {
        let kubeconfig = kubeconfig_as(ctx, &rbac.user(binary))?;
        let kubeconfig = kubeconfig.display().to_string();
        let account = rbac.account(binary);
        let mut args = vec![
            "--watched-namespaces",
            ctx.namespace.as_str(),
            "--namespace",
            ctx.namespace.as_str(),
        ];
        args.extend(extra);
        started.push(
            OperatorProcess::start_with_env(
                ctx.cluster,
                binary,
                &args,
                &[
                    ("KUBECONFIG", kubeconfig.as_str()),
                    ("OPERATOR_SERVICE_ACCOUNT", account.as_str()),
                ],
            )
            .await?,
        );
    }
    let cat = started.pop().context("catalog-operator")?;
    let olm = started.pop().context("olm-operator")?;
    Ok((olm, cat))
}

#[tokio::test]
async fn the_operators_own_accounts_act_only_as_the_account_the_group_names() -> anyhow::Result<()>
{
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "scopedsa", |ctx| async move {
        let rbac = DeployedRbac::apply(&ctx)?;
        let result = async {
            service_account(&ctx, DEPLOYER).await?;
            grant(&ctx, "deployer-installs", install_rules()).await?;
            for binary in ["olm-operator", "catalog-operator"] {
                anyhow::ensure!(
                    can_i(
                        &ctx,
                        &rbac.user(binary),
                        "impersonate",
                        &format!("serviceaccounts/{DEPLOYER}"),
                        Scope::Own
                    )? == Answer::No,
                    "{binary} may impersonate the group's account before any grant"
                );
            }
            let _operators = operators_as_their_accounts(&ctx, &rbac).await?;
            scoped_group(&ctx).await?;
            let crd = Crd::new(
                "scopedthings",
                &format!("{}.scoped.test", ctx.namespace),
                "ScopedThing",
            );
            configmap_catalog(
                &ctx,
                "cat",
                &Catalog::with(vec![Op::new("scoped", "1.0.0").owns(&crd)]),
                0,
            )
            .await?;
            subscription(&ctx, sub_to(&ctx, "scoped", "scoped", "cat")).await?;
            let name = plan_name(&ctx).await?;
            let ip = await_object(&plans(&ctx), &name, DEADLINE, "Complete", |ip| {
                ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Complete)
            })
            .await?;
            assert_eq!(attenuated(&ip).as_deref(), Some(DEPLOYER));
            let csvs: Api<ClusterServiceVersion> =
                Api::namespaced(ctx.client.clone(), &ctx.namespace);
            await_object(&csvs, "scoped.v1.0.0", DEADLINE, "Succeeded", |c| {
                c.is_some_and(|c| c.phase() == CsvPhase::Succeeded)
            })
            .await?;
            // Each operator holds a grant naming exactly the group's account, and nothing beyond it.
            let roles: Api<Role> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let grants = roles
                .list(&kube::api::ListParams::default().labels(&format!(
                    "{}={}",
                    olm_runtime::impersonation_grant::GRANT_LABEL,
                    ctx.namespace
                )))
                .await?;
            let mut granted: Vec<(String, Vec<String>)> = grants
                .items
                .into_iter()
                .map(|r| {
                    (
                        r.metadata.name.unwrap_or_default(),
                        r.rules
                            .unwrap_or_default()
                            .into_iter()
                            .flat_map(|rule| rule.resource_names.unwrap_or_default())
                            .collect(),
                    )
                })
                .collect();
            granted.sort();
            let expected: Vec<(String, Vec<String>)> = ["catalog-operator", "olm-operator"]
                .iter()
                .map(|b| {
                    (
                        format!("olm-rs:{}:{}:impersonate", ctx.namespace, rbac.account(b)),
                        vec![DEPLOYER.to_string()],
                    )
                })
                .collect();
            assert_eq!(granted, expected);
            for binary in ["olm-operator", "catalog-operator"] {
                for (resource, scope, want) in [
                    (
                        format!("serviceaccounts/{DEPLOYER}"),
                        Scope::Own,
                        Answer::Yes,
                    ),
                    (
                        "serviceaccounts/default".to_string(),
                        Scope::Own,
                        Answer::No,
                    ),
                    (
                        format!("serviceaccounts/{DEPLOYER}"),
                        Scope::Other,
                        Answer::No,
                    ),
                ] {
                    assert_eq!(
                        can_i(&ctx, &rbac.user(binary), "impersonate", &resource, scope)?,
                        want,
                        "{binary} impersonate {resource} ({scope:?})"
                    );
                }
            }
            let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
            let _ = crds.delete(&crd.name(), &Default::default()).await;
            anyhow::Ok(())
        }
        .await;
        rbac.delete_cluster_objects(&ctx);
        result
    })
    .await
}
