//! `/metrics` and `/debug/*` behind the API server's authentication and authorization (runtime/src/endpoint_auth.rs,
//! `--metrics-auth=rbac`), with olm-operator running as its deploy/rbac ServiceAccount (which holds `create` on
//! tokenreviews and subjectaccessreviews and nothing more for this): a token of an account bound to
//! deploy/monitoring's `metrics-reader` ClusterRole gets 200 on `/metrics` and 403 on `/debug/journal` (the role
//! names `/metrics` only), an account without the grant 403, no token or a forged one 401, and the probes answer
//! anyone. With `--metrics-bind-address` the metrics move to their own address and the probe address has none.

use anyhow::Context;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use olm_tests::rbac::{DeployedRbac, kubeconfig_as};
use olm_tests::{Cluster, OperatorProcess, TestContext, http_get_as, with_namespace};

/// deploy/monitoring's ClusterRole for Prometheus, read from the file.
fn metrics_reader_role() -> anyhow::Result<ClusterRole> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/monitoring/metrics-reader.yaml");
    let text = std::fs::read_to_string(&path)?;
    for document in text.split("\n---\n") {
        let value: serde_json::Value = serde_saphyr::from_str(document)?;
        if value["kind"] == "ClusterRole" {
            return Ok(serde_json::from_value(value)?);
        }
    }
    anyhow::bail!("no ClusterRole in {}", path.display())
}

/// A ServiceAccount `name` in the test namespace, and a token of it (the TokenRequest API, as a projected token).
async fn account_token(ctx: &TestContext, name: &str) -> anyhow::Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    accounts.create(&PostParams::default(), &account).await?;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(600),
            bound_object_ref: None,
        },
        ..Default::default()
    };
    let answer = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    answer
        .status
        .map(|s| s.token)
        .context("the token request returned no token")
}

/// Bind `account` (in the test namespace) to `role` with a ClusterRoleBinding named `name`.
fn binding(ctx: &TestContext, name: &str, role: &str, account: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.to_string(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: account.to_string(),
            namespace: Some(ctx.namespace.clone()),
            ..Default::default()
        }]),
    }
}

#[tokio::test]
async fn the_metrics_answer_only_callers_the_api_server_authorizes() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "metricsauth", |ctx| async move {
        let rbac = DeployedRbac::apply(&ctx)?;
        let role_name = format!("{}-olm-rs:metrics-reader", ctx.namespace);
        let roles: Api<ClusterRole> = Api::all(ctx.client.clone());
        let bindings: Api<ClusterRoleBinding> = Api::all(ctx.client.clone());
        let result = async {
            let mut role = metrics_reader_role()?;
            role.metadata.name = Some(role_name.clone());
            roles.create(&PostParams::default(), &role).await?;
            bindings
                .create(
                    &PostParams::default(),
                    &binding(&ctx, &role_name, &role_name, "prometheus"),
                )
                .await?;
            scrape(&ctx, &rbac).await
        }
        .await;
        let _ = bindings.delete(&role_name, &DeleteParams::default()).await;
        let _ = roles.delete(&role_name, &DeleteParams::default()).await;
        rbac.delete_cluster_objects(&ctx);
        result
    })
    .await
}

async fn scrape(ctx: &TestContext, rbac: &DeployedRbac) -> anyhow::Result<()> {
    let prometheus = account_token(ctx, "prometheus").await?;
    let stranger = account_token(ctx, "stranger").await?;
    let kubeconfig = kubeconfig_as(ctx, &rbac.user("olm-operator"))?;
    let kubeconfig = kubeconfig.display().to_string();
    let metrics_port = free_port()?;
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let separate = OperatorProcess::start_with_env(
        ctx.cluster,
        "olm-operator",
        &[
            "--watched-namespaces",
            &ctx.namespace,
            "--namespace",
            &ctx.namespace,
            "--metrics-bind-address",
            &metrics_addr,
        ],
        &[
            ("KUBECONFIG", kubeconfig.as_str()),
            ("OLM_METRICS_AUTH", "rbac"),
        ],
    )
    .await?;
    // Its registries publish their series once they run (after discovery): scrape a ready operator.
    olm_tests::eventually(
        std::time::Duration::from_secs(60),
        "olm-operator /readyz",
        || async { Ok((separate.get("/readyz").await?.0 == 200).then_some(())) },
    )
    .await?;
    // (caller, path, expected status) on the metrics address.
    let table: [(Option<&str>, &str, u16); 8] = [
        (Some(prometheus.as_str()), "/metrics", 200),
        (Some(prometheus.as_str()), "/debug/journal", 403),
        (Some(prometheus.as_str()), "/debug/actors", 403),
        (Some(stranger.as_str()), "/metrics", 403),
        (Some(stranger.as_str()), "/debug/journal", 403),
        (None, "/metrics", 401),
        (None, "/debug/journal", 401),
        (Some("forged.token.value"), "/metrics", 401),
    ];
    let mut wrong = Vec::new();
    // Twice: the second round is answered from the cache and must agree.
    for round in 1..=2 {
        let started = std::time::Instant::now();
        for (token, path, want) in &table {
            let (code, body) = http_get_as(metrics_port, path, *token).await?;
            let who = match token {
                Some(t) if *t == prometheus => "the metrics reader",
                Some(t) if *t == stranger => "an account without the grant",
                Some(_) => "a forged token",
                None => "no token",
            };
            if code != *want {
                wrong.push(format!(
                    "round {round}: {who} GET {path}: {code}, expected {want}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            if *want == 200 && !String::from_utf8_lossy(&body).contains("olm_rs_") {
                wrong.push(format!("round {round}: {who} GET {path}: no metrics"));
            }
            if *want != 200 && body.len() > 200 {
                wrong.push(format!(
                    "round {round}: {who} GET {path}: a refusal of {} bytes",
                    body.len()
                ));
            }
        }
        eprintln!(
            "round {round}: {} requests in {:?}",
            table.len(),
            started.elapsed()
        );
    }
    // The probe address: probes to anyone, the metrics not at all.
    for (token, path, want) in [
        (None, "/healthz", 200),
        (None, "/readyz", 200),
        (Some(prometheus.as_str()), "/metrics", 404),
        (None, "/debug/journal", 404),
    ] {
        let (code, _) = http_get_as(separate.http_port, path, token).await?;
        // /readyz may still be 503 while the watches sync: only its being open matters here.
        let open = path == "/readyz" && code == 503;
        if code != want && !open {
            wrong.push(format!(
                "probe address GET {path} ({}): {code}, expected {want}",
                if token.is_some() { "token" } else { "no token" }
            ));
        }
    }
    anyhow::ensure!(
        wrong.is_empty(),
        "metrics endpoint answers differ:\n{}\n{}",
        wrong.join("\n"),
        separate.logs()
    );
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
