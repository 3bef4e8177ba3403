//! deploy/rbac in a test namespace, for tests that check or run as the operators' ServiceAccounts: applied through
//! kustomize into the namespace with the names prefixed (`<namespace>-`, so parallel runs never share the
//! cluster-wide objects), a client or kubeconfig acting as one of those accounts (impersonation by the admin
//! kubeconfig, or the account's own token: [`token_client`]), and `kubectl auth can-i` asked as one.

use crate::namespace::TestContext;
use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cluster-scoped objects of deploy/rbac, without the prefix ([`DeployedRbac::delete_cluster_objects`]).
const CLUSTER_OBJECTS: &[(&str, &str)] = &[
    ("clusterrolebinding", "olm-rs:olm-operator"),
    ("clusterrolebinding", "olm-rs:catalog-operator"),
    ("clusterrolebinding", "olm-rs:package-server"),
    ("clusterrole", "olm-rs:olm-operator"),
    ("clusterrole", "olm-rs:catalog-operator"),
    ("clusterrole", "olm-rs:package-server"),
];

/// deploy/rbac applied in one test namespace.
pub struct DeployedRbac {
    /// `<namespace>-`: every object's name starts with it.
    pub prefix: String,
    pub namespace: String,
}

impl DeployedRbac {
    /// Apply deploy/rbac into the test namespace with the name prefix.
    pub fn apply(ctx: &TestContext) -> anyhow::Result<Self> {
        let prefix = format!("{}-", ctx.namespace);
        let dir = std::env::temp_dir().join(format!("olm-rs-rbac-{}", ctx.namespace));
        std::fs::create_dir_all(&dir)?;
        let base = ctx.cluster.repo_root.join("deploy/rbac");
        let relative = relative_path(&dir, &base)?;
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
        Ok(DeployedRbac {
            prefix,
            namespace: ctx.namespace.clone(),
        })
    }

    /// The prefixed name of deploy/rbac's ServiceAccount `account` (`olm-operator`, `catalog-operator`, ...).
    pub fn account(&self, account: &str) -> String {
        format!("{}{account}", self.prefix)
    }

    /// The user name of that ServiceAccount.
    pub fn user(&self, account: &str) -> String {
        format!(
            "system:serviceaccount:{}:{}",
            self.namespace,
            self.account(account)
        )
    }

    /// Delete the cluster-scoped objects (the namespaced ones go with the namespace).
    pub fn delete_cluster_objects(&self, ctx: &TestContext) {
        for (kind, name) in CLUSTER_OBJECTS {
            let _ = ctx.cluster.kubectl(&[
                "delete",
                kind,
                &format!("{}{name}", self.prefix),
                "--ignore-not-found",
            ]);
        }
    }
}

/// `to` relative to `from` (both absolute, `to` a folder), for kustomize, which refuses absolute bases.
fn relative_path(from: &Path, to: &Path) -> anyhow::Result<String> {
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
pub async fn client_as(ctx: &TestContext, user: &str) -> anyhow::Result<kube::Client> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let kc = Kubeconfig::read_from(&ctx.cluster.kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    config.auth_info.impersonate = Some(user.to_string());
    Ok(kube::Client::try_from(config)?)
}

/// A kubeconfig file acting as `user` (the admin kubeconfig with `as:` on every user), for an operator process
/// that should run with a ServiceAccount's rights (`KUBECONFIG` of [`crate::OperatorProcess::start_with_env`]).
pub fn kubeconfig_as(ctx: &TestContext, user: &str) -> anyhow::Result<PathBuf> {
    use kube::config::Kubeconfig;
    let mut kc = Kubeconfig::read_from(&ctx.cluster.kubeconfig)?;
    for named in &mut kc.auth_infos {
        if let Some(info) = named.auth_info.as_mut() {
            info.impersonate = Some(user.to_string());
        }
    }
    let path = std::env::temp_dir().join(format!(
        "olm-rs-kubeconfig-{}-{}",
        ctx.namespace,
        user.replace(':', "-")
    ));
    // JSON is YAML: kubectl and kube read it as a kubeconfig.
    std::fs::write(&path, serde_json::to_vec(&kc)?)?;
    Ok(path)
}

/// A client that authenticates with a token of deploy/rbac's ServiceAccount `account` (the TokenRequest API, valid
/// `seconds`), as a pod of that account would: the admin kubeconfig's server and CA, no client certificate. The
/// token is kept in a file of the temporary folder (kube reads it from there), removed by
/// [`DeployedRbac::delete_cluster_objects`]'s caller with the namespace's other files.
pub async fn token_client(
    ctx: &TestContext,
    rbac: &DeployedRbac,
    account: &str,
    seconds: i64,
) -> anyhow::Result<kube::Client> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
    let accounts: kube::Api<ServiceAccount> =
        kube::Api::namespaced(ctx.client.clone(), &rbac.namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(seconds),
            bound_object_ref: None,
        },
        ..Default::default()
    };
    let token = accounts
        .create_token_request(
            &rbac.account(account),
            &kube::api::PostParams::default(),
            &request,
        )
        .await?
        .status
        .map(|s| s.token)
        .context("the token request returned no token")?;
    let file = std::env::temp_dir().join(format!("olm-rs-token-{}-{account}", rbac.namespace));
    std::fs::write(&file, token)?;
    let mut kc = Kubeconfig::read_from(&ctx.cluster.kubeconfig)?;
    for named in &mut kc.auth_infos {
        named.auth_info = Some(AuthInfo {
            token_file: Some(file.display().to_string()),
            ..AuthInfo::default()
        });
    }
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// What `kubectl auth can-i` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
}

/// Where a check asks: the test namespace, another namespace (`kube-system`), or the whole cluster (`-A`, also
/// for cluster-scoped resources).
#[derive(Clone, Copy, Debug)]
pub enum Scope {
    Own,
    Other,
    AllNamespaces,
}

/// `kubectl auth can-i VERB RESOURCE --as USER` in `scope`. `resource` may be `kind#sub` for a subresource
/// (`kubectl auth can-i create pods/exec` would ask about a pod named exec).
pub fn can_i(
    ctx: &TestContext,
    user: &str,
    verb: &str,
    resource: &str,
    scope: Scope,
) -> anyhow::Result<Answer> {
    let (resource, subresource) = match resource.split_once('#') {
        Some((r, sub)) => (r, Some(sub)),
        None => (resource, None),
    };
    let mut args = vec!["auth", "can-i", verb, resource, "--as", user];
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
