//! The ServiceAccounts of deploy/rbac hold what the operators use and nothing they do not: `kubectl auth can-i
//! --as system:serviceaccount:...` against the real apiserver's RBAC authorizer, for the rules applied through
//! kustomize (into the test namespace, names prefixed so parallel runs never share the cluster-wide objects).
//! Then the narrow rights catalog-operator grants itself (catalog-operator/src/self_grant.rs), created by the
//! ServiceAccount itself (an impersonating client): `get` on a CatalogSource's pull secrets by name, `list` on one
//! CRD's custom resources, each allowing exactly that, and the CRD's grant going with the CRD.

use anyhow::{Context, bail};
use olm_tests::{Cluster, TestContext, with_namespace};
use std::io::Write;
use std::process::{Command, Stdio};

/// What `kubectl auth can-i` should answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
}

/// Where a check asks: a namespace (`None`: the test namespace), or the whole cluster (`-A` / cluster-scoped).
#[derive(Clone, Copy, Debug)]
enum Scope {
    Own,
    Other,
    AllNamespaces,
}

/// Apply deploy/rbac with the test namespace and a name prefix; return the prefix.
fn apply_rbac(ctx: &TestContext) -> anyhow::Result<String> {
    let prefix = format!("{}-", ctx.namespace);
    let dir = std::env::temp_dir().join(format!("olm-rs-rbac-{}", ctx.namespace));
    std::fs::create_dir_all(&dir)?;
    let base = ctx.cluster.repo_root.join("deploy/rbac");
    let relative = pathdiff(&dir, &base)?;
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!(
            "namespace: {}\nnamePrefix: {prefix}\nresources:\n- {relative}\n",
            ctx.namespace
        ),
    )?;
    let rendered = ctx
        .cluster
        .kubectl(&["kustomize", &dir.display().to_string()])?;
    let mut apply = Command::new("kubectl")
        .args(["apply", "--server-side", "-f", "-"])
        .env("KUBECONFIG", &ctx.cluster.kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("run kubectl apply")?;
    apply
        .stdin
        .take()
        .context("kubectl stdin")?
        .write_all(rendered.as_bytes())?;
    let out = apply.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "kubectl apply of deploy/rbac: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(prefix)
}

/// `to` relative to `from` (both absolute, `to` a folder), for kustomize, which refuses absolute bases.
fn pathdiff(from: &std::path::Path, to: &std::path::Path) -> anyhow::Result<String> {
    let (from, to) = (from.canonicalize()?, to.canonicalize()?);
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    Ok(parts.join("/"))
}

/// A client acting as `user` (impersonation by the admin kubeconfig).
async fn client_as(ctx: &TestContext, user: &str) -> anyhow::Result<kube::Client> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let kc = Kubeconfig::read_from(&ctx.cluster.kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    config.auth_info.impersonate = Some(user.to_string());
    Ok(kube::Client::try_from(config)?)
}

/// `can_i` until it answers `want` (the apiserver's RBAC cache follows a new binding within moments).
async fn await_answer(
    ctx: &TestContext,
    account: &str,
    verb: &str,
    resource: &str,
    want: Answer,
) -> anyhow::Result<()> {
    olm_tests::eventually(
        std::time::Duration::from_secs(20),
        &format!("{account} {verb} {resource}: {want:?}"),
        || async { Ok((can_i(ctx, account, verb, resource, Own)? == want).then_some(())) },
    )
    .await
}

/// The grants of self_grant.rs, made by the catalog-operator ServiceAccount itself; returns what is wrong.
async fn self_grants(ctx: &TestContext, prefix: &str) -> anyhow::Result<Vec<String>> {
    use catalog_operator::self_grant::{self, CatalogRef, CrdRef, Grantee};
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{DeleteParams, PostParams};
    use messages::crd::catalog_source::CatalogSource;

    let account = format!("{prefix}catalog-operator");
    let grantee = Grantee {
        namespace: ctx.namespace.clone(),
        name: account.clone(),
        package_server: None,
    };
    let me = client_as(
        ctx,
        &format!("system:serviceaccount:{}:{account}", ctx.namespace),
    )
    .await?;
    let pp = PostParams::default();
    let mut wrong = Vec::new();

    // Pull secrets: a CatalogSource naming `pull` (not `other`).
    let secrets: kube::Api<Secret> = kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
    for name in ["pull", "other"] {
        secrets
            .create(&pp, &serde_json::from_value(serde_json::json!({"metadata": {"name": name},
                "type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "{\"auths\":{}}"}}))?)
            .await?;
    }
    let catalog = kube::Api::<CatalogSource>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&pp, &serde_json::from_value(serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource", "metadata": {"name": "private"},
            "spec": {"sourceType": "grpc", "image": "registry.example/catalog:1", "secrets": ["pull"]}}))?)
        .await?;
    if can_i(ctx, &account, "get", "secrets/pull", Own)? != No {
        wrong.push(format!("{account} reads the pull secret before any grant"));
    }
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
    await_answer(ctx, &account, "get", "secrets/pull", Yes).await?;
    for (verb, resource) in [
        ("get", "secrets/other"),
        ("list", "secrets"),
        ("watch", "secrets"),
    ] {
        if can_i(ctx, &account, verb, resource, Own)? != No {
            wrong.push(format!(
                "{account} {verb} {resource} after the pull-secret grant"
            ));
        }
    }
    if can_i(ctx, &account, "get", "secrets/pull", Other)? != No {
        wrong.push(format!(
            "{account} reads a `pull` Secret in another namespace"
        ));
    }

    // The CRD-upgrade check: a CRD of this test, its custom resources listed through the grant.
    let group = format!("{}.olm-rs.io", ctx.namespace);
    let crd_name = format!("widgets.{group}");
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(ctx.client.clone());
    let crd = crds
        .create(&pp, &serde_json::from_value(serde_json::json!({"metadata": {"name": crd_name},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}))?)
        .await?;
    let widgets = format!("widgets.{group}");
    let result = async {
        // Established: discovery serves it, so `kubectl auth can-i` maps `widgets.<group>` to it.
        olm_tests::await_object(
            &crds,
            &crd_name,
            std::time::Duration::from_secs(30),
            "Established",
            |c| {
                c.and_then(|c| c.status.as_ref())
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            },
        )
        .await?;
        if can_i(ctx, &account, "list", &widgets, AllNamespaces)? != No {
            wrong.push(format!("{account} lists {widgets} before any grant"));
        }
        self_grant::apply_cr_list_grant(
            &me,
            &grantee,
            &CrdRef {
                name: &crd_name,
                uid: crd.metadata.uid.as_deref().unwrap_or_default(),
                group: &group,
                plural: "widgets",
            },
        )
        .await
        .context("catalog-operator grants itself the list of the CRD's custom resources")?;
        await_answer(ctx, &account, "list", &widgets, Yes).await?;
        for (verb, resource) in [
            ("get", widgets.as_str()),
            ("delete", widgets.as_str()),
            ("list", "secrets"),
        ] {
            if can_i(ctx, &account, verb, resource, AllNamespaces)? != No {
                wrong.push(format!(
                    "{account} {verb} {resource} after the CR list grant"
                ));
            }
        }
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

fn delete_cluster_objects(ctx: &TestContext, prefix: &str) {
    for (kind, name) in [
        ("clusterrolebinding", "olm-rs:olm-operator"),
        ("clusterrolebinding", "olm-rs:catalog-operator"),
        ("clusterrole", "olm-rs:olm-operator"),
        ("clusterrole", "olm-rs:catalog-operator"),
        ("clusterrolebinding", "olm-rs:package-server"),
        ("clusterrole", "olm-rs:package-server"),
    ] {
        let _ = ctx.cluster.kubectl(&[
            "delete",
            kind,
            &format!("{prefix}{name}"),
            "--ignore-not-found",
        ]);
    }
}

fn can_i(
    ctx: &TestContext,
    account: &str,
    verb: &str,
    resource: &str,
    scope: Scope,
) -> anyhow::Result<Answer> {
    let user = format!("system:serviceaccount:{}:{account}", ctx.namespace);
    // `kind#sub` asks about a subresource (`kubectl auth can-i create pods/exec` would ask about a pod named exec).
    let (resource, subresource) = match resource.split_once('#') {
        Some((r, sub)) => (r, Some(sub)),
        None => (resource, None),
    };
    let mut args = vec!["auth", "can-i", verb, resource, "--as", user.as_str()];
    if let Some(sub) = subresource {
        args.extend(["--subresource", sub]);
    }
    match scope {
        Scope::Own => args.extend(["-n", ctx.namespace.as_str()]),
        Scope::Other => args.extend(["-n", "kube-system"]),
        Scope::AllNamespaces => args.push("-A"),
    }
    let out = Command::new("kubectl")
        .args(&args)
        .env("KUBECONFIG", &ctx.cluster.kubeconfig)
        .output()
        .context("run kubectl auth can-i")?;
    match String::from_utf8_lossy(&out.stdout).trim() {
        "yes" => Ok(Answer::Yes),
        "no" => Ok(Answer::No),
        other => bail!(
            "kubectl {}: unexpected answer {other:?}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

use Answer::{No, Yes};
use Scope::{AllNamespaces, Other, Own};

/// (verb, resource[#subresource], scope, expected) for olm-operator.
const OLM_OPERATOR: &[(&str, &str, Scope, Answer)] = &[
    // What it does.
    (
        "update",
        "clusterserviceversions.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    ("create", "deployments.apps", AllNamespaces, Yes),
    (
        "create",
        "clusterroles.rbac.authorization.k8s.io",
        AllNamespaces,
        Yes,
    ),
    (
        "escalate",
        "clusterroles.rbac.authorization.k8s.io",
        AllNamespaces,
        Yes,
    ),
    ("patch", "namespaces", AllNamespaces, Yes),
    (
        "watch",
        "subscriptions.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    (
        "create",
        "operatorconditions.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    ("update", "leases.coordination.k8s.io", Own, Yes),
    // Server-side apply (olm-operator/src/apply) is `patch`: the rendered Deployments, RBAC, Services, webhook
    // configurations and APIServices.
    ("patch", "deployments.apps", AllNamespaces, Yes),
    (
        "patch",
        "clusterrolebindings.rbac.authorization.k8s.io",
        AllNamespaces,
        Yes,
    ),
    ("patch", "services", AllNamespaces, Yes),
    (
        "patch",
        "mutatingwebhookconfigurations.admissionregistration.k8s.io",
        AllNamespaces,
        Yes,
    ),
    (
        "patch",
        "apiservices.apiregistration.k8s.io",
        AllNamespaces,
        Yes,
    ),
    // Scoped installs (csv/scoped.rs): acting as an OperatorGroup's service account, never as a user or group.
    ("impersonate", "serviceaccounts", AllNamespaces, Yes),
    ("impersonate", "users", AllNamespaces, No),
    ("impersonate", "groups", AllNamespaces, No),
    // The Operator view (operator_view/): component labels by patch, Operators and their status.
    (
        "patch",
        "subscriptions.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    (
        "patch",
        "installplans.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    (
        "create",
        "operators.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    (
        "patch",
        "operators.operators.coreos.com#status",
        AllNamespaces,
        Yes,
    ),
    (
        "delete",
        "operators.operators.coreos.com",
        AllNamespaces,
        No,
    ),
    (
        "update",
        "installplans.operators.coreos.com",
        AllNamespaces,
        No,
    ),
    // Webhooks and API services (csv/served): certificate Secrets by name, Services, webhook configurations,
    // APIServices, CRD conversion.
    ("get", "secrets", AllNamespaces, Yes),
    ("create", "secrets", AllNamespaces, Yes),
    ("update", "secrets", AllNamespaces, Yes),
    ("create", "services", AllNamespaces, Yes),
    (
        "create",
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
        AllNamespaces,
        Yes,
    ),
    (
        "deletecollection",
        "mutatingwebhookconfigurations.admissionregistration.k8s.io",
        AllNamespaces,
        Yes,
    ),
    (
        "create",
        "apiservices.apiregistration.k8s.io",
        AllNamespaces,
        Yes,
    ),
    (
        "update",
        "customresourcedefinitions.apiextensions.k8s.io",
        AllNamespaces,
        Yes,
    ),
    // What it must not.
    (
        "update",
        "subscriptions.operators.coreos.com",
        AllNamespaces,
        No,
    ),
    ("list", "secrets", AllNamespaces, No),
    ("list", "secrets", Own, No),
    // Certificate Secrets are created or replaced at the version read, never applied.
    ("patch", "secrets", AllNamespaces, No),
    // Applied, never replaced.
    (
        "update",
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
        AllNamespaces,
        No,
    ),
    (
        "update",
        "apiservices.apiregistration.k8s.io",
        AllNamespaces,
        No,
    ),
    ("watch", "secrets", AllNamespaces, No),
    ("delete", "secrets", AllNamespaces, No),
    ("delete", "services", AllNamespaces, No),
    (
        "delete",
        "apiservices.apiregistration.k8s.io",
        AllNamespaces,
        No,
    ),
    ("list", "configmaps", AllNamespaces, No),
    ("get", "pods", AllNamespaces, No),
    ("create", "pods#exec", AllNamespaces, No),
    ("delete", "nodes", AllNamespaces, No),
    ("delete", "namespaces", AllNamespaces, No),
    (
        "create",
        "installplans.operators.coreos.com",
        AllNamespaces,
        No,
    ),
    ("update", "leases.coordination.k8s.io", Other, No),
    (
        "delete",
        "customresourcedefinitions.apiextensions.k8s.io",
        AllNamespaces,
        No,
    ),
];

/// (verb, resource[#subresource], scope, expected) for catalog-operator.
const CATALOG_OPERATOR: &[(&str, &str, Scope, Answer)] = &[
    // What it does.
    (
        "create",
        "installplans.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    (
        "update",
        "subscriptions.operators.coreos.com#status",
        AllNamespaces,
        Yes,
    ),
    (
        "create",
        "customresourcedefinitions.apiextensions.k8s.io",
        AllNamespaces,
        Yes,
    ),
    ("create", "secrets", AllNamespaces, Yes),
    ("create", "pods", AllNamespaces, Yes),
    ("update", "leases.coordination.k8s.io", Own, Yes),
    // Scoped installs (install_plan/scoped.rs): acting as an OperatorGroup's service account.
    ("impersonate", "serviceaccounts", AllNamespaces, Yes),
    // What it must not.
    ("impersonate", "users", AllNamespaces, No),
    ("impersonate", "groups", AllNamespaces, No),
    ("delete", "nodes", AllNamespaces, No),
    ("get", "secrets", AllNamespaces, No),
    ("list", "secrets", AllNamespaces, No),
    ("delete", "pods", AllNamespaces, No),
    ("create", "pods#exec", AllNamespaces, No),
    ("create", "deployments.apps", AllNamespaces, No),
    (
        "delete",
        "clusterserviceversions.operators.coreos.com",
        AllNamespaces,
        No,
    ),
    (
        "delete",
        "customresourcedefinitions.apiextensions.k8s.io",
        AllNamespaces,
        No,
    ),
    ("patch", "namespaces", AllNamespaces, No),
    ("update", "leases.coordination.k8s.io", Other, No),
];

/// (verb, resource[#subresource], scope, expected) for package-server.
const PACKAGE_SERVER: &[(&str, &str, Scope, Answer)] = &[
    // What it does.
    (
        "watch",
        "catalogsources.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    (
        "create",
        "subjectaccessreviews.authorization.k8s.io",
        AllNamespaces,
        Yes,
    ),
    (
        "get",
        "configmaps/extension-apiserver-authentication",
        Other,
        Yes,
    ),
    (
        "patch",
        "apiservices.apiregistration.k8s.io/v1.packages.operators.coreos.com",
        AllNamespaces,
        Yes,
    ),
    ("get", "secrets/packageserver-serving-cert", Own, Yes),
    ("update", "secrets/packageserver-serving-cert", Own, Yes),
    ("create", "secrets", Own, Yes),
    // What it must not.
    (
        "update",
        "catalogsources.operators.coreos.com",
        AllNamespaces,
        No,
    ),
    (
        "patch",
        "catalogsources.operators.coreos.com#status",
        AllNamespaces,
        No,
    ),
    (
        "patch",
        "apiservices.apiregistration.k8s.io/v1.apps",
        AllNamespaces,
        No,
    ),
    (
        "create",
        "apiservices.apiregistration.k8s.io",
        AllNamespaces,
        No,
    ),
    ("list", "configmaps", AllNamespaces, No),
    ("watch", "configmaps", AllNamespaces, No),
    ("get", "secrets", Own, No),
    ("create", "secrets", Other, No),
    (
        "create",
        "tokenreviews.authentication.k8s.io",
        AllNamespaces,
        No,
    ),
    (
        "list",
        "clusterserviceversions.operators.coreos.com",
        AllNamespaces,
        No,
    ),
];

/// Every step kind an InstallPlan may create (catalog-operator's step_kinds::ALL): catalog-operator may create
/// it, and patch it where an existing one is updated.
async fn step_kind_table(ctx: &TestContext, account: &str) -> anyhow::Result<Vec<String>> {
    use catalog_operator::install_plan::step_kinds::{ALL, CREATE_ONLY};
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let api: kube::Api<SubjectAccessReview> = kube::Api::all(ctx.client.clone());
    let user = format!("system:serviceaccount:{}:{account}", ctx.namespace);
    let mut wrong = Vec::new();
    for (kind, group, resource) in ALL {
        let verbs: &[&str] = if CREATE_ONLY.contains(kind) {
            &["create"]
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
                    "{account} cannot {verb} {resource}.{group} (step kind {kind})"
                ));
            }
        }
    }
    Ok(wrong)
}

fn check_all(
    ctx: &TestContext,
    account: &str,
    table: &[(&str, &str, Scope, Answer)],
) -> anyhow::Result<Vec<String>> {
    let mut wrong = Vec::new();
    for (verb, resource, scope, expected) in table {
        let got = can_i(ctx, account, verb, resource, *scope)?;
        if got != *expected {
            wrong.push(format!(
                "{account} {verb} {resource} ({scope:?}): expected {expected:?}, got {got:?}"
            ));
        }
    }
    Ok(wrong)
}

#[tokio::test]
async fn each_service_account_holds_what_its_operator_uses_and_lacks_what_it_does_not()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "rbac", |ctx| async move {
        let prefix = apply_rbac(&ctx)?;
        let checked = (|| -> anyhow::Result<Vec<String>> {
            let mut wrong = check_all(&ctx, &format!("{prefix}olm-operator"), OLM_OPERATOR)?;
            wrong.extend(check_all(
                &ctx,
                &format!("{prefix}catalog-operator"),
                CATALOG_OPERATOR,
            )?);
            wrong.extend(check_all(
                &ctx,
                &format!("{prefix}package-server"),
                PACKAGE_SERVER,
            )?);
            Ok(wrong)
        })();
        // Every step kind, asked as a SubjectAccessReview with the group spelled out: `kubectl auth can-i` maps
        // `resource.group` through discovery and asks about the wrong resource for APIs this cluster lacks
        // (ServiceMonitor, ConsolePlugin, …), which a bundle may still carry.
        let steps = step_kind_table(&ctx, &format!("{prefix}catalog-operator")).await;
        let grants = self_grants(&ctx, &prefix).await;
        delete_cluster_objects(&ctx, &prefix);
        let mut wrong = checked?;
        wrong.extend(steps?);
        wrong.extend(grants?);
        assert!(
            wrong.is_empty(),
            "RBAC answers differ:\n{}",
            wrong.join("\n")
        );
        Ok(())
    })
    .await
}
