//! Webhooks and API services of CSVs on the light control plane (issue 14; the node simulator plays the
//! kubelet, so nothing answers the webhooks here: `failurePolicy: Ignore` on a group nobody uses): the
//! certificate Secret, the Service, the cert volumes and `olmcahash` on the deployment, webhook configurations
//! scoped to the OperatorGroup's namespaces with the CA bundle, `certsRotateAt`; rotation with a short validity
//! (`OLM_RS_CERT_VALIDITY_SECONDS`) rolls the deployment once and the CA bundle follows; deleting the CSV
//! removes what it served; bad input fails with a clear reason and creates nothing; a second CSV owning the
//! same APIService fails with OLM's owner conflict (scenario 10).

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use messages::crd::csv::{
    ApiServiceDescription, ClusterServiceVersion, CsvPhase, CsvReason, InstallModeType,
};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::{Og, Webhook};

use olm_tests::csv_fixture::webhooks::*;
use olm_tests::csv_fixture::{await_phase, csvs};
use olm_tests::{await_object, eventually};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(90);

#[tokio::test]
async fn a_webhook_operator_gets_certificates_a_service_and_scoped_configurations()
-> anyhow::Result<()> {
    with_operator("csv-webhooks", &[], |ctx| async move {
        let ns = ctx.namespace.clone();
        let group = create_group(&ctx).await?;
        let hooks = csv("hooks.v1", "webhook.server")
            .webhook(hook(Webhook::validating(&format!("vwidgets.{ns}.test.olm-rs.io"), "webhook.server"), &ns).build())
            .webhook(hook(Webhook::mutating(&format!("mwidgets.{ns}.test.olm-rs.io"), "webhook.server"), &ns).build());
        let created = std::time::Instant::now();
        csvs(&ctx).create(&PostParams::default(), &hooks.build()).await?;
        let done = await_phase(&ctx, "hooks.v1", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        eprintln!("CSV creation to Succeeded: {:?}", created.elapsed());
        let status = done.status.clone().unwrap_or_default();
        let rotate_at = status.certs_rotate_at.clone().expect("certsRotateAt is set");
        let updated = status.certs_last_updated.clone().expect("certsLastUpdated is set");
        let validity = rotate_at.0.as_second() - updated.0.as_second();
        assert!(
            (729 * 86_400..=730 * 86_400).contains(&validity),
            "rotation two years minus a day after issue (OLM's defaults), got {validity} s"
        );

        // The Secret: a TLS pair and the CA, owned by the CSV, annotated with the CA hash.
        let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
            .get("webhook-server-service-cert")
            .await?;
        assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
        let data = secret.data.clone().unwrap_or_default();
        let ca = ca_of(&secret)?;
        assert!(data.contains_key("tls.crt") && data.contains_key("tls.key"));
        let hash = sha256_hex(&ca);
        assert_eq!(
            secret.metadata.annotations.as_ref().and_then(|a| a.get("olmcahash")),
            Some(&hash)
        );
        let owners = secret.metadata.owner_references.clone().unwrap_or_default();
        assert!(owners.iter().any(|o| o.kind == "ClusterServiceVersion" && o.name == "hooks.v1"));

        // The Service for the container port, selecting the deployment's pods.
        let service = Api::<Service>::namespaced(ctx.client.clone(), &ns)
            .get("webhook-server-service")
            .await?;
        let spec = service.spec.clone().unwrap_or_default();
        let ports: Vec<i32> = spec.ports.iter().flatten().map(|p| p.port).collect();
        assert_eq!(ports, vec![9443]);
        assert_eq!(
            spec.selector.and_then(|s| s.get("app").cloned()).as_deref(),
            Some("webhook.server")
        );

        // The deployment mounts the pair where OLM does and carries the CA hash.
        let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
            .get("webhook.server")
            .await?;
        assert_eq!(ca_hash_of_deployment(&deployment), Some(hash.clone()));
        let pod = deployment.spec.as_ref().and_then(|s| s.template.spec.clone()).unwrap_or_default();
        let mounts: Vec<String> = pod.containers[0]
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.mount_path.clone())
            .collect();
        assert!(mounts.contains(&"/tmp/k8s-webhook-server/serving-certs".to_string()), "{mounts:?}");
        assert!(mounts.contains(&"/apiserver.local.config/certificates".to_string()), "{mounts:?}");

        // One configuration per description, scoped to the group's namespaces, trusting the CA.
        let params = ListParams::default().labels(&owner_selector("hooks.v1", &ns));
        let validating = Api::<ValidatingWebhookConfiguration>::all(ctx.client.clone()).list(&params).await?;
        let mutating = Api::<MutatingWebhookConfiguration>::all(ctx.client.clone()).list(&params).await?;
        assert_eq!((validating.items.len(), mutating.items.len()), (1, 1));
        let v = &validating.items[0];
        assert!(v.metadata.name.as_deref().unwrap_or_default().starts_with(&format!("vwidgets.{ns}.test.olm-rs.io-")));
        let webhook = &v.webhooks.as_ref().expect("webhooks")[0];
        assert_eq!(webhook.client_config.ca_bundle.as_ref().map(|b| b.0.clone()), Some(ca.clone()));
        let target = webhook.client_config.service.clone().expect("a service reference");
        assert_eq!(
            (target.name.as_str(), target.namespace.as_str(), target.port, target.path.as_deref()),
            ("webhook-server-service", ns.as_str(), Some(9443), Some("/validate"))
        );
        let uid = group.metadata.uid.clone().expect("a uid");
        let selector = webhook.namespace_selector.clone().and_then(|s| s.match_labels).unwrap_or_default();
        assert!(selector.contains_key(&format!("olm.operatorgroup.uid/{uid}")), "{selector:?}");

        // A deleted Service is a clear reason, and the CSV puts it back.
        Api::<Service>::namespaced(ctx.client.clone(), &ns)
            .delete("webhook-server-service", &DeleteParams::default())
            .await?;
        await_object(&csvs(&ctx), "hooks.v1", DEADLINE, "the missing Service in the status", |c: Option<&ClusterServiceVersion>| {
            c.is_some_and(|c| {
                c.status.as_ref().is_some_and(|s| {
                    s.conditions.iter().any(|h| h.message.contains("service webhook-server-service of deployment webhook.server is missing"))
                })
            })
        })
        .await?;
        await_phase(&ctx, "hooks.v1", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
        Api::<Service>::namespaced(ctx.client.clone(), &ns).get("webhook-server-service").await?;

        // Deleting the CSV removes the cluster-scoped configurations with it.
        csvs(&ctx).delete("hooks.v1", &DeleteParams::default()).await?;
        eventually(DEADLINE, "the webhook configurations deleted", || {
            let (client, params) = (ctx.client.clone(), params.clone());
            async move {
                let v = Api::<ValidatingWebhookConfiguration>::all(client.clone()).list(&params).await?;
                let m = Api::<MutatingWebhookConfiguration>::all(client).list(&params).await?;
                Ok((v.items.is_empty() && m.items.is_empty()).then_some(()))
            }
        })
        .await?;
        eventually(DEADLINE, "the certificate Secret garbage-collected", || {
            let client = ctx.client.clone();
            let ns = ns.clone();
            async move {
                let gone = Api::<Secret>::namespaced(client, &ns)
                    .get_opt("webhook-server-service-cert")
                    .await?
                    .is_none();
                Ok(gone.then_some(()))
            }
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn certificates_rotate_before_expiry_and_the_ca_bundle_follows() -> anyhow::Result<()> {
    rotation(Identity::Admin).await
}

/// The same rotation by olm-operator as its own account: it creates the pair, reads it back and replaces it
/// through its grant of exactly that Secret.
#[tokio::test]
async fn certificates_rotate_as_olm_operators_own_account() -> anyhow::Result<()> {
    rotation(Identity::OwnAccount).await
}

async fn rotation(identity: Identity) -> anyhow::Result<()> {
    // 40 s certificates rotate after 20 s (the window is half a short validity).
    with_operator_as(
        identity,
        "csv-webhook-rotation",
        &[("OLM_RS_CERT_VALIDITY_SECONDS", "40")],
        move |ctx| async move {
            let ns = ctx.namespace.clone();
            create_group(&ctx).await?;
            let webhook = hook(
                Webhook::validating(&format!("vwidgets.{ns}.test.olm-rs.io"), "rotating"),
                &ns,
            );
            csvs(&ctx)
                .create(
                    &PostParams::default(),
                    &csv("rot.v1", "rotating").webhook(webhook.build()).build(),
                )
                .await?;
            let first = await_phase(
                &ctx,
                "rot.v1",
                CsvPhase::Succeeded,
                CsvReason::InstallSucceeded,
            )
            .await?;
            let first_rotate_at = first
                .status
                .as_ref()
                .and_then(|s| s.certs_rotate_at.clone())
                .expect("certsRotateAt");
            let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
            let before = deployments.get("rotating").await?;
            let old_hash = ca_hash_of_deployment(&before).expect("a CA hash");
            let old_generation = before.metadata.generation.unwrap_or_default();
            let params = ListParams::default().labels(&owner_selector("rot.v1", &ns));
            let configs = Api::<ValidatingWebhookConfiguration>::all(ctx.client.clone());
            let config_name = configs.list(&params).await?.items[0]
                .metadata
                .name
                .clone()
                .expect("a name");
            let old_ca = ca_of(
                &Api::<Secret>::namespaced(ctx.client.clone(), &ns)
                    .get("rotating-service-cert")
                    .await?,
            )?;
            // While the deployment rolls, the webhook trusts a new CA first and the previous one after it.
            let both_seen = {
                let (configs, old_ca) = (configs.clone(), old_ca.clone());
                tokio::spawn(async move {
                    await_object(
                        &configs,
                        &config_name,
                        DEADLINE,
                        "a CA bundle trusting a new CA and the previous one",
                        move |c: Option<&ValidatingWebhookConfiguration>| {
                            let bundle = c
                                .and_then(|c| {
                                    c.webhooks
                                        .as_ref()?
                                        .first()?
                                        .client_config
                                        .ca_bundle
                                        .clone()
                                })
                                .map(|b| b.0)
                                .unwrap_or_default();
                            bundle.len() > old_ca.len() && bundle.ends_with(&old_ca)
                        },
                    )
                    .await
                })
            };

            // The rotation passes through OLM's reason and comes back to Succeeded with a new CA everywhere.
            await_object(
                &csvs(&ctx),
                "rot.v1",
                DEADLINE,
                "a NeedsCertRotation step",
                |c: Option<&ClusterServiceVersion>| {
                    c.is_some_and(|c| {
                        c.status.as_ref().is_some_and(|s| {
                            s.conditions.iter().any(|h| {
                                h.reason == CsvReason::NeedsCertRotation
                                    && h.message == "CSV owns resources that require a cert refresh"
                            })
                        })
                    })
                },
            )
            .await?;
            let rotated = await_rotated(&csvs(&ctx), "rot.v1", DEADLINE, first_rotate_at).await?;
            let after = deployments.get("rotating").await?;
            let new_hash = ca_hash_of_deployment(&after).expect("a CA hash");
            assert_ne!(new_hash, old_hash, "the pod template carries the new CA");
            assert_eq!(
                after.metadata.generation.unwrap_or_default(),
                old_generation + 1,
                "one rotation rolls the deployment once"
            );
            let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
                .get("rotating-service-cert")
                .await?;
            let ca = ca_of(&secret)?;
            assert_eq!(
                sha256_hex(&ca),
                new_hash,
                "the Secret holds the CA the pods trust"
            );
            both_seen.await??;
            let validating = configs.list(&params).await?;
            let bundle = validating.items[0].webhooks.as_ref().expect("webhooks")[0]
                .client_config
                .ca_bundle
                .clone()
                .expect("a CA bundle");
            assert_eq!(
                sha256_hex(&bundle.0),
                new_hash,
                "once the rollout settled, the webhook trusts the new CA only"
            );
            let status = rotated.status.unwrap_or_default();
            assert!(status.certs_last_updated.is_some());
            if identity == Identity::OwnAccount {
                // What olm-operator granted itself: get and update on this CSV's one certificate Secret.
                let roles: Api<k8s_openapi::api::rbac::v1::Role> =
                    Api::namespaced(ctx.client.clone(), &ns);
                let grants = roles
                    .list(
                        &ListParams::default()
                            .labels(&format!("olm-rs.io/olm-operator-grant={ns}")),
                    )
                    .await?;
                let rules: Vec<_> = grants
                    .items
                    .into_iter()
                    .flat_map(|r| r.rules.unwrap_or_default())
                    .map(|r| (r.resource_names.unwrap_or_default(), r.verbs))
                    .collect();
                assert_eq!(
                    rules,
                    vec![(
                        vec!["rotating-service-cert".to_string()],
                        vec!["get".to_string(), "update".to_string()]
                    )]
                );
            }
            csvs(&ctx)
                .delete("rot.v1", &DeleteParams::default())
                .await?;
            Ok(())
        },
    )
    .await
}

#[tokio::test]
async fn bad_webhook_definitions_fail_with_a_clear_reason_and_create_nothing() -> anyhow::Result<()>
{
    with_operator("csv-webhook-bad", &[], |ctx| async move {
        let ns = ctx.namespace.clone();
        create_group(&ctx).await?;
        let ghost = hook(Webhook::validating(&format!("vghost.{ns}.test.olm-rs.io"), "ghost"), &ns);
        csvs(&ctx)
            .create(&PostParams::default(), &csv("ghost.v1", "real").webhook(ghost.build()).build())
            .await?;
        let crd = format!("widgets.{ns}.test.olm-rs.io");
        let conversion = hook(Webhook::conversion(&format!("cwidgets.{ns}.test.olm-rs.io"), "converter", &[&crd]), &ns);
        csvs(&ctx)
            .create(&PostParams::default(), &csv("conv.v1", "converter").webhook(conversion.build()).build())
            .await?;
        let failed = await_phase(&ctx, "ghost.v1", CsvPhase::Failed, CsvReason::InvalidWebhookDescription).await?;
        assert_eq!(
            failed.status.unwrap_or_default().message,
            format!("webhook vghost.{ns}.test.olm-rs.io names deployment \"ghost\", which is not in the CSV's install strategy")
        );
        let failed = await_phase(&ctx, "conv.v1", CsvPhase::Failed, CsvReason::InvalidWebhookDescription).await?;
        assert_eq!(
            failed.status.unwrap_or_default().message,
            "unable to manage conversion webhook: CSVs with conversion webhooks must support only AllNamespaces"
        );
        assert_nothing_served(&ctx, "ghost.v1", "ghost-service").await?;
        assert_nothing_served(&ctx, "conv.v1", "converter-service").await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_second_csv_owning_the_same_api_service_fails_with_olms_owner_conflict()
-> anyhow::Result<()> {
    with_operator("csv-apiservice", &[], |ctx| async move {
        let ns = ctx.namespace.clone();
        create_group(&ctx).await?;
        let group = format!("{ns}.test.olm-rs.io");
        let api = |deployment: &str| ApiServiceDescription {
            name: "widgets".into(),
            group: group.clone(),
            version: "v1alpha1".into(),
            kind: "Widget".into(),
            deployment_name: Some(deployment.into()),
            container_port: Some(5443),
            display_name: Some("Widgets".into()),
            ..ApiServiceDescription::default()
        };
        let api_name = format!("v1alpha1.{group}");
        csvs(&ctx)
            .create(
                &PostParams::default(),
                &csv("first.v1", "first-api")
                    .owns_api_service(api("first-api"))
                    .build(),
            )
            .await?;
        // The first installs: its APIService exists, owned by it, with its CA and Service.
        let apis: Api<APIService> = Api::all(ctx.client.clone());
        let owned = await_object(
            &apis,
            &api_name,
            DEADLINE,
            "the APIService",
            |a: Option<&APIService>| a.is_some(),
        )
        .await?;
        let labels = owned.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("olm.owner").map(String::as_str),
            Some("first.v1")
        );
        let spec = owned.spec.clone().expect("a spec");
        let service = spec.service.clone().expect("a service");
        assert_eq!(
            (
                service.name.as_deref(),
                service.namespace.as_deref(),
                service.port
            ),
            (Some("first-api-service"), Some(ns.as_str()), Some(5443))
        );
        let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
            .get("first-api-service-cert")
            .await?;
        let ca = ca_of(&secret)?;
        assert_eq!(spec.ca_bundle.map(|b| b.0), Some(ca));
        // Nothing serves it on the light cluster: the first waits for the APIService to become available.
        await_object(
            &csvs(&ctx),
            "first.v1",
            DEADLINE,
            "waiting on the APIService",
            |c: Option<&ClusterServiceVersion>| {
                c.is_some_and(|c| {
                    c.phase() == CsvPhase::Installing
                        && c.status
                            .as_ref()
                            .is_some_and(|s| s.message.contains("is not available"))
                })
            },
        )
        .await?;

        // The second may not take it.
        csvs(&ctx)
            .create(
                &PostParams::default(),
                &csv("second.v1", "second-api")
                    .owns_api_service(api("second-api"))
                    .build(),
            )
            .await?;
        let second = await_phase(
            &ctx,
            "second.v1",
            CsvPhase::Failed,
            CsvReason::OwnerConflict,
        )
        .await?;
        assert_eq!(
            second.status.unwrap_or_default().message,
            "unable to adopt APIService"
        );
        assert_nothing_served(&ctx, "second.v1", "second-api-service").await?;
        let still = apis.get(&api_name).await?;
        assert_eq!(
            still
                .metadata
                .labels
                .clone()
                .unwrap_or_default()
                .get("olm.owner")
                .map(String::as_str),
            Some("first.v1")
        );

        // The APIService goes with its CSV. The failed second retries and may create its own at once, so
        // the first's is gone when the name is free or held by another object (another UID).
        let first_uid = still.metadata.uid.clone();
        csvs(&ctx)
            .delete("first.v1", &DeleteParams::default())
            .await?;
        eventually(DEADLINE, "the first's APIService deleted", || {
            let apis = apis.clone();
            let name = api_name.clone();
            let first_uid = first_uid.clone();
            async move {
                let now = apis.get_opt(&name).await?;
                Ok(now
                    .is_none_or(|a| a.metadata.uid != first_uid)
                    .then_some(()))
            }
        })
        .await?;
        // With the first gone the second may install it; deleting the second removes it again, so no
        // unavailable APIService outlives the test (it would slow every operator's discovery on the plane).
        csvs(&ctx)
            .delete("second.v1", &DeleteParams::default())
            .await?;
        eventually(DEADLINE, "the second's APIService deleted", || {
            let apis = apis.clone();
            let name = api_name.clone();
            async move { Ok(apis.get_opt(&name).await?.is_none().then_some(())) }
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_conversion_webhook_points_the_owned_crd_at_the_service_until_the_csv_goes()
-> anyhow::Result<()> {
    with_operator("csv-conversion", &[], |ctx| async move {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let ns = ctx.namespace.clone();
        // An AllNamespaces group: conversion webhooks are only for operators supporting only AllNamespaces.
        let og: OperatorGroup = Og::named("global").build();
        Api::<OperatorGroup>::namespaced(ctx.client.clone(), &ns).create(&PostParams::default(), &og).await?;
        let group = format!("{ns}.test.olm-rs.io");
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        crds.create(&PostParams::default(), &crd(&group)).await?;
        let crd_name = format!("widgets.{group}");
        let result = async {
            let conversion = hook(Webhook::conversion(&format!("cwidgets.{group}"), "converter", &[&crd_name]), &ns)
                .path("/convert");
            let c = csv("conv.v1", "converter")
                .install_modes(&[InstallModeType::AllNamespaces])
                .webhook(conversion.build())
                .owns_crd(&crd_name, "v1", "Widget")
                .build();
            csvs(&ctx).create(&PostParams::default(), &c).await?;
            await_phase(&ctx, "conv.v1", CsvPhase::Succeeded, CsvReason::InstallSucceeded).await?;
            let live = crds.get(&crd_name).await?;
            let conv = live.spec.conversion.clone().expect("a conversion");
            assert_eq!(conv.strategy, "Webhook");
            let webhook = conv.webhook.expect("a webhook");
            let config = webhook.client_config.expect("a client config");
            let service = config.service.expect("a service");
            assert_eq!(
                (service.name.as_str(), service.namespace.as_str(), service.path.as_deref(), service.port),
                ("converter-service", ns.as_str(), Some("/convert"), Some(9443))
            );
            let secret = Api::<Secret>::namespaced(ctx.client.clone(), &ns).get("converter-service-cert").await?;
            let ca = ca_of(&secret)?;
            assert_eq!(config.ca_bundle.map(|b| b.0), Some(ca));
            assert_eq!(webhook.conversion_review_versions, vec!["v1".to_string()]);
            // Deleting the CSV (nothing replaces it) sets the conversion back to None.
            csvs(&ctx).delete("conv.v1", &DeleteParams::default()).await?;
            await_object(&crds, &crd_name, DEADLINE, "conversion None", |c: Option<&CustomResourceDefinition>| {
                c.is_some_and(|c| c.spec.conversion.as_ref().is_some_and(|v| v.strategy == "None"))
            })
            .await?;
            anyhow::Ok(())
        }
        .await;
        crds.delete(&crd_name, &DeleteParams::default()).await?;
        result
    })
    .await
}

/// Figure: CSV creation → Succeeded for a webhook operator on the light cluster, p50 over 10 sequential CSVs
/// (`cargo test -p olm-tests --test csv_webhooks -- --ignored --nocapture webhook_operator_time_to_succeeded`).
#[tokio::test]
#[ignore = "benchmark: prints the time from CSV creation to Succeeded for a webhook operator"]
async fn webhook_operator_time_to_succeeded() -> anyhow::Result<()> {
    with_operator("csv-webhook-bench", &[], |ctx| async move {
        let ns = ctx.namespace.clone();
        create_group(&ctx).await?;
        let mut times = Vec::new();
        for i in 0..10 {
            let name = format!("bench{i}.v1");
            let deployment = format!("bench{i}");
            let webhook = hook(
                Webhook::validating(&format!("v{i}.{ns}.test.olm-rs.io"), &deployment),
                &ns,
            );
            let start = std::time::Instant::now();
            csvs(&ctx)
                .create(
                    &PostParams::default(),
                    &csv(&name, &deployment).webhook(webhook.build()).build(),
                )
                .await?;
            await_phase(
                &ctx,
                &name,
                CsvPhase::Succeeded,
                CsvReason::InstallSucceeded,
            )
            .await?;
            times.push(start.elapsed());
            csvs(&ctx).delete(&name, &DeleteParams::default()).await?;
        }
        times.sort();
        eprintln!(
            "webhook operator CSV creation -> Succeeded over {}: p50 {:?}, min {:?}, max {:?}",
            times.len(),
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
        Ok(())
    })
    .await
}
