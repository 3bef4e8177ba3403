//! OperatorGroups on the local control plane, seen from outside (spec §3.1, §3.5; scenarios 6, 16, 18, 19):
//! target selection by list, selector and "all namespaces"; `status.namespaces`/`lastUpdated`; the
//! `olm.operatorgroup.uid/<uid>` namespace labels following the targets; the `MultipleOperatorGroup`
//! condition; the three aggregate ClusterRoles and their removal with the group.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use messages::crd::operator_group::OperatorGroup;
use olm_tests::{await_none_listed, await_object, eventually};
use serde_json::json;
use std::collections::BTreeSet;

use messages::testing::Og;
use olm_tests::operator_group_fixture::{DEADLINE, GroupTest, set_targets};

fn status_namespaces(og: &OperatorGroup) -> Option<BTreeSet<String>> {
    og.status
        .as_ref()?
        .namespaces
        .as_ref()
        .map(|n| n.iter().cloned().collect())
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Wait until exactly `expected` (among `candidates`) carry the group's uid label.
async fn await_labelled(
    client: &Client,
    uid: &str,
    candidates: &[String],
    expected: &[&str],
) -> anyhow::Result<()> {
    let key = format!("olm.operatorgroup.uid/{uid}");
    let expected = set(expected);
    let api: Api<Namespace> = Api::all(client.clone());
    eventually(
        DEADLINE,
        &format!("namespaces labelled {key}: {expected:?}"),
        || {
            let api = api.clone();
            let key = key.clone();
            let expected = expected.clone();
            async move {
                let mut labelled = BTreeSet::new();
                for name in candidates {
                    let ns = api.get(name).await?;
                    if ns
                        .metadata
                        .labels
                        .unwrap_or_default()
                        .get(&key)
                        .is_some_and(|v| v.is_empty())
                    {
                        labelled.insert(name.clone());
                    }
                }
                Ok((labelled == expected).then_some(()))
            }
        },
    )
    .await
}

async fn await_targets(
    api: &Api<OperatorGroup>,
    name: &str,
    expected: BTreeSet<String>,
) -> anyhow::Result<OperatorGroup> {
    await_object(
        api,
        name,
        DEADLINE,
        &format!("status.namespaces = {expected:?}"),
        move |o: Option<&OperatorGroup>| {
            o.is_some_and(|o| {
                status_namespaces(o).as_ref() == Some(&expected)
                    && o.status.as_ref().is_some_and(|s| s.last_updated.is_some())
            })
        },
    )
    .await
}

#[tokio::test]
async fn namespace_labels_follow_the_targets_of_a_group() -> anyhow::Result<()> {
    GroupTest::new("og-labels")
        .extra(&["t1", "t2", "t3"])
        .run(|t| async move {
            let (ns, client) = (&t.ns, &t.ctx.client);
            let [t1, t2, t3] = [&t.extra[0], &t.extra[1], &t.extra[2]];
            let ogs = t.ogs();
            let created = t
                .create_group(Og::named("og").targets(&[t1]).build())
                .await?;
            let uid = created.metadata.uid.clone().unwrap_or_default();
            let all = vec![ns.clone(), t1.clone(), t2.clone(), t3.clone()];
            await_targets(&ogs, "og", set(&[t1])).await?;
            await_labelled(client, &uid, &all, &[t1]).await?;
            for targets in [vec![t1, t2], vec![t1, t2, t3], vec![t1, t3]] {
                let names: Vec<&str> = targets.iter().map(|s| s.as_str()).collect();
                set_targets(&ogs, "og", Some(&names)).await?;
                await_targets(&ogs, "og", set(&names)).await?;
                await_labelled(client, &uid, &all, &names).await?;
            }
            // Cluster-wide: status [""] and no labels anywhere.
            set_targets(&ogs, "og", None).await?;
            await_targets(&ogs, "og", set(&[""])).await?;
            await_labelled(client, &uid, &all, &[]).await?;
            // Deleting the group removes its labels.
            set_targets(&ogs, "og", Some(&[t2])).await?;
            await_labelled(client, &uid, &all, &[t2]).await?;
            ogs.delete("og", &DeleteParams::default()).await?;
            await_labelled(client, &uid, &all, &[]).await?;
            Ok(())
        })
        .await
}

#[tokio::test]
async fn a_selector_group_follows_namespace_labels() -> anyhow::Result<()> {
    GroupTest::new("og-selector")
        .extra(&["a", "b"])
        .run(|t| async move {
            let [a, b] = [&t.extra[0], &t.extra[1]];
            let team = format!("team-{}", t.ns);
            let ogs = t.ogs();
            t.create_group(
                Og::named("og")
                    .selector(&[("olm-rs.io/team", &team)])
                    .build(),
            )
            .await?;
            await_targets(&ogs, "og", set(&[])).await?;
            let namespaces: Api<Namespace> = Api::all(t.ctx.client.clone());
            let label = |value: Option<&str>| {
                Patch::Merge(json!({"metadata": {"labels": {"olm-rs.io/team": value}}}))
            };
            namespaces
                .patch(a, &PatchParams::default(), &label(Some(&team)))
                .await?;
            await_targets(&ogs, "og", set(&[a])).await?;
            namespaces
                .patch(b, &PatchParams::default(), &label(Some(&team)))
                .await?;
            await_targets(&ogs, "og", set(&[a, b])).await?;
            namespaces
                .patch(a, &PatchParams::default(), &label(None))
                .await?;
            await_targets(&ogs, "og", set(&[b])).await?;
            Ok(())
        })
        .await
}

fn multiple(og: &OperatorGroup) -> bool {
    og.status.as_ref().is_some_and(|s| {
        s.conditions.iter().any(|c| {
            c.type_ == "MultipleOperatorGroup"
                && c.status == "True"
                && c.reason == "MultipleOperatorGroupsFound"
        })
    })
}

#[tokio::test]
async fn two_groups_in_a_namespace_both_carry_the_multiple_group_condition_until_one_goes()
-> anyhow::Result<()> {
    GroupTest::new("og-multi")
        .run(|t| async move {
            let ogs = t.ogs();
            t.create_group(Og::named("first").targets(&[&t.ns]).build())
                .await?;
            await_object(
                &ogs,
                "first",
                DEADLINE,
                "synced, single",
                |o: Option<&OperatorGroup>| o.is_some_and(|o| o.status.is_some() && !multiple(o)),
            )
            .await?;
            t.create_group(Og::named("second").build()).await?;
            for name in ["first", "second"] {
                await_object(
                    &ogs,
                    name,
                    DEADLINE,
                    "MultipleOperatorGroup=True",
                    |o: Option<&OperatorGroup>| o.is_some_and(multiple),
                )
                .await?;
            }
            ogs.delete("second", &DeleteParams::default()).await?;
            await_object(
                &ogs,
                "first",
                DEADLINE,
                "MultipleOperatorGroup removed",
                |o: Option<&OperatorGroup>| o.is_some_and(|o| !multiple(o)),
            )
            .await?;
            Ok(())
        })
        .await
}

fn account_condition(o: &OperatorGroup) -> Option<(String, String, String)> {
    o.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "OperatorGroupServiceAccount")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn account_ref(o: &OperatorGroup) -> Option<String> {
    o.status
        .as_ref()?
        .service_account_ref
        .as_ref()?
        .name
        .clone()
}

#[tokio::test]
async fn a_group_reports_its_service_account_missing_then_references_it() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    GroupTest::new("og-sa")
        .run(|t| async move {
            let ogs = t.ogs();
            t.create_group(
                Og::named("scoped")
                    .targets(&[&t.ns])
                    .service_account("installer")
                    .build(),
            )
            .await?;
            await_object(
                &ogs,
                "scoped",
                DEADLINE,
                "OperatorGroupServiceAccount=True ServiceAccountNotFound",
                |o: Option<&OperatorGroup>| {
                    o.and_then(account_condition)
                        == Some((
                            "True".into(),
                            "ServiceAccountNotFound".into(),
                            "ServiceAccount installer not found".into(),
                        ))
                },
            )
            .await?;
            let accounts: Api<ServiceAccount> = Api::namespaced(t.ctx.client.clone(), &t.ns);
            let mut sa = ServiceAccount::default();
            sa.metadata.name = Some("installer".into());
            accounts.create(&PostParams::default(), &sa).await?;
            await_object(
                &ogs,
                "scoped",
                DEADLINE,
                "the condition gone and status.serviceAccountRef = installer",
                |o: Option<&OperatorGroup>| {
                    o.is_some_and(|o| {
                        account_condition(o).is_none()
                            && account_ref(o).as_deref() == Some("installer")
                    })
                },
            )
            .await?;
            await_object(
                &accounts,
                "installer",
                DEADLINE,
                "labelled olm.managed=true",
                |a: Option<&ServiceAccount>| {
                    a.and_then(|a| a.metadata.labels.as_ref())
                        .and_then(|l| l.get("olm.managed"))
                        .map(String::as_str)
                        == Some("true")
                },
            )
            .await?;
            ogs.patch(
                "scoped",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"serviceAccountName": null}})),
            )
            .await?;
            await_object(
                &ogs,
                "scoped",
                DEADLINE,
                "status.serviceAccountRef cleared",
                |o: Option<&OperatorGroup>| {
                    o.is_some_and(|o| o.status.is_some() && account_ref(o).is_none())
                },
            )
            .await?;
            Ok(())
        })
        .await
}

#[tokio::test]
async fn a_group_gets_three_aggregate_cluster_roles_that_go_with_it() -> anyhow::Result<()> {
    GroupTest::new("og-roles")
        .run(|t| async move {
            let ogs = t.ogs();
            t.create_group(Og::named("og").targets(&[&t.ns]).build())
                .await?;
            let roles: Api<ClusterRole> = Api::all(t.ctx.client.clone());
            let selector = format!(
                "olm.owner=og,olm.owner.namespace={},olm.owner.kind=OperatorGroup,olm.managed=true",
                t.ns
            );
            let found = eventually(DEADLINE, "three aggregate cluster roles", || {
                let roles = roles.clone();
                let selector = selector.clone();
                async move {
                    let list = roles.list(&ListParams::default().labels(&selector)).await?;
                    Ok((list.items.len() == 3).then_some(list.items))
                }
            })
            .await?;
            let mut suffixes: Vec<String> = found
                .iter()
                .filter_map(|r| r.metadata.name.clone())
                .filter_map(|n| {
                    n.strip_prefix("olm.og.og.")
                        .and_then(|rest| rest.split_once('-'))
                        .map(|(suffix, _)| suffix.to_string())
                })
                .collect();
            suffixes.sort();
            assert_eq!(suffixes, vec!["admin", "edit", "view"]);
            ogs.delete("og", &DeleteParams::default()).await?;
            await_none_listed(
                &roles,
                &ListParams::default().labels(&selector),
                DEADLINE,
                "the group's cluster roles deleted",
            )
            .await?;
            Ok(())
        })
        .await
}
