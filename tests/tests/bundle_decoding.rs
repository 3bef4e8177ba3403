//! Bundles read as OLM reads them, end to end on the control plane, from bundle images in the local registry:
//! a CSV whose `createdAt:` and `containerImage:` annotations have nothing after the colon (YAML null) and a
//! ConfigMap with a null annotation install, the annotations present and empty, as under OLM; a CSV whose
//! annotation is a number (which Go's decoding refuses) is refused before any InstallPlan exists, and the
//! Subscription's `ResolutionFailed` condition and its Event name the bundle, the image, the file, the object and
//! the field; an object the API server refuses fails its plan with a message naming the bundle and the object
//! before the API server's own.

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::Api;
use kube::api::ListParams;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_object, eventually, with_namespace};
use std::collections::BTreeMap;

fn annotations(package: &str) -> String {
    format!(
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: {package}\n  \
         operators.operatorframework.io.bundle.channels.v1: stable\n"
    )
}

/// A CSV as YAML text, with `extra` lines inside `metadata.annotations`.
fn csv_yaml(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\n  \
         annotations:\n{extra}    capabilities: Basic Install\nspec:\n  version: 1.0.0\n  displayName: {name}\n  \
         description:\n  installModes:\n  - type: OwnNamespace\n    supported: true\n  - type: SingleNamespace\n    \
         supported: true\n  install:\n    strategy: deployment\n    spec:\n      deployments: []\n"
    )
}

async fn push(
    registry: &oci::Registry,
    reference: &str,
    files: &[(&str, String)],
) -> anyhow::Result<String> {
    let layer = oci::build::tar_gz(
        &files
            .iter()
            .map(|(p, t)| (p.to_string(), t.clone().into_bytes()))
            .collect::<Vec<_>>(),
    )?;
    let digest = registry
        .push(
            reference,
            &oci::Auth::Anonymous,
            vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
            &BTreeMap::new(),
        )
        .await?;
    Ok(oci::publish::pinned(reference, &digest))
}

#[tokio::test]
async fn null_fields_install_as_olm_installs_them_and_a_refusal_names_the_field()
-> anyhow::Result<()> {
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "godecode", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let empty = push(
            &registry,
            &format!("{prefix}/p-empty:v1"),
            &[
                ("metadata/annotations.yaml", annotations("p-empty")),
                (
                    "manifests/p-empty.clusterserviceversion.yaml",
                    csv_yaml("p-empty.v1.0.0", "    createdAt:\n    containerImage:\n"),
                ),
                (
                    "manifests/settings.configmap.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p-empty-settings\n  annotations:\n    \
                     note:\n  labels:\ndata:\n  level: info\n"
                        .to_string(),
                ),
            ],
        )
        .await?;
        let bad = push(
            &registry,
            &format!("{prefix}/p-bad:v1"),
            &[
                ("metadata/annotations.yaml", annotations("p-bad")),
                (
                    "manifests/p-bad.clusterserviceversion.yaml",
                    csv_yaml("p-bad.v1.0.0", "    replicas: 3\n"),
                ),
            ],
        )
        .await?;
        // One the decoding accepts and the API server refuses (a label value with spaces).
        let refused = push(
            &registry,
            &format!("{prefix}/p-api:v1"),
            &[
                ("metadata/annotations.yaml", annotations("p-api")),
                (
                    "manifests/p-api.clusterserviceversion.yaml",
                    csv_yaml("p-api.v1.0.0", ""),
                ),
                (
                    "manifests/labelled.configmap.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p-api-labelled\n  labels:\n    \
                     tier: not a label value\n"
                        .to_string(),
                ),
            ],
        )
        .await?;
        let mut docs = fbc_package("p-empty", &[("p-empty.v1.0.0", "1.0.0", None, &empty)]);
        docs.extend(fbc_package("p-bad", &[("p-bad.v1.0.0", "1.0.0", None, &bad)]));
        docs.extend(fbc_package("p-api", &[("p-api.v1.0.0", "1.0.0", None, &refused)]));
        let serve = RegistryProcess::serve_fbc(&ctx, &fbc_text(&docs))?;
        let port = serve.port;
        let _cat = catalog_operator(
            &ctx,
            &["--registry-probe-interval", "500ms", "--install-plan-retry-timeout", "1s"],
        )
        .await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "decoding", &format!("127.0.0.1:{port}")).await?;
        subscription(&ctx, sub_to(&ctx, "p-empty", "p-empty", "decoding")).await?;

        // Null annotations install, present and empty. (One namespace resolves as one: p-bad is subscribed
        // after p-empty is installed, or its refusal would hold p-empty back too, as under OLM.)
        await_sub(&ctx, "p-empty", "AtLatestKnown", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let csv = await_object(&csvs, "p-empty.v1.0.0", DEADLINE, "Succeeded", |c| {
            c.is_some_and(|c| c.phase().as_str() == "Succeeded")
        })
        .await?;
        let csv_annotations = csv.metadata.annotations.unwrap_or_default();
        for key in ["createdAt", "containerImage"] {
            assert_eq!(csv_annotations.get(key).map(String::as_str), Some(""), "{key}");
        }
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let cm = await_object(&cms, "p-empty-settings", DEADLINE, "created", |c| c.is_some()).await?;
        assert_eq!(
            cm.metadata.annotations.unwrap_or_default().get("note").map(String::as_str),
            Some("")
        );

        // Refused by the API server while the plan is applied: the plan fails naming the bundle, the object and the
        // API server's field message, and the Subscription says so.
        subscription(&ctx, sub_to(&ctx, "p-api", "p-api", "decoding")).await?;
        let sub = await_sub(&ctx, "p-api", "InstallPlanFailed naming the bundle", |s| {
            sub_condition(s, "InstallPlanFailed").is_some_and(|(_, _, m)| {
                m.contains("bundle p-api.v1.0.0: error creating ConfigMap p-api-labelled")
                    && m.contains("metadata.labels")
            })
        })
        .await?;
        let (_, _, message) = sub
            .status
            .as_ref()
            .and_then(|s| sub_condition(s, "InstallPlanFailed"))
            .unwrap_or_default();
        eprintln!("API refusal: {message}");

        // A number where Go reads a string: refused, naming everything, with no InstallPlan.
        subscription(&ctx, sub_to(&ctx, "p-bad", "p-bad", "decoding")).await?;
        let wanted = [
            "bundle p-bad.v1.0.0",
            bad.as_str(),
            "file manifests/p-bad.clusterserviceversion.yaml",
            "ClusterServiceVersion p-bad.v1.0.0",
            "field metadata.annotations.replicas",
            "expected a string",
        ];
        let sub = await_sub(&ctx, "p-bad", "ResolutionFailed naming the field", |s| {
            sub_condition(s, "ResolutionFailed").is_some_and(|(st, reason, m)| {
                st == "True"
                    && reason == "ErrorPreventedResolution"
                    && wanted.iter().all(|w| m.contains(w))
            })
        })
        .await?;
        assert!(
            sub.status.and_then(|s| s.install_plan_ref).is_none(),
            "no InstallPlan for a refused bundle"
        );
        let events: Api<Event> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let events = &events;
        let wanted = &wanted;
        let note = eventually(DEADLINE, "a ResolutionFailed Event naming the field", || async move {
            let list = events
                .list(&ListParams::default().fields("involvedObject.name=p-bad"))
                .await?;
            Ok(list.items.into_iter().find_map(|e| {
                let m = e.message.unwrap_or_default();
                (e.reason.as_deref() == Some("ResolutionFailed")
                    && wanted.iter().all(|w| m.contains(w)))
                .then_some(m)
            }))
        })
        .await?;
        eprintln!("refusal: {note}");
        Ok(())
    })
    .await
}
