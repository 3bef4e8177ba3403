//! The `operators.coreos.com/v1` Operator view (issue 17, spec §1.7) on the control plane: a Subscription's
//! package gets one cluster-scoped Operator `<package>.<namespace>` whose `status.components` lists the
//! Subscription, its CSV (with its phase as condition), InstallPlan, owned CRD, Deployment, ServiceAccount and
//! RBAC, each labelled `operators.coreos.com/<package>.<namespace>`; deleting the Operator deletes no component,
//! and the Operator comes back while its components remain.

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::DeleteParams;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::operator::Operator;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use std::collections::BTreeSet;

fn kinds(op: &Operator) -> BTreeSet<String> {
    op.status
        .as_ref()
        .and_then(|s| s.components.as_ref())
        .map(|c| {
            c.refs
                .iter()
                .filter_map(|r| r.object.kind.clone())
                .collect()
        })
        .unwrap_or_default()
}

const WANTED: [&str; 8] = [
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Deployment",
    "InstallPlan",
    "Role",
    "RoleBinding",
    "ServiceAccount",
    "Subscription",
];

#[tokio::test]
async fn a_subscribed_package_gets_an_operator_listing_its_components_and_deleting_it_deletes_nothing()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "opview", |ctx| async move {
        let _cat = catalog_operator(&ctx, &[]).await?;
        let _olm = olm_operator(&ctx).await?;
        let crd = Crd::new(
            "gadgets",
            &format!(
                "{}.opview.olm-rs.io",
                &ctx.namespace[ctx.namespace.len() - 6..]
            ),
            "Gadget",
        );
        operator_group(&ctx).await?;
        configmap_catalog(
            &ctx,
            "cat",
            &Catalog::with(vec![Op::new("viewed", "0.1.0").owns(&crd)]),
            0,
        )
        .await?;
        subscription(&ctx, sub_to(&ctx, "viewed", "viewed", "cat")).await?;
        await_sub(&ctx, "viewed", "AtLatestKnown", |s| {
            s.state == SubscriptionState::AtLatestKnown
        })
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        await_object(&csvs, "viewed.v0.1.0", DEADLINE, "Succeeded", |c| {
            c.and_then(|c| c.status.as_ref())
                .is_some_and(|s| s.phase == CsvPhase::Succeeded)
        })
        .await?;

        let name = format!("viewed.{}", ctx.namespace);
        let label = format!("operators.coreos.com/{name}");
        let operators: Api<Operator> = Api::all(ctx.client.clone());
        let result = async {
            let op = await_object(
                &operators,
                &name,
                DEADLINE,
                "every component listed, the CSV Succeeded",
                |o| {
                    o.is_some_and(|o| {
                        let csv_succeeded = o
                            .status
                            .as_ref()
                            .and_then(|s| s.components.as_ref())
                            .is_some_and(|c| {
                                c.refs.iter().any(|r| {
                                    r.object.kind.as_deref() == Some("ClusterServiceVersion")
                                        && r.conditions
                                            .iter()
                                            .any(|c| c.type_ == "Succeeded" && c.status == "True")
                                })
                            });
                        csv_succeeded && WANTED.iter().all(|k| kinds(o).contains(*k))
                    })
                },
            )
            .await?;
            let components = op
                .status
                .as_ref()
                .and_then(|s| s.components.clone())
                .expect("components");
            let selector = components.label_selector.expect("label selector");
            let expr = &selector.match_expressions.unwrap_or_default()[0];
            assert_eq!(
                (expr.key.as_str(), expr.operator.as_str()),
                (label.as_str(), "Exists")
            );
            assert!(
                components.refs.iter().all(|r| r.object.kind.as_deref()
                    != Some("ClusterServiceVersion")
                    || r.object.namespace.as_deref() == Some(ctx.namespace.as_str())),
                "only the original CSV, no copies: {:?}",
                components.refs
            );
            let sorted: Vec<_> = components
                .refs
                .iter()
                .map(|r| r.object.kind.clone().unwrap_or_default())
                .collect();
            let mut expected = sorted.clone();
            expected.sort();
            assert_eq!(
                sorted, expected,
                "refs are sorted by kind as OLM sorts them"
            );

            let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let deployment = deployments.get("viewed-operator").await?;
            assert!(
                deployment
                    .metadata
                    .labels
                    .unwrap_or_default()
                    .contains_key(&label),
                "the Deployment carries the label"
            );
            let owner_refs = deployment.metadata.owner_references.unwrap_or_default();
            assert!(
                owner_refs.iter().all(|r| r.kind != "Operator"),
                "components are never owned by the Operator"
            );

            let first_uid = op.metadata.uid.clone().expect("uid");
            operators.delete(&name, &DeleteParams::default()).await?;
            let again = await_object(
                &operators,
                &name,
                DEADLINE,
                "made again while components remain",
                |o| {
                    o.is_some_and(|o| {
                        o.metadata.uid.as_deref() != Some(first_uid.as_str())
                            && !kinds(o).is_empty()
                    })
                },
            )
            .await?;
            assert!(kinds(&again).contains("Deployment"));
            assert!(
                deployments.get_opt("viewed-operator").await?.is_some(),
                "deleting the Operator deleted no Deployment"
            );
            assert!(
                csvs.get_opt("viewed.v0.1.0").await?.is_some(),
                "deleting the Operator deleted no CSV"
            );
            anyhow::Ok(())
        }
        .await;
        let _ = operators.delete(&name, &DeleteParams::default()).await;
        result
    })
    .await
}
