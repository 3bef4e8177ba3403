//! What the apiserver answers for objects OLM's CRDs reject: each is rejected with OLM's message, by a CEL rule
//! (a CSV's `spec.release`), a required field (a Subscription without `spec.source`) or a keyed list (two
//! containers of one name in a CSV's deployment), and the valid neighbour is accepted. Run as is on our CRDs,
//! and with `OLM_RS_CRDS=$(hack/olm-crds.sh)` on OLM's own published CRDs: the messages must be the same.
//! Creates are dry runs: nothing is stored.

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use messages::crd::csv::{
    ClusterServiceVersion, ClusterServiceVersionSpec, NamedInstallStrategy, StrategyDeploymentSpec,
    StrategyDetailsDeployment,
};
use messages::crd::subscription::{Subscription, SubscriptionSpec};
use olm_tests::{Cluster, TestContext, with_namespace};

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

fn meta(ctx: &TestContext, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(ctx.namespace.clone()),
        ..ObjectMeta::default()
    }
}

fn container(name: &str) -> Container {
    Container {
        name: name.to_owned(),
        image: Some("example.com/op:1".to_owned()),
        ..Container::default()
    }
}

/// A CSV with one deployment whose pod runs `containers`, and `release` if given.
fn csv(
    ctx: &TestContext,
    name: &str,
    release: Option<&str>,
    containers: &[&str],
) -> ClusterServiceVersion {
    let labels = [("app".to_owned(), name.to_owned())].into();
    let deployment = DeploymentSpec {
        selector: LabelSelector {
            match_labels: Some(labels),
            ..LabelSelector::default()
        },
        template: PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: containers.iter().map(|c| container(c)).collect(),
                ..PodSpec::default()
            }),
        },
        ..DeploymentSpec::default()
    };
    ClusterServiceVersion {
        metadata: meta(ctx, name),
        spec: ClusterServiceVersionSpec {
            display_name: name.to_owned(),
            release: release.map(str::to_owned),
            install: NamedInstallStrategy {
                strategy: "deployment".to_owned(),
                spec: Some(StrategyDetailsDeployment {
                    deployments: vec![StrategyDeploymentSpec {
                        name: name.to_owned(),
                        spec: deployment,
                        label: None,
                    }],
                    ..StrategyDetailsDeployment::default()
                }),
            },
            ..ClusterServiceVersionSpec::default()
        },
        status: None,
    }
}

/// The apiserver's answer to a dry-run create: `Ok(())` or the rejection's message.
async fn create_csv(
    ctx: &TestContext,
    csv: &ClusterServiceVersion,
) -> anyhow::Result<Result<(), String>> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    answer(api.create(&dry_run(), csv).await.map(|_| ()))
}

fn answer(result: Result<(), kube::Error>) -> anyhow::Result<Result<(), String>> {
    match result {
        Ok(()) => Ok(Ok(())),
        Err(kube::Error::Api(status)) if status.code == 422 => Ok(Err(status.message.clone())),
        Err(other) => Err(other.into()),
    }
}

fn expect_rejected(got: Result<(), String>, what: &str, fragment: &str) -> anyhow::Result<()> {
    match got {
        Err(message) if message.contains(fragment) => Ok(()),
        Err(message) => {
            anyhow::bail!("{what}: rejected with {message:?}, expected {fragment:?} in it")
        }
        Ok(()) => anyhow::bail!("{what}: accepted, expected a rejection with {fragment:?}"),
    }
}

#[tokio::test]
async fn a_csv_release_olms_cel_rules_reject_is_rejected_with_olms_message() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "celrel", |ctx| async move {
        eprintln!("CRDs from {}", ctx.cluster.crds_dir().display());
        const CHARSET: &str = "release version must be composed of dot-separated identifiers containing only alphanumerics and hyphens";
        const LEADING_ZERO: &str = "numeric identifiers in release version must not have leading zeros";
        // (release, the message of the rejection; None: accepted)
        let cases: &[(&str, Option<&str>)] = &[
            ("1.2.3-rc1", None),
            ("2026.11", None),
            ("0.10", None),
            ("1..2", Some(CHARSET)),
            ("rc_1", Some(CHARSET)),
            ("1.02", Some(LEADING_ZERO)),
        ];
        for (i, (release, rejection)) in cases.iter().enumerate() {
            let got = create_csv(&ctx, &csv(&ctx, &format!("rel{i}"), Some(release), &["op"])).await?;
            match rejection {
                None => anyhow::ensure!(got.is_ok(), "release {release:?}: rejected: {got:?}"),
                Some(message) => expect_rejected(
                    got,
                    &format!("release {release:?}"),
                    &format!("spec.release: Invalid value: \"{release}\": {message}"),
                )?,
            }
        }
        // OLM's length limit, checked before the rules.
        let long = "123456789012345678901";
        let got = create_csv(&ctx, &csv(&ctx, "rellong", Some(long), &["op"])).await?;
        expect_rejected(got, "a 21-character release", "spec.release: Too long: may not be")?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn objects_olms_schema_rejects_are_rejected_with_olms_message() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "crdrej", |ctx| async move {
        // Two containers of one name: the pod spec's list is keyed by name.
        let twins = create_csv(&ctx, &csv(&ctx, "twins", None, &["op", "op"])).await?;
        expect_rejected(
            twins,
            "two containers named op",
            "spec.install.spec.deployments[0].spec.template.spec.containers[1]: Duplicate value: {\"name\":\"op\"}",
        )?;
        let pair = create_csv(&ctx, &csv(&ctx, "pair", None, &["op", "sidecar"])).await?;
        anyhow::ensure!(pair.is_ok(), "two containers of different names: {pair:?}");

        // A Subscription without `spec.source`: required, and not defaulted away.
        let sub = Subscription {
            metadata: meta(&ctx, "nosource"),
            spec: SubscriptionSpec {
                package: "etcd".to_owned(),
                catalog_source_namespace: ctx.namespace.clone(),
                ..SubscriptionSpec::default()
            },
            status: None,
        };
        let mut body = serde_json::to_value(&sub)?;
        if let Some(spec) = body.get_mut("spec").and_then(serde_json::Value::as_object_mut) {
            spec.remove("source");
        }
        let object: DynamicObject = serde_json::from_value(body)?;
        let api: Api<DynamicObject> = Api::namespaced_with(
            ctx.client.clone(),
            &ctx.namespace,
            &kube::api::ApiResource::erase::<Subscription>(&()),
        );
        let got = answer(api.create(&dry_run(), &object).await.map(|_| ()))?;
        expect_rejected(got, "a Subscription without spec.source", "spec.source: Required value")?;
        Ok(())
    })
    .await
}
