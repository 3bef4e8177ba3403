//! The chaos workload in four namespaces ([`namespaces`]): first, a Subscription walking a four-CSV `replaces`
//! chain (Automatic, ConfigMap catalog) and a Manual Subscription to the `skipRange` head of a package served over
//! gRPC by the `registry` binary, approved mid-run; second, a Subscription whose CSV requires an API owned by a
//! package of the other catalog; third, a global operator under an AllNamespaces group, copied into the others,
//! the group narrowed to the first namespace mid-run; fourth, created and deleted mid-run with a Subscription
//! whose CSV has `clusterPermissions`, leaving no trace. Its end state ([`end_state`]) and the check that the
//! cluster holds it ([`at_head`]).

use crate::TestContext;
use crate::catalog_fixture::*;
use crate::converge::{cluster_rbac, group_roles};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::crd::subscription::{Subscription, SubscriptionState};
use std::time::Duration;

/// The deadline of every wait for state in a run (the workload's mid-run writes, convergence).
pub const CONVERGE: Duration = Duration::from_secs(120);
pub const VERSIONS: [&str; 4] = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"];
pub const HEAD: &str = "chain.v1.3.0";
/// The second package, served over gRPC by the `registry` binary (through `crate::slow_tcp`): its head
/// replaces and skips (`skipRange`) the first, and the Subscription names no starting CSV, so it installs the head
/// in one plan. (One plan, not two: InstallPlan garbage collection keeps 5 per namespace, the chain makes 4, and
/// which plan a sixth would delete depends on timing, so the end state would not be comparable.)
pub const SIDE_VERSIONS: [&str; 2] = ["1.0.0", "1.1.0"];
pub const SIDE_HEAD: &str = "side.v1.1.0";
/// The second namespace's operator (in the ConfigMap catalog) requires an API (a CRD) owned by `dep`, served by
/// the gRPC catalog: the resolver installs both in one plan and generates the Subscription to `dep`.
pub const APP_HEAD: &str = "app.v1.0.0";
pub const DEP_HEAD: &str = "dep.v1.0.0";
/// The global operator (ConfigMap catalog), installed in its own namespace under an AllNamespaces group and
/// copied into the two others.
pub const GLOBAL_HEAD: &str = "global.v1.0.0";
/// The operator of the namespace created and deleted mid-run (ConfigMap catalog; `clusterPermissions`).
pub const TEMP_HEAD: &str = "temp.v1.0.0";
/// The API `app` requires and `dep` owns: a CRD of its own per run (`gizmos.<ns suffix>.chaos.olm-rs.io`), so
/// runs do not share a cluster-scoped object.
pub fn gizmo(ns: &str) -> Crd {
    let suffix = &ns[ns.len().saturating_sub(6)..];
    Crd::new("gizmos", &format!("{suffix}.chaos.olm-rs.io"), "Gizmo")
}

/// How much of the workload a test runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The first namespace's part alone (the chain and the Manual gRPC Subscription).
    Primary,
    /// All of it: also the second namespace (a dependency across catalogs), the global operator's namespace
    /// (an AllNamespaces group, narrowed mid-run to the first namespace: its CSV's copies follow) and a
    /// namespace created and deleted mid-run (with a Subscription whose CSV has cluster permissions).
    Full,
}

/// The namespaces of a run, by role: `ns` (the test's own: both catalogs, it is the operators' global catalog
/// namespace), `ns2` (`<ns>-b`), `nsg` (`<ns>-g`) and `nsd` (`<ns>-d`, created and deleted mid-run: last).
pub fn namespaces(ns: &str, scope: Scope) -> Vec<(&'static str, String)> {
    let mut all = vec![("ns", ns.to_string())];
    if scope == Scope::Full {
        all.push(("ns2", format!("{ns}-b")));
        all.push(("nsg", format!("{ns}-g")));
        all.push(("nsd", format!("{ns}-d")));
    }
    all
}

/// What one namespace holds at the end: its CSVs (name, and the namespace a copy is copied from), all
/// Succeeded; its Subscriptions (name, head CSV, the Deployment that head owns).
pub struct Want {
    ns: String,
    csvs: Vec<(String, Option<String>)>,
    subs: Vec<(String, String, String)>,
}

/// The end state of the workload: each package's head alone, Succeeded, owning its Deployment; each
/// Subscription at it; with [`Scope::Full`] the dependency installed beside the CSV that requires it (under the
/// Subscription the resolver generated), the global operator in its namespace and its copies in the others.
pub fn end_state(ns: &str, scope: Scope) -> Vec<Want> {
    let s = |v: &str| v.to_string();
    let sub = |name: &str, head: &str, deployment: &str| (s(name), s(head), s(deployment));
    let mut first = Want {
        ns: s(ns),
        csvs: vec![(s(HEAD), None), (s(SIDE_HEAD), None)],
        subs: vec![
            sub("chain", HEAD, "chain-operator"),
            sub("side", SIDE_HEAD, "side-operator"),
        ],
    };
    if scope == Scope::Primary {
        return vec![first];
    }
    // The global group ends narrowed to the first namespace: its copy there, none in the second.
    let nsg = format!("{ns}-g");
    first.csvs.push((s(GLOBAL_HEAD), Some(nsg.clone())));
    let second = Want {
        ns: format!("{ns}-b"),
        csvs: vec![(s(APP_HEAD), None), (s(DEP_HEAD), None)],
        subs: vec![
            sub("app", APP_HEAD, "app-operator"),
            sub(&format!("dep-stable-grpc-{ns}"), DEP_HEAD, "dep-operator"),
        ],
    };
    let global = Want {
        ns: nsg,
        csvs: vec![(s(GLOBAL_HEAD), None)],
        subs: vec![sub("global", GLOBAL_HEAD, "global-operator")],
    };
    vec![first, second, global]
}

/// Whether the run's namespaces hold [`end_state`]; the error says what is off.
pub async fn at_head(ctx: &TestContext, scope: Scope) -> anyhow::Result<Option<()>> {
    let mut off = Vec::new();
    for want in end_state(&ctx.namespace, scope) {
        let ns = want.ns.as_str();
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), ns);
        let mut got: Vec<(String, Option<String>, CsvPhase)> = csvs
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .map(|c| {
                let from = c
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("olm.copiedFrom").cloned());
                (c.metadata.name.clone().unwrap_or_default(), from, c.phase())
            })
            .collect();
        got.sort();
        let mut expected: Vec<(String, Option<String>, CsvPhase)> = want
            .csvs
            .iter()
            .map(|(n, from)| (n.clone(), from.clone(), CsvPhase::Succeeded))
            .collect();
        expected.sort();
        if got != expected {
            off.push(format!("{ns}: CSVs {got:?}"));
        }
        let subs: Api<Subscription> = Api::namespaced(ctx.client.clone(), ns);
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
        for (sub, head, deployment) in &want.subs {
            let status = subs
                .get_opt(sub)
                .await?
                .and_then(|s| s.status)
                .unwrap_or_default();
            let owner = deployments
                .get_opt(deployment)
                .await?
                .and_then(|d| d.metadata.labels)
                .and_then(|l| l.get(annotations::OWNER).cloned());
            if status.state != SubscriptionState::AtLatestKnown
                || &status.installed_csv != head
                || owner.as_deref() != Some(head.as_str())
            {
                off.push(format!(
                    "{ns}: subscription {sub} {:?} at {:?}, deployment owned by {owner:?}",
                    status.state, status.installed_csv
                ));
            }
        }
    }
    if scope == Scope::Full {
        off.extend(no_trace(ctx).await?);
    }
    if off.is_empty() {
        return Ok(Some(()));
    }
    Err(anyhow::anyhow!("{}", off.join("; ")))
}

/// What is left that should not be: the namespace created and deleted mid-run, cluster-scoped RBAC of any
/// run namespace's CSVs (none has `clusterPermissions` but the deleted namespace's; the global operator's roles
/// lifted for its AllNamespaces group must go once the group is narrowed), and the provided-API ClusterRoles of
/// the deleted namespace's OperatorGroup.
async fn no_trace(ctx: &TestContext) -> anyhow::Result<Vec<String>> {
    let mut off = Vec::new();
    let nsd = format!("{}-d", ctx.namespace);
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    if let Some(n) = api.get_opt(&nsd).await? {
        let phase = n.status.and_then(|s| s.phase).unwrap_or_default();
        off.push(format!("namespace {nsd} still there ({phase})"));
    }
    for (_, ns) in namespaces(&ctx.namespace, Scope::Full) {
        for (kind, owner, _) in cluster_rbac(&ctx.client, &ns).await? {
            off.push(format!("{kind} of {ns}/{owner} left"));
        }
    }
    // The deleted namespace's OperatorGroup is gone with it, so its provided-API ClusterRoles must go too.
    for (group, role) in group_roles(&ctx.client, &nsd).await? {
        off.push(format!(
            "ClusterRole {role} of OperatorGroup {nsd}/{group} left"
        ));
    }
    Ok(off)
}

/// The workload: an OperatorGroup, a ConfigMap catalog with the four-CSV `replaces` chain, and an Automatic
/// Subscription starting at its first CSV; a gRPC catalog (`grpc_address`: `super::grpc_catalog`) with a two-CSV
/// package and an
/// Manual Subscription to its head, approved mid-run ([`approve_side`]). With [`Scope::Full`], in the second
/// namespace (its own OperatorGroup) an Automatic Subscription to `app` of the ConfigMap catalog, which requires
/// the API of `dep` in the gRPC catalog (a dependency across catalogs); in the global namespace an
/// AllNamespaces OperatorGroup and an Automatic Subscription to `global`. Each namespace makes at most 5
/// InstallPlans (garbage collection keeps 5: a sixth would make the end state depend on timing).
pub async fn workload(ctx: &TestContext, grpc_address: &str, scope: Scope) -> anyhow::Result<()> {
    let op = |v: &str| {
        Op::new("chain", v)
            .min_ready_seconds(1)
            .versioned_deployment()
    };
    let mut ops = vec![op(VERSIONS[0])];
    for pair in VERSIONS.windows(2) {
        ops.push(op(pair[1]).replaces(&format!("chain.v{}", pair[0])));
    }
    if scope == Scope::Full {
        ops.push(
            Op::new("app", "1.0.0")
                .min_ready_seconds(1)
                .requires(&gizmo(&ctx.namespace)),
        );
        ops.push(Op::new("global", "1.0.0").min_ready_seconds(1));
        ops.push(
            Op::new("temp", "1.0.0")
                .min_ready_seconds(1)
                .cluster_permissions(),
        );
    }
    operator_group(ctx).await?;
    configmap_catalog(ctx, "cat", &Catalog::with(ops), 0).await?;
    address_catalog(ctx, "grpc", grpc_address).await?;
    subscription(
        ctx,
        sub_to(ctx, "chain", "chain", "cat")
            .starting_csv("chain.v1.0.0")
            .approval(Approval::Automatic),
    )
    .await?;
    subscription(
        ctx,
        sub_to(ctx, "side", "side", "grpc").approval(Approval::Manual),
    )
    .await?;
    if scope == Scope::Full {
        let catalogs = ctx.namespace.as_str();
        let in_ns = |ns: String| in_namespace(ctx, ns);
        let second = in_ns(format!("{catalogs}-b"));
        operator_group(&second).await?;
        subscription(
            &second,
            sub_to(&second, "app", "app", "cat")
                .source("cat", catalogs)
                .approval(Approval::Automatic),
        )
        .await?;
        let global = in_ns(format!("{catalogs}-g"));
        create(&global, Og::named("global").build()).await?;
        subscription(
            &global,
            sub_to(&global, "global", "global", "cat")
                .source("cat", catalogs)
                .approval(Approval::Automatic),
        )
        .await?;
    }
    Ok(())
}

pub fn in_namespace(ctx: &TestContext, ns: String) -> TestContext {
    TestContext {
        client: ctx.client.clone(),
        namespace: ns,
        cluster: ctx.cluster,
    }
}
