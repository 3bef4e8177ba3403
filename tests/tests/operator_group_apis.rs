//! Provided APIs and membership on the local control plane (spec §3.2-3.4; scenarios 1-8): the group's
//! `olm.providedAPIs` grows through its actor's mailbox without losing concurrent updates; overlapping groups
//! with the same API conflict (`InterOperatorGroupOwnerConflict`) until the other CSV goes, with no manual step;
//! overlapping groups with different APIs do not; a static group protects its APIs; the group reasons
//! (`NoOperatorGroup`, `TooManyOperatorGroups`, `UnsupportedOperatorGroup`) recover to Pending once fixed.

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use messages::crd::operator_group::OperatorGroup;
use olm_tests::await_object;
use serde_json::json;
use std::collections::BTreeSet;

use messages::testing::Og;
use olm_tests::operator_group_fixture::{
    DEADLINE, GroupTest, api, await_phase, await_succeeded, create_csv, csv, key, provided,
};

#[tokio::test]
async fn many_csvs_adding_apis_to_one_group_at_once_lose_no_update() -> anyhow::Result<()> {
    const CSVS: usize = 24;
    GroupTest::new("og-chaos")
        .crds(|ns| {
            let group = format!("{ns}.chaos.olm-rs.io");
            (0..CSVS)
                .map(|i| api(&format!("Bird{i}"), &group))
                .collect()
        })
        .run(|t| async move {
            let apis = &t.crds;
            let ogs = t.ogs();
            t.create_group(Og::named("og").targets(&[&t.ns]).build())
                .await?;
            // Record every value the annotation takes: a lost update shows as a value dropping an API an
            // earlier value had (members never go away here, so nothing may be pruned either).
            let history =
                std::sync::Arc::new(std::sync::Mutex::new(Vec::<BTreeSet<String>>::new()));
            let recorder = {
                use futures::StreamExt;
                let history = history.clone();
                let stream = kube::runtime::watcher(
                    ogs.clone(),
                    kube::runtime::watcher::Config::default().fields("metadata.name=og"),
                );
                tokio::spawn(async move {
                    let mut stream =
                        std::pin::pin!(kube::runtime::WatchStreamExt::applied_objects(stream));
                    while let Some(Ok(group)) = stream.next().await {
                        let value: BTreeSet<String> = provided(&group)
                            .split(',')
                            .filter(|s| !s.is_empty())
                            .map(String::from)
                            .collect();
                        let mut h = history
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        if h.last() != Some(&value) {
                            h.push(value);
                        }
                    }
                })
            };
            let csvs = t.csvs();
            let creates = apis.iter().enumerate().map(|(i, owned)| {
                let csvs = csvs.clone();
                let owned = owned.clone();
                async move {
                    csvs.create(
                        &PostParams::default(),
                        &csv(&format!("bird{i}.v1.0.0"), &["OwnNamespace"], &[owned])?,
                    )
                    .await
                    .map(|_| ())
                    .map_err(anyhow::Error::from)
                }
            });
            futures::future::try_join_all(creates).await?;
            let expected: BTreeSet<String> = apis.iter().map(key).collect();
            let expected_text = expected.iter().cloned().collect::<Vec<_>>().join(",");
            await_object(
                &ogs,
                "og",
                DEADLINE,
                "every CSV's API in olm.providedAPIs",
                move |o: Option<&OperatorGroup>| o.is_some_and(|o| provided(o) == expected_text),
            )
            .await?;
            for i in 0..CSVS {
                await_succeeded(&csvs, &format!("bird{i}.v1.0.0")).await?;
            }
            recorder.abort();
            let history = history
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            for pair in history.windows(2) {
                anyhow::ensure!(
                    pair[0].is_subset(&pair[1]),
                    "olm.providedAPIs lost an update: {:?} then {:?}",
                    pair[0],
                    pair[1]
                );
            }
            eprintln!(
                "olm.providedAPIs took {} distinct values on the way to {CSVS} APIs",
                history.len()
            );
            Ok(())
        })
        .await
}

/// Two groups: `a` in namespace A targeting A, `b` in namespace B targeting A too, so they intersect.
#[tokio::test]
async fn overlapping_groups_conflict_on_the_same_api_until_the_other_csv_goes() -> anyhow::Result<()>
{
    GroupTest::new("og-conflict")
        .extra(&["b"])
        .crds(|a| {
            let group = format!("{a}.conflict.olm-rs.io");
            vec![api("Goose", &group), api("Duck", &group)]
        })
        .run(|t| async move {
            let (a, b) = (&t.ns, &t.extra[0]);
            let (goose, duck) = (t.crds[0].clone(), t.crds[1].clone());
            let (ogs_a, ogs_b) = (t.ogs(), t.ogs_in(b));
            ogs_a
                .create(
                    &PostParams::default(),
                    &Og::named("a").targets(&[a]).build(),
                )
                .await?;
            ogs_b
                .create(
                    &PostParams::default(),
                    &Og::named("b").targets(&[a]).build(),
                )
                .await?;
            let (csvs_a, csvs_b) = (t.csvs(), t.csvs_in(b));
            create_csv(
                &csvs_a,
                "goose-a.v1.0.0",
                &["OwnNamespace"],
                std::slice::from_ref(&goose),
            )
            .await?;
            await_succeeded(&csvs_a, "goose-a.v1.0.0").await?;
            let goose_key = key(&goose);
            await_object(
                &ogs_a,
                "a",
                DEADLINE,
                "a provides Goose",
                move |o: Option<&OperatorGroup>| o.is_some_and(|o| provided(o) == goose_key),
            )
            .await?;
            // Different API in the overlapping group: no conflict.
            create_csv(
                &csvs_b,
                "duck-b.v1.0.0",
                &["SingleNamespace"],
                std::slice::from_ref(&duck),
            )
            .await?;
            await_succeeded(&csvs_b, "duck-b.v1.0.0").await?;
            // Same API: conflict, deployments cleaned, non-terminal.
            create_csv(
                &csvs_b,
                "goose-b.v1.0.0",
                &["SingleNamespace"],
                std::slice::from_ref(&goose),
            )
            .await?;
            await_phase(
                &csvs_b,
                "goose-b.v1.0.0",
                "Failed/InterOperatorGroupOwnerConflict",
                |p, r| p == "Failed" && r == "InterOperatorGroupOwnerConflict",
            )
            .await?;
            // Removing the conflicting CSV resolves the other one with no manual step.
            csvs_a
                .delete("goose-a.v1.0.0", &DeleteParams::default())
                .await?;
            await_phase(
                &csvs_b,
                "goose-b.v1.0.0",
                "Succeeded after the conflict went",
                |p, _| p == "Succeeded",
            )
            .await?;
            let both = [key(&duck), key(&goose)].join(",");
            await_object(
                &ogs_b,
                "b",
                DEADLINE,
                "b provides Duck and Goose",
                move |o: Option<&OperatorGroup>| o.is_some_and(|o| provided(o) == both),
            )
            .await?;
            await_object(
                &ogs_a,
                "a",
                DEADLINE,
                "a pruned",
                |o: Option<&OperatorGroup>| o.is_some_and(|o| provided(o).is_empty()),
            )
            .await?;
            Ok(())
        })
        .await
}

#[tokio::test]
async fn a_static_group_protects_its_apis() -> anyhow::Result<()> {
    GroupTest::new("og-static")
        .crds(|ns| {
            let group = format!("{ns}.static.olm-rs.io");
            vec![api("Goose", &group), api("Duck", &group)]
        })
        .run(|t| async move {
            let (goose, duck) = (t.crds[0].clone(), t.crds[1].clone());
            let ogs = t.ogs();
            let mut group_obj = Og::named("static")
                .targets(&[&t.ns])
                .static_provided_apis(true)
                .build();
            group_obj.metadata.annotations =
                Some([("olm.providedAPIs".to_string(), key(&goose))].into());
            t.create_group(group_obj).await?;
            let csvs = t.csvs();
            create_csv(
                &csvs,
                "duck.v1.0.0",
                &["OwnNamespace"],
                std::slice::from_ref(&duck),
            )
            .await?;
            await_phase(
                &csvs,
                "duck.v1.0.0",
                "Failed/CannotModifyStaticOperatorGroupProvidedAPIs",
                |p, r| p == "Failed" && r == "CannotModifyStaticOperatorGroupProvidedAPIs",
            )
            .await?;
            create_csv(
                &csvs,
                "goose.v1.0.0",
                &["OwnNamespace"],
                std::slice::from_ref(&goose),
            )
            .await?;
            await_succeeded(&csvs, "goose.v1.0.0").await?;
            // Per-API ClusterRoles of the Succeeded CSV, aggregated by the group's roles (scenario 19).
            let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> =
                Api::all(t.ctx.client.clone());
            let crd_name = format!("{}.{}", goose.0, goose.1);
            for suffix in ["admin", "edit", "view", "crdview"] {
                let name = format!("{crd_name}-v1-{suffix}");
                olm_tests::eventually(DEADLINE, &format!("ClusterRole {name}"), || {
                    let (roles, name, crd_name) = (roles.clone(), name.clone(), crd_name.clone());
                    async move {
                        let role = roles.get_opt(&name).await?;
                        Ok(role
                            .filter(|r| {
                                let labels = r.metadata.labels.clone().unwrap_or_default();
                                let aggregate = if suffix == "crdview" { "view" } else { suffix };
                                labels
                                    .get(&format!(
                                        "rbac.authorization.k8s.io/aggregate-to-{aggregate}"
                                    ))
                                    .map(String::as_str)
                                    == Some("true")
                                    && labels.keys().any(|k| {
                                        k.starts_with("olm.opgroup.permissions/aggregate-to-")
                                            && k.ends_with(&format!("-{aggregate}"))
                                    })
                                    && r.metadata.owner_references.iter().flatten().any(|o| {
                                        o.kind == "CustomResourceDefinition" && o.name == crd_name
                                    })
                            })
                            .map(|_| ()))
                    }
                })
                .await?;
            }
            let goose_key = key(&goose);
            let og_now = ogs.get("static").await?;
            assert_eq!(
                provided(&og_now),
                goose_key,
                "a static group's annotation is never rewritten"
            );
            Ok(())
        })
        .await
}

#[tokio::test]
async fn group_failures_recover_to_pending_when_fixed() -> anyhow::Result<()> {
    GroupTest::new("og-fit").extra(&["other"]).run(|t| async move {
            let other = &t.extra[0];
            let (ogs, csvs) = (t.ogs(), t.csvs());
            let name = "fit.v1.0.0";
            create_csv(&csvs, name, &["OwnNamespace"], &[]).await?;
            await_phase(&csvs, name, "Failed/NoOperatorGroup", |p, r| p == "Failed" && r == "NoOperatorGroup").await?;
            // Targets [other] need SingleNamespace (scenario 8).
            ogs.create(&PostParams::default(), &Og::named("og").targets(&[other]).build()).await?;
            await_phase(&csvs, name, "Failed/UnsupportedOperatorGroup", |p, r| p == "Failed" && r == "UnsupportedOperatorGroup").await?;
            csvs.patch(name, &PatchParams::default(), &Patch::Merge(json!({"spec": {"installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true}]}}))).await?;
            await_phase(&csvs, name, "Succeeded once SingleNamespace is supported", |p, _| p == "Succeeded").await?;
            // A second group: TooManyOperatorGroups, recovering once it goes.
            ogs.create(&PostParams::default(), &Og::named("second").build()).await?;
            await_phase(&csvs, name, "Failed/TooManyOperatorGroups", |p, r| p == "Failed" && r == "TooManyOperatorGroups").await?;
            ogs.delete("second", &DeleteParams::default()).await?;
            await_phase(&csvs, name, "recovered from TooManyOperatorGroups", |p, r| p != "Failed" && r != "TooManyOperatorGroups").await?;
            Ok(())
        })
        .await
}
