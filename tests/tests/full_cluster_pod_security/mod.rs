//! The full cluster's Pod Security check (tests/tests/full_cluster.rs): the `restricted` profile is enforced on
//! olm-rs's namespace and admits every olm-rs pod, and refuses one that is not restricted.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use olm_tests::await_object;

use super::DEADLINE;

const OLM_NS: &str = "olm";

/// Pod Security Admission enforces `restricted` on olm-rs's namespace (deploy/namespace.yaml, as OLM labels its
/// own), every olm-rs pod there was admitted (each Deployment has its replicas), and a pod that is not restricted
/// is refused there by the API server.
pub async fn pod_security_is_enforced(client: &Client) -> anyhow::Result<()> {
    let namespace = Api::<Namespace>::all(client.clone()).get(OLM_NS).await?;
    let labels = namespace.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("restricted"),
        "{OLM_NS}: PSA enforce label ({labels:?})"
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), OLM_NS);
    for deployment in deployments.list(&ListParams::default()).await? {
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let want = deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1);
        await_object(
            &deployments,
            &name,
            DEADLINE,
            "every replica admitted and ready",
            |d| {
                d.and_then(|d| d.status.as_ref())
                    .is_some_and(|s| s.ready_replicas == Some(want))
            },
        )
        .await?;
    }
    let unrestricted = Pod {
        metadata: kube::api::ObjectMeta {
            name: Some("psa-probe".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                name: "c".into(),
                image: Some("localhost/olm-rs/pause:dev".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match Api::<Pod>::namespaced(client.clone(), OLM_NS)
        .create(&dry_run, &unrestricted)
        .await
    {
        Err(kube::Error::Api(e)) if e.message.contains("violates PodSecurity \"restricted") => {
            Ok(())
        }
        Err(e) => {
            anyhow::bail!("an unrestricted pod in {OLM_NS}: refused, but not by Pod Security: {e}")
        }
        Ok(_) => anyhow::bail!("an unrestricted pod was admitted in {OLM_NS}"),
    }
}
