//! The ServiceAccounts of deploy/rbac hold what the operators use and are refused what they do not: `kubectl auth
//! can-i --as system:serviceaccount:...` against the real apiserver's RBAC authorizer, for the rules applied through
//! kustomize (into the test namespace, names prefixed so parallel runs never share the cluster-wide objects;
//! `olm_tests::rbac`). Then the narrow rights the operators grant themselves at run time, each created by the
//! ServiceAccount itself (an impersonating client), each allowing exactly its objects: catalog-operator's `get` on
//! a CatalogSource's pull secrets and `list` on one CRD's custom resources (catalog-operator/src/self_grant.rs, the
//! CRD's grant revoked and gone with the CRD), olm-operator's `get`/`update` on one CSV's certificate Secrets
//! (olm-operator/src/csv/served/cert_grant.rs), and either operator's `impersonate` of the one ServiceAccount an
//! OperatorGroup names (runtime/src/impersonation_grant.rs).

use anyhow::Context;
use olm_tests::rbac::{Answer, DeployedRbac, Scope, can_i, client_as};
use olm_tests::{Cluster, TestContext, with_namespace};

/// `can_i` as deploy/rbac's `account` until it answers `want` (the apiserver's RBAC cache follows a new binding
/// within moments).
async fn await_answer(
    ctx: &TestContext,
    rbac: &DeployedRbac,
    account: &str,
    (verb, resource, scope): (&str, &str, Scope),
    want: Answer,
) -> anyhow::Result<()> {
    let user = rbac.user(account);
    olm_tests::eventually(
        std::time::Duration::from_secs(20),
        &format!("{account} {verb} {resource}: {want:?}"),
        || async { Ok((can_i(ctx, &user, verb, resource, scope)? == want).then_some(())) },
    )
    .await
}

/// What `account` must answer for each (verb, resource, scope), as a list of what differs.
fn differences(
    ctx: &TestContext,
    rbac: &DeployedRbac,
    account: &str,
    when: &str,
    checks: &[(&str, &str, Scope, Answer)],
) -> anyhow::Result<Vec<String>> {
    let user = rbac.user(account);
    let mut wrong = Vec::new();
    for (verb, resource, scope, want) in checks {
        let got = can_i(ctx, &user, verb, resource, *scope)?;
        if got != *want {
            wrong.push(format!(
                "{account} {verb} {resource} ({scope:?}) {when}: expected {want:?}, got {got:?}"
            ));
        }
    }
    Ok(wrong)
}

/// Once `account` may do `granted` (the grant reached the authorizer), what differs among `checks` `when`.
async fn after_grant(
    ctx: &TestContext,
    rbac: &DeployedRbac,
    account: &str,
    granted: (&str, &str, Scope),
    when: &str,
    checks: &[(&str, &str, Scope, Answer)],
) -> anyhow::Result<Vec<String>> {
    await_answer(ctx, rbac, account, granted, Yes).await?;
    differences(ctx, rbac, account, when, checks)
}

/// catalog-operator's grants (self_grant.rs), made by its ServiceAccount itself; returns what is wrong.
async fn catalog_operator_grants(
    ctx: &TestContext,
    rbac: &DeployedRbac,
) -> anyhow::Result<Vec<String>> {
    use catalog_operator::self_grant::{self, CatalogRef, Grantee};
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{DeleteParams, PostParams};
    use messages::crd::catalog_source::CatalogSource;
    use messages::testing::Catsrc;

    let account = rbac.account("catalog-operator");
    let grantee = Grantee {
        namespace: ctx.namespace.clone(),
        name: account.clone(),
        package_server: None,
    };
    let me = client_as(ctx, &rbac.user("catalog-operator")).await?;
    let pp = PostParams::default();
    let mut wrong = Vec::new();

    // Pull secrets: a CatalogSource naming `pull` (not `other`).
    let secrets: kube::Api<Secret> = kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
    for name in ["pull", "other"] {
        secrets
            .create(
                &pp,
                &olm_tests::oci_fixture::pull_secret(name, r#"{"auths":{}}"#),
            )
            .await?;
    }
    let catalog = kube::Api::<CatalogSource>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(
            &pp,
            &Catsrc::named("private")
                .image("registry.example/catalog:1")
                .secrets(&["pull"])
                .build(),
        )
        .await?;
    wrong.extend(differences(
        ctx,
        rbac,
        "catalog-operator",
        "before any grant",
        &[("get", "secrets/pull", Own, No)],
    )?);
    let names = vec!["pull".to_string()];
    self_grant::apply_pull_secret_grant(
        &me,
        &grantee,
        &CatalogRef {
            namespace: &ctx.namespace,
            name: "private",
            uid: catalog.metadata.uid.as_deref().unwrap_or_default(),
            secrets: &names,
        },
    )
    .await
    .context("catalog-operator grants itself its catalog's pull secrets")?;
    wrong.extend(
        after_grant(
            ctx,
            rbac,
            "catalog-operator",
            ("get", "secrets/pull", Own),
            "after the pull-secret grant",
            &[
                ("get", "secrets/other", Own, No),
                ("list", "secrets", Own, No),
                ("watch", "secrets", Own, No),
                ("update", "secrets/pull", Own, No),
                ("get", "secrets/pull", Other, No),
            ],
        )
        .await?,
    );

    // The CRD-upgrade check: a CRD of this test, its custom resources listed through the grant, then revoked.
    let group = format!("{}.olm-rs.io", ctx.namespace);
    let crd_name = format!("widgets.{group}");
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(ctx.client.clone());
    crds.create(&pp, &olm_tests::widgets::widget_crd(&group, &["v1"]))
        .await?;
    let widgets = format!("widgets.{group}");
    let result = async {
        // Established: discovery serves it, so `kubectl auth can-i` maps `widgets.<group>` to it.
        olm_tests::widgets::await_established(
            &ctx.client,
            &crd_name,
            std::time::Duration::from_secs(30),
        )
        .await?;
        wrong.extend(differences(
            ctx,
            rbac,
            "catalog-operator",
            "before any grant",
            &[("list", &widgets, AllNamespaces, No)],
        )?);
        let stored = serde_json::to_value(crds.get(&crd_name).await?)?;
        let crd_ref = self_grant::crd_ref_from_server(&stored).map_err(anyhow::Error::msg)?;
        self_grant::apply_cr_list_grant(&me, &grantee, &crd_ref)
            .await
            .context("catalog-operator grants itself the list of the CRD's custom resources")?;
        wrong.extend(
            after_grant(
                ctx,
                rbac,
                "catalog-operator",
                ("list", &widgets, AllNamespaces),
                "after the CR list grant",
                &[
                    ("get", &widgets, AllNamespaces, No),
                    ("delete", &widgets, AllNamespaces, No),
                    ("list", "secrets", AllNamespaces, No),
                ],
            )
            .await?,
        );
        self_grant::apply_cr_list_revocation(&me, &grantee, &crd_ref)
            .await
            .context("catalog-operator revokes its list of the CRD's custom resources")?;
        await_answer(
            ctx,
            rbac,
            "catalog-operator",
            ("list", &widgets, AllNamespaces),
            No,
        )
        .await?;
        // The revoked grant is applied again for the next check (and then goes with the CRD).
        self_grant::apply_cr_list_grant(&me, &grantee, &crd_ref)
            .await
            .context("catalog-operator grants itself the list again")?;
        await_answer(
            ctx,
            rbac,
            "catalog-operator",
            ("list", &widgets, AllNamespaces),
            Yes,
        )
        .await?;
        anyhow::Ok(())
    }
    .await;
    // The grant goes with its CRD (owner reference, garbage collector).
    crds.delete(&crd_name, &DeleteParams::default()).await?;
    result?;
    let grant = self_grant::cr_list_grant_name(&grantee, &crd_name);
    let roles: kube::Api<ClusterRole> = kube::Api::all(ctx.client.clone());
    olm_tests::eventually(
        std::time::Duration::from_secs(60),
        "the CRD's grant deleted with the CRD",
        || async { Ok(roles.get_opt(&grant).await?.is_none().then_some(())) },
    )
    .await?;
    Ok(wrong)
}

/// olm-operator's grant of one CSV's certificate Secrets (cert_grant.rs), made by its ServiceAccount itself.
async fn olm_operator_grants(
    ctx: &TestContext,
    rbac: &DeployedRbac,
) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use olm_operator::csv::served::cert_grant;
    use olm_operator::csv::served::objects::Owner;

    let me = client_as(ctx, &rbac.user("olm-operator")).await?;
    let grantee = olm_runtime::own_account::Grantee {
        namespace: ctx.namespace.clone(),
        name: rbac.account("olm-operator"),
    };
    // The owner need not exist for RBAC: a made-up uid, which the garbage collector leaves alone until the
    // namespace goes.
    let owner = Owner {
        name: "webhook.v1".into(),
        namespace: ctx.namespace.clone(),
        reference: OwnerReference {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: ctx.namespace.clone(),
            uid: namespace_uid(ctx).await?,
            ..Default::default()
        },
    };
    let mut wrong = differences(
        ctx,
        rbac,
        "olm-operator",
        "before any grant",
        &[
            ("get", "secrets/webhook-service-cert", Own, No),
            ("update", "secrets/webhook-service-cert", Own, No),
        ],
    )?;
    cert_grant::apply_grant(&me, &grantee, &owner, &["webhook-service-cert".to_string()])
        .await
        .context("olm-operator grants itself a CSV's certificate Secret")?;
    wrong.extend(
        after_grant(
            ctx,
            rbac,
            "olm-operator",
            ("get", "secrets/webhook-service-cert", Own),
            "after the certificate grant",
            &[
                ("update", "secrets/webhook-service-cert", Own, Yes),
                ("get", "secrets/other-cert", Own, No),
                ("list", "secrets", Own, No),
                ("watch", "secrets", Own, No),
                ("delete", "secrets/webhook-service-cert", Own, No),
                ("get", "secrets/webhook-service-cert", Other, No),
            ],
        )
        .await?,
    );
    Ok(wrong)
}

/// Either operator's grant to act as the one ServiceAccount an OperatorGroup names (impersonation_grant.rs), made
/// by its ServiceAccount itself.
async fn impersonation_grants(
    ctx: &TestContext,
    rbac: &DeployedRbac,
) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::core::v1::{ObjectReference, ServiceAccount};
    use kube::api::PostParams;
    use olm_runtime::impersonation_grant;

    let accounts: kube::Api<ServiceAccount> =
        kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut deployer = ServiceAccount::default();
    deployer.metadata.name = Some("deployer".into());
    let deployer = accounts.create(&PostParams::default(), &deployer).await?;
    let mut wrong = Vec::new();
    for operator in ["olm-operator", "catalog-operator"] {
        wrong.extend(differences(
            ctx,
            rbac,
            operator,
            "before any grant",
            &[("impersonate", "serviceaccounts/deployer", Own, No)],
        )?);
        let me = client_as(ctx, &rbac.user(operator)).await?;
        let grantee = olm_runtime::own_account::Grantee {
            namespace: ctx.namespace.clone(),
            name: rbac.account(operator),
        };
        let account = ObjectReference {
            namespace: Some(ctx.namespace.clone()),
            name: Some("deployer".into()),
            uid: deployer.metadata.uid.clone(),
            ..Default::default()
        };
        impersonation_grant::apply_grant(&me, &grantee, &account)
            .await
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{operator} grants itself the group's account"))?;
        wrong.extend(
            after_grant(
                ctx,
                rbac,
                operator,
                ("impersonate", "serviceaccounts/deployer", Own),
                "after the impersonation grant",
                &[
                    ("impersonate", "serviceaccounts/default", Own, No),
                    ("impersonate", "serviceaccounts", Own, No),
                    ("impersonate", "serviceaccounts/deployer", Other, No),
                    ("impersonate", "users", AllNamespaces, No),
                    ("impersonate", "groups", AllNamespaces, No),
                    ("create", "serviceaccounts/deployer#token", Own, No),
                ],
            )
            .await?,
        );
    }
    Ok(wrong)
}

async fn namespace_uid(ctx: &TestContext) -> anyhow::Result<String> {
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(ctx.client.clone());
    namespaces
        .get(&ctx.namespace)
        .await?
        .metadata
        .uid
        .context("the namespace has no uid")
}

use Answer::{No, Yes};
use Scope::{AllNamespaces, Other, Own};

/// (verb, resource[#subresource], scope, expected): one `kubectl auth can-i` question and its answer.
type Check = (&'static str, &'static str, Scope, Answer);

/// Each ServiceAccount of deploy/rbac and what it must answer as deployed.
const AS_DEPLOYED: &[(&str, &[Check])] = &[
    ("olm-operator", OLM_OPERATOR),
    ("catalog-operator", CATALOG_OPERATOR),
    ("package-server", PACKAGE_SERVER),
];

/// (verb, resource[#subresource], scope, expected) for olm-operator.
#[rustfmt::skip] // one check a line, in columns
const OLM_OPERATOR: &[Check] = &[
    // What it does.
    ("update",           "clusterserviceversions.operators.coreos.com",                  AllNamespaces, Yes),
    ("create",           "deployments.apps",                                             AllNamespaces, Yes),
    ("create",           "clusterroles.rbac.authorization.k8s.io",                       AllNamespaces, Yes),
    ("patch",            "namespaces",                                                   AllNamespaces, Yes),
    ("watch",            "subscriptions.operators.coreos.com",                           AllNamespaces, Yes),
    ("create",           "operatorconditions.operators.coreos.com",                      AllNamespaces, Yes),
    ("update",           "leases.coordination.k8s.io",                                   Own,           Yes),
    // Server-side apply (olm-operator/src/apply) is `patch`: the rendered Deployments, RBAC, Services, webhook
    // configurations and APIServices.
    ("patch",            "deployments.apps",                                             AllNamespaces, Yes),
    ("patch",            "clusterrolebindings.rbac.authorization.k8s.io",                AllNamespaces, Yes),
    ("patch",            "services",                                                     AllNamespaces, Yes),
    ("patch",            "mutatingwebhookconfigurations.admissionregistration.k8s.io",   AllNamespaces, Yes),
    ("patch",            "apiservices.apiregistration.k8s.io",                           AllNamespaces, Yes),
    // The Operator view (operator_view/): component labels by patch, Operators and their status.
    ("patch",            "subscriptions.operators.coreos.com",                           AllNamespaces, Yes),
    ("patch",            "installplans.operators.coreos.com",                            AllNamespaces, Yes),
    ("create",           "operators.operators.coreos.com",                               AllNamespaces, Yes),
    ("patch",            "operators.operators.coreos.com#status",                        AllNamespaces, Yes),
    // Webhooks and API services (csv/served): certificate Secrets created (read and replaced through the per-CSV
    // grant), Services, webhook configurations, APIServices, CRD conversion.
    ("create",           "secrets",                                                      AllNamespaces, Yes),
    ("create",           "services",                                                     AllNamespaces, Yes),
    ("create",           "validatingwebhookconfigurations.admissionregistration.k8s.io", AllNamespaces, Yes),
    ("deletecollection", "mutatingwebhookconfigurations.admissionregistration.k8s.io",   AllNamespaces, Yes),
    ("create",           "apiservices.apiregistration.k8s.io",                           AllNamespaces, Yes),
    ("update",           "customresourcedefinitions.apiextensions.k8s.io",               AllNamespaces, Yes),
    // The metrics endpoints (endpoint_auth.rs): token and access reviews.
    ("create",           "tokenreviews.authentication.k8s.io",                           AllNamespaces, Yes),
    ("create",           "subjectaccessreviews.authorization.k8s.io",                    AllNamespaces, Yes),
    // Kept on purpose, the power to install RBAC (deploy/rbac/olm-operator.yaml, docs/operations.md).
    ("escalate",         "clusterroles.rbac.authorization.k8s.io",                       AllNamespaces, Yes),
    ("bind",             "clusterroles.rbac.authorization.k8s.io",                       AllNamespaces, Yes),
    // What it must not: read or change Secrets (but create a certificate pair)...
    ("get",              "secrets",                                                      AllNamespaces, No),
    ("get",              "secrets",                                                      Own,           No),
    ("update",           "secrets",                                                      AllNamespaces, No),
    ("patch",            "secrets",                                                      AllNamespaces, No),
    ("list",             "secrets",                                                      AllNamespaces, No),
    ("list",             "secrets",                                                      Own,           No),
    ("watch",            "secrets",                                                      AllNamespaces, No),
    ("delete",           "secrets",                                                      AllNamespaces, No),
    // ... act as anyone (only the one account a group names, through a grant), or mint tokens ...
    ("impersonate",      "serviceaccounts",                                              AllNamespaces, No),
    ("impersonate",      "serviceaccounts",                                              Own,           No),
    ("impersonate",      "users",                                                        AllNamespaces, No),
    ("impersonate",      "groups",                                                       AllNamespaces, No),
    ("create",           "serviceaccounts#token",                                        AllNamespaces, No),
    // ... touch pods, nodes or namespaces ...
    ("get",              "pods",                                                         AllNamespaces, No),
    ("create",           "pods",                                                         AllNamespaces, No),
    ("create",           "pods#exec",                                                    AllNamespaces, No),
    ("delete",           "nodes",                                                        AllNamespaces, No),
    ("delete",           "namespaces",                                                   AllNamespaces, No),
    ("list",             "configmaps",                                                   AllNamespaces, No),
    // ... or what another component owns; applied objects are never replaced.
    ("update",           "subscriptions.operators.coreos.com",                           AllNamespaces, No),
    ("create",           "installplans.operators.coreos.com",                            AllNamespaces, No),
    ("update",           "installplans.operators.coreos.com",                            AllNamespaces, No),
    ("delete",           "operators.operators.coreos.com",                               AllNamespaces, No),
    ("update",           "validatingwebhookconfigurations.admissionregistration.k8s.io", AllNamespaces, No),
    ("update",           "apiservices.apiregistration.k8s.io",                           AllNamespaces, No),
    ("delete",           "services",                                                     AllNamespaces, No),
    ("delete",           "apiservices.apiregistration.k8s.io",                           AllNamespaces, No),
    ("update",           "leases.coordination.k8s.io",                                   Other,         No),
    ("delete",           "customresourcedefinitions.apiextensions.k8s.io",               AllNamespaces, No),
];

/// (verb, resource[#subresource], scope, expected) for catalog-operator.
#[rustfmt::skip] // one check a line, in columns
const CATALOG_OPERATOR: &[Check] = &[
    // What it does.
    ("create",      "installplans.operators.coreos.com",              AllNamespaces, Yes),
    ("update",      "subscriptions.operators.coreos.com#status",      AllNamespaces, Yes),
    ("create",      "customresourcedefinitions.apiextensions.k8s.io", AllNamespaces, Yes),
    ("update",      "customresourcedefinitions.apiextensions.k8s.io", AllNamespaces, Yes),
    ("create",      "secrets",                                        AllNamespaces, Yes),
    ("update",      "leases.coordination.k8s.io",                     Own,           Yes),
    ("patch",       "endpointslices.discovery.k8s.io/catalog-operator-catalogs-leader", Own, Yes),
    ("create",      "endpointslices.discovery.k8s.io/catalog-operator-catalogs-leader", Own, Yes),
    ("create",      "tokenreviews.authentication.k8s.io",             AllNamespaces, Yes),
    ("create",      "subjectaccessreviews.authorization.k8s.io",      AllNamespaces, Yes),
    // Kept on purpose, the power to install a bundle's RBAC (deploy/rbac/catalog-operator.yaml).
    ("escalate",    "clusterroles.rbac.authorization.k8s.io",         AllNamespaces, Yes),
    ("bind",        "clusterroles.rbac.authorization.k8s.io",         AllNamespaces, Yes),
    // What it must not: pods (catalog images are served in-process) ...
    ("create",      "pods",                                           AllNamespaces, No),
    ("get",         "pods",                                           AllNamespaces, No),
    ("list",        "pods",                                           AllNamespaces, No),
    ("delete",      "pods",                                           AllNamespaces, No),
    ("create",      "pods#exec",                                      AllNamespaces, No),
    // ... Secrets but creating a bundle's (pull secrets through the per-catalog grant) ...
    ("get",         "secrets",                                        AllNamespaces, No),
    ("get",         "secrets",                                        Own,           No),
    ("get",         "secrets",                                        Other,         No),
    ("list",        "secrets",                                        AllNamespaces, No),
    ("update",      "secrets",                                        AllNamespaces, No),
    // ... act as anyone (only the one account a group names, through a grant), or mint tokens ...
    ("impersonate", "serviceaccounts",                                AllNamespaces, No),
    ("impersonate", "serviceaccounts",                                Other,         No),
    ("impersonate", "users",                                          AllNamespaces, No),
    ("impersonate", "groups",                                         AllNamespaces, No),
    ("create",      "serviceaccounts#token",                          AllNamespaces, No),
    // ... delete RBAC or list it ...
    ("delete",      "clusterroles.rbac.authorization.k8s.io",         AllNamespaces, No),
    ("delete",      "clusterrolebindings.rbac.authorization.k8s.io",  AllNamespaces, No),
    ("list",        "clusterroles.rbac.authorization.k8s.io",         AllNamespaces, No),
    // ... patch what it only creates or replaces, or read what it only writes ...
    ("patch",       "customresourcedefinitions.apiextensions.k8s.io", AllNamespaces, No),
    ("patch",       "subscriptions.operators.coreos.com",             AllNamespaces, No),
    ("patch",       "clusterserviceversions.operators.coreos.com",    AllNamespaces, No),
    ("patch",       "catalogsources.operators.coreos.com",            AllNamespaces, No),
    ("get",         "services",                                       AllNamespaces, No),
    ("get",         "serviceaccounts",                                AllNamespaces, No),
    // ... or what olm-operator owns.
    ("delete",      "nodes",                                          AllNamespaces, No),
    ("create",      "deployments.apps",                               AllNamespaces, No),
    ("delete",      "clusterserviceversions.operators.coreos.com",    AllNamespaces, No),
    ("delete",      "customresourcedefinitions.apiextensions.k8s.io", AllNamespaces, No),
    ("patch",       "namespaces",                                     AllNamespaces, No),
    ("update",      "leases.coordination.k8s.io",                     Other,         No),
    // Only its own slice, in its own namespace: no other Service's routing.
    ("patch",       "endpointslices.discovery.k8s.io/other",          Own,           No),
    ("delete",      "endpointslices.discovery.k8s.io/catalog-operator-catalogs-leader", Own, No),
    ("patch",       "endpointslices.discovery.k8s.io/catalog-operator-catalogs-leader", Other, No),
    ("list",        "endpointslices.discovery.k8s.io",                AllNamespaces, No),
];

/// (verb, resource[#subresource], scope, expected) for package-server.
#[rustfmt::skip] // one check a line, in columns
const PACKAGE_SERVER: &[Check] = &[
    // What it does.
    ("watch",       "catalogsources.operators.coreos.com",                                 AllNamespaces, Yes),
    ("create",      "subjectaccessreviews.authorization.k8s.io",                           AllNamespaces, Yes),
    ("create",      "tokenreviews.authentication.k8s.io",                                  AllNamespaces, Yes),
    ("get",         "configmaps/extension-apiserver-authentication",                       Other,         Yes),
    ("patch",       "apiservices.apiregistration.k8s.io/v1.packages.operators.coreos.com", AllNamespaces, Yes),
    ("get",         "secrets/packageserver-serving-cert",                                  Own,           Yes),
    ("update",      "secrets/packageserver-serving-cert",                                  Own,           Yes),
    ("create",      "secrets",                                                             Own,           Yes),
    // What it must not.
    ("update",      "catalogsources.operators.coreos.com",                                 AllNamespaces, No),
    ("patch",       "catalogsources.operators.coreos.com#status",                          AllNamespaces, No),
    ("patch",       "apiservices.apiregistration.k8s.io/v1.apps",                          AllNamespaces, No),
    ("create",      "apiservices.apiregistration.k8s.io",                                  AllNamespaces, No),
    ("list",        "configmaps",                                                          AllNamespaces, No),
    ("watch",       "configmaps",                                                          AllNamespaces, No),
    ("get",         "secrets",                                                             Own,           No),
    ("create",      "secrets",                                                             Other,         No),
    ("impersonate", "serviceaccounts",                                                     AllNamespaces, No),
    ("escalate",    "clusterroles.rbac.authorization.k8s.io",                              AllNamespaces, No),
    ("list",        "clusterserviceversions.operators.coreos.com",                         AllNamespaces, No),
];

/// Every step kind an InstallPlan may create (catalog-operator's step_kinds::ALL): catalog-operator may create
/// it, and patch it where an existing one is updated (replace it, for CRDs).
async fn step_kind_table(ctx: &TestContext, rbac: &DeployedRbac) -> anyhow::Result<Vec<String>> {
    use catalog_operator::install_plan::step_kinds::{ALL, CREATE_ONLY, REPLACED};
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let api: kube::Api<SubjectAccessReview> = kube::Api::all(ctx.client.clone());
    let user = rbac.user("catalog-operator");
    let mut wrong = Vec::new();
    for (kind, group, resource) in ALL {
        let verbs: &[&str] = if CREATE_ONLY.contains(kind) {
            &["create"]
        } else if REPLACED.contains(kind) {
            &["create", "update"]
        } else {
            &["create", "patch"]
        };
        for verb in verbs {
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(user.clone()),
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(group.to_string()),
                        resource: Some(resource.to_string()),
                        verb: Some(verb.to_string()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let answer = api.create(&Default::default(), &review).await?;
            if !answer.status.is_some_and(|s| s.allowed) {
                wrong.push(format!(
                    "{user} cannot {verb} {resource}.{group} (step kind {kind})"
                ));
            }
        }
    }
    Ok(wrong)
}

#[tokio::test]
async fn each_service_account_holds_what_its_operator_uses_and_is_refused_the_rest()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "rbac", |ctx| async move {
        let rbac = DeployedRbac::apply(&ctx)?;
        let checked = (|| -> anyhow::Result<Vec<String>> {
            let mut wrong = Vec::new();
            for (account, checks) in AS_DEPLOYED {
                wrong.extend(differences(&ctx, &rbac, account, "as deployed", checks)?);
            }
            Ok(wrong)
        })();
        // Every step kind, asked as a SubjectAccessReview with the group spelled out: `kubectl auth can-i` maps
        // `resource.group` through discovery and asks about the wrong resource for APIs this cluster lacks
        // (ServiceMonitor, ConsolePlugin, …), which a bundle may still carry.
        let steps = step_kind_table(&ctx, &rbac).await;
        let catalog_grants = catalog_operator_grants(&ctx, &rbac).await;
        let olm_grants = olm_operator_grants(&ctx, &rbac).await;
        let impersonation = impersonation_grants(&ctx, &rbac).await;
        rbac.delete_cluster_objects(&ctx);
        let mut wrong = checked?;
        wrong.extend(steps?);
        wrong.extend(catalog_grants?);
        wrong.extend(olm_grants?);
        wrong.extend(impersonation?);
        assert!(
            wrong.is_empty(),
            "RBAC answers differ:\n{}",
            wrong.join("\n")
        );
        Ok(())
    })
    .await
}
