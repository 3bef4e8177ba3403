//! Copied CSVs on the local control plane (spec §2.7; scenarios 14-17): an all-namespaces operator is copied
//! into every target namespace (reason `Copied`, `olm.copiedFrom`, no `olm.targetNamespaces`), into a namespace
//! created later, not any more when the group narrows, not while OLMConfig disables copies, and never again
//! once the parent is deleted.

use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::olm_config::OLMConfig;
use olm_tests::{await_object, eventually};
use serde_json::json;

use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::ListParams;
use messages::testing::Og;
use olm_tests::operator_group_fixture::{
    DEADLINE, GroupTest, create_test_namespace, csv, set_targets, with_permissions,
};

const NAME: &str = "copied.v1.0.0";

fn is_copy_of(copy: &ClusterServiceVersion, parent_ns: &str, phase: &str) -> bool {
    let labels = copy.metadata.labels.clone().unwrap_or_default();
    let annotations = copy.metadata.annotations.clone().unwrap_or_default();
    let status = copy.status.clone().unwrap_or_default();
    labels.get("olm.copiedFrom").map(String::as_str) == Some(parent_ns)
        && !annotations.contains_key("olm.targetNamespaces")
        && annotations.get("olm.operatorNamespace").map(String::as_str) == Some(parent_ns)
        && status.reason.as_str() == "Copied"
        && status.phase.as_str() == phase
        && status.message
            == format!("The operator is running in {parent_ns} but is managing this namespace")
}

/// Wait until exactly `present` of `namespaces` hold a copy (with the parent's phase `phase`).
async fn await_copies(
    client: &Client,
    parent_ns: &str,
    namespaces: &[String],
    present: &[&String],
    phase: &str,
) -> anyhow::Result<()> {
    eventually(
        DEADLINE,
        &format!("copies exactly in {present:?}"),
        || async move {
            for ns in namespaces {
                let api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
                let copy = api.get_opt(NAME).await?;
                let want = present.contains(&ns);
                let ok = match &copy {
                    Some(c) => want && is_copy_of(c, parent_ns, phase),
                    None => !want,
                };
                if !ok {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        },
    )
    .await
}

async fn set_copies_disabled(client: &Client, disabled: Option<bool>) -> anyhow::Result<()> {
    let api: Api<OLMConfig> = Api::all(client.clone());
    if api.get_opt("cluster").await?.is_none() {
        let config: OLMConfig = serde_json::from_value(
            json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"}, "spec": {}}),
        )?;
        api.create(&PostParams::default(), &config).await?;
    }
    api.patch(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"features": {"disableCopiedCSVs": disabled}}})),
    )
    .await?;
    Ok(())
}

async fn await_config_condition(
    client: &Client,
    status: &'static str,
    reason: &'static str,
) -> anyhow::Result<()> {
    let api: Api<OLMConfig> = Api::all(client.clone());
    await_object(
        &api,
        "cluster",
        DEADLINE,
        &format!("DisabledCopiedCSVs={status} {reason}"),
        move |c: Option<&OLMConfig>| {
            c.and_then(|c| c.status.as_ref()).is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "DisabledCopiedCSVs" && c.status == status && c.reason == reason
                })
            })
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn an_all_namespaces_operator_is_copied_where_its_group_reaches() -> anyhow::Result<()> {
    GroupTest::new("og-copies")
        .extra(&["t1", "t2"])
        .later(&["t3"])
        .run(|t| async move {
            let (ns, client) = (&t.ns, &t.ctx.client);
            let [t1, t2, t3] = [&t.extra[0], &t.extra[1], &t.extra[2]];
            let ogs = t.ogs();
            t.create_group(Og::named("global").build()).await?;
            let csvs = t.csvs();
            csvs.create(
                &PostParams::default(),
                &with_permissions(
                    csv(NAME, &["OwnNamespace", "AllNamespaces"], &[])?,
                    "copied-sa",
                )?,
            )
            .await?;
            let parent = await_object(
                &csvs,
                NAME,
                DEADLINE,
                "Succeeded and annotated for all namespaces",
                |c: Option<&ClusterServiceVersion>| {
                    c.is_some_and(|c| {
                        c.status
                            .as_ref()
                            .is_some_and(|s| s.phase.as_str() == "Succeeded")
                            && c.metadata
                                .annotations
                                .as_ref()
                                .and_then(|a| a.get("olm.targetNamespaces"))
                                .is_some_and(String::is_empty)
                    })
                },
            )
            .await?;
            let annotations = parent.metadata.annotations.unwrap_or_default();
            assert_eq!(
                annotations.get("olm.operatorGroup").map(String::as_str),
                Some("global")
            );
            assert_eq!(annotations.get("olm.operatorNamespace"), Some(ns));
            let all = vec![t1.clone(), t2.clone(), t3.clone()];
            await_copies(client, ns, &all, &[t1, t2], "Succeeded").await?;
            // The operator's Role is lifted to a same-named ClusterRole that may also read namespaces (scenario 15).
            let role_names: Vec<String> = Api::<Role>::namespaced(client.clone(), ns)
                .list(
                    &ListParams::default()
                        .labels(&format!("olm.owner={NAME},olm.owner.namespace={ns}")),
                )
                .await?
                .items
                .into_iter()
                .filter_map(|r| r.metadata.name)
                .collect();
            anyhow::ensure!(
                !role_names.is_empty(),
                "the CSV's Role exists in its namespace"
            );
            await_lifted(client, &role_names, true).await?;
            // A namespace created later gets its copy (scenario 15).
            create_test_namespace(client, t3).await?;
            await_copies(client, ns, &all, &[t1, t2, t3], "Succeeded").await?;
            // OLMConfig disableCopiedCSVs removes the copies and re-enabling brings them back (scenario 17).
            set_copies_disabled(client, Some(true)).await?;
            let disabled = async {
                await_copies(client, ns, &all, &[], "Succeeded").await?;
                // ... and the parent carries exactly one Warning Event saying so.
                await_copy_warnings(client, ns, 1).await?;
                await_config_condition(client, "True", "CopiedCSVsDisabled").await
            }
            .await;
            set_copies_disabled(client, None).await?;
            disabled?;
            await_copies(client, ns, &all, &[t1, t2, t3], "Succeeded").await?;
            await_config_condition(client, "False", "CopiedCSVsEnabled").await?;
            await_copy_warnings(client, ns, 0).await?;
            // Narrowing the group to its own namespace deletes the copies (scenario 15).
            set_targets(&ogs, "global", Some(&[ns])).await?;
            await_copies(client, ns, &all, &[], "Succeeded").await?;
            // ... and removes the RBAC lifted cluster-wide for all namespaces; widening lifts it again.
            await_lifted(client, &role_names, false).await?;
            set_targets(&ogs, "global", None).await?;
            await_copies(client, ns, &all, &[t1, t2, t3], "Succeeded").await?;
            await_lifted(client, &role_names, true).await?;
            // Deleting the parent deletes every copy (scenario 16) and the lifted RBAC.
            csvs.delete(NAME, &DeleteParams::default()).await?;
            await_copies(client, ns, &all, &[], "Succeeded").await?;
            await_lifted(client, &role_names, false).await?;
            Ok(())
        })
        .await
}

#[tokio::test]
async fn a_multi_namespace_operator_is_copied_into_its_other_target_only() -> anyhow::Result<()> {
    GroupTest::new("og-copy-multi")
        .extra(&["target", "other"])
        .run(|t| async move {
            let (ns, client) = (&t.ns, &t.ctx.client);
            let [target, other] = [&t.extra[0], &t.extra[1]];
            let ogs = t.ogs();
            t.create_group(Og::named("og").targets(&[target, ns]).build())
                .await?;
            let csvs = t.csvs();
            csvs.create(
                &PostParams::default(),
                &with_permissions(
                    csv(NAME, &["OwnNamespace", "MultiNamespace"], &[])?,
                    "copied-sa",
                )?,
            )
            .await?;
            let mut sorted = [ns.clone(), target.clone()];
            sorted.sort();
            let wanted = sorted.join(",");
            await_object(
                &csvs,
                NAME,
                DEADLINE,
                "annotated with both targets, sorted",
                |c: Option<&ClusterServiceVersion>| {
                    c.is_some_and(|c| {
                        c.metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get("olm.targetNamespaces"))
                            == Some(&wanted)
                    })
                },
            )
            .await?;
            await_copies(
                client,
                ns,
                &[target.clone(), other.clone()],
                &[target],
                "Succeeded",
            )
            .await?;
            // The operator's Role and RoleBinding are copied into the target (scenario 14), not elsewhere.
            let selector =
                format!("olm.copiedFrom={ns},olm.owner={NAME},olm.owner.namespace={target}");
            let roles: Api<Role> = Api::namespaced(client.clone(), target);
            let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), target);
            eventually(
                DEADLINE,
                "copied Role and RoleBinding in the target",
                || {
                    let (roles, bindings, selector) =
                        (roles.clone(), bindings.clone(), selector.clone());
                    async move {
                        let r = roles
                            .list(&ListParams::default().labels(&selector))
                            .await?
                            .items;
                        let b = bindings
                            .list(&ListParams::default().labels(&selector))
                            .await?
                            .items;
                        let rule_ok = r.iter().any(|r| {
                            r.rules.iter().flatten().any(|rule| {
                                rule.resources.as_deref() == Some(&["configmaps".to_string()][..])
                            })
                        });
                        Ok((rule_ok && !b.is_empty()).then_some(()))
                    }
                },
            )
            .await?;
            let elsewhere: Api<Role> = Api::namespaced(client.clone(), other);
            assert!(
                elsewhere
                    .list(&ListParams::default().labels(&format!("olm.copiedFrom={ns}")))
                    .await?
                    .items
                    .is_empty()
            );
            // With its group gone, deleting the parent still collects the copy.
            ogs.delete("og", &DeleteParams::default()).await?;
            eventually(DEADLINE, "group deleted", || {
                let ogs = ogs.clone();
                async move { Ok(ogs.get_opt("og").await?.is_none().then_some(())) }
            })
            .await?;
            csvs.delete(NAME, &DeleteParams::default()).await?;
            await_copies(
                client,
                ns,
                &[target.clone(), other.clone()],
                &[],
                "Succeeded",
            )
            .await?;
            Ok(())
        })
        .await
}

/// Await the CSV's Roles lifted to same-named ClusterRoles (reading namespaces too) and ClusterRoleBindings
/// (`present`), or both gone.
async fn await_lifted(
    client: &kube::Client,
    role_names: &[String],
    present: bool,
) -> anyhow::Result<()> {
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(client.clone());
    for name in role_names {
        let what = format!(
            "lifted ClusterRole and ClusterRoleBinding {name} {}",
            if present { "present" } else { "gone" }
        );
        eventually(DEADLINE, &what, || {
            let (cluster_roles, bindings, name) =
                (cluster_roles.clone(), bindings.clone(), name.clone());
            async move {
                let role = cluster_roles.get_opt(&name).await?.filter(|r| {
                    r.rules.iter().flatten().any(|rule| {
                        rule.resources.as_deref() == Some(&["namespaces".to_string()][..])
                            && rule.verbs == ["get", "list", "watch"]
                    })
                });
                let binding = bindings.get_opt(&name).await?;
                let done = if present {
                    role.is_some() && binding.is_some()
                } else {
                    role.is_none() && binding.is_none()
                };
                Ok(done.then_some(()))
            }
        })
        .await?;
    }
    Ok(())
}

/// Await exactly `count` `DisabledCopiedCSVs` Warning Events on the parent CSV.
async fn await_copy_warnings(client: &kube::Client, ns: &str, count: usize) -> anyhow::Result<()> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), ns);
    let selector = format!(
        "involvedObject.kind=ClusterServiceVersion,involvedObject.name={NAME},reason=DisabledCopiedCSVs"
    );
    eventually(
        DEADLINE,
        &format!("{count} DisabledCopiedCSVs event(s) on {NAME}"),
        || {
            let (events, selector) = (events.clone(), selector.clone());
            async move {
                let list = events
                    .list(&ListParams::default().fields(&selector))
                    .await?;
                let right = list.items.len() == count
                    && list.items.iter().all(|e| {
                        e.type_.as_deref() == Some("Warning")
                            && e.message.as_deref()
                                == Some(&format!("CSV copying disabled for {ns}/{NAME}")[..])
                    });
                Ok(right.then_some(()))
            }
        },
    )
    .await
}
