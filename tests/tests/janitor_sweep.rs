//! The start-up sweep of what CSVs left in the cluster while no operator ran: a namespace deleted with its
//! operator stopped leaves its CSV's cluster-scoped objects behind. An APIService among them points at a Service
//! that is gone, so discovery fails for its group and the namespace controller cannot finish: the namespace stays
//! `Terminating` for good. olm-operator, started, deletes the orphans (APIService and webhook configuration
//! included), and the namespace goes.

use k8s_openapi::api::admissionregistration::v1::{
    ServiceReference as WebhookService, ValidatingWebhook, ValidatingWebhookConfiguration,
    WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::api::{Api, DeleteParams, PostParams};
use olm_tests::{Cluster, OperatorProcess, await_object, eventually, with_namespace};
use std::collections::BTreeMap;
use std::time::Duration;

/// The sweep judges an orphan of a gone namespace once it is 30 s old, and looks again every 10 s.
const DEADLINE: Duration = Duration::from_secs(120);

fn owned_by(csv: &str, namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("olm.managed".into(), "true".into()),
        ("olm.owner".into(), csv.into()),
        ("olm.owner.kind".into(), "ClusterServiceVersion".into()),
        ("olm.owner.namespace".into(), namespace.into()),
    ])
}

fn api_service(group: &str, namespace: &str) -> APIService {
    APIService {
        metadata: ObjectMeta {
            name: Some(format!("v1alpha1.{group}")),
            labels: Some(owned_by("gone.v1", namespace)),
            ..ObjectMeta::default()
        },
        spec: Some(APIServiceSpec {
            group: Some(group.into()),
            version: Some("v1alpha1".into()),
            group_priority_minimum: 2000,
            version_priority: 15,
            insecure_skip_tls_verify: Some(true),
            service: Some(ServiceReference {
                namespace: Some(namespace.into()),
                name: Some("gone-service".into()),
                port: Some(443),
            }),
            ..APIServiceSpec::default()
        }),
        status: None,
    }
}

fn webhook(name: &str, namespace: &str) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(owned_by("gone.v1", namespace)),
            ..ObjectMeta::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: "vgone.olm-rs.io".into(),
            admission_review_versions: vec!["v1".into()],
            side_effects: "None".into(),
            client_config: WebhookClientConfig {
                service: Some(WebhookService {
                    namespace: namespace.into(),
                    name: "gone-service".into(),
                    path: Some("/validate".into()),
                    port: Some(443),
                }),
                ..WebhookClientConfig::default()
            },
            // Selects nothing real: the test must not slow other tests' admissions.
            object_selector: Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some(BTreeMap::from([("olm-rs.io/never".into(), "true".into())])),
                    ..Default::default()
                },
            ),
            ..ValidatingWebhook::default()
        }]),
    }
}

#[tokio::test]
async fn orphans_of_a_namespace_deleted_while_no_operator_ran_are_swept_and_the_namespace_goes()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "sweep", |ctx| async move {
        let doomed = format!("{}-gone", ctx.namespace);
        let group = format!("{doomed}.sweep.olm-rs.io");
        let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
        let apis: Api<APIService> = Api::all(ctx.client.clone());
        let hooks: Api<ValidatingWebhookConfiguration> = Api::all(ctx.client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some(doomed.clone()),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                },
            )
            .await?;
        apis.create(&PostParams::default(), &api_service(&group, &doomed))
            .await?;
        hooks
            .create(&PostParams::default(), &webhook(&doomed, &doomed))
            .await?;
        namespaces.delete(&doomed, &DeleteParams::default()).await?;

        // No operator runs: the APIService keeps the namespace terminating.
        await_object(
            &namespaces,
            &doomed,
            DEADLINE,
            "stuck terminating on discovery",
            |n| {
                n.and_then(|n| n.status.as_ref())
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| {
                        c.iter().any(|c| {
                            c.type_ == "NamespaceDeletionDiscoveryFailure" && c.status == "True"
                        })
                    })
            },
        )
        .await?;

        let ns = ctx.namespace.as_str();
        let operator = OperatorProcess::start(
            ctx.cluster,
            "olm-operator",
            &["--watched-namespaces", ns, "--namespace", ns],
        )
        .await?;
        let name = format!("v1alpha1.{group}");
        let swept = async {
            gone(&apis, &name, "the APIService swept").await?;
            gone(&hooks, &doomed, "the webhook configuration swept").await?;
            gone(&namespaces, &doomed, "the namespace gone").await
        };
        if let Err(e) = swept.await {
            anyhow::bail!("{e:#}\nolm-operator's log:\n{}", operator.logs());
        }
        Ok(())
    })
    .await
}

async fn gone<K>(api: &Api<K>, name: &str, what: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(DEADLINE, what, || async move {
        Ok(api.get_opt(name).await?.is_none().then_some(()))
    })
    .await
}
