//! The janitor without a cluster: catalog-operator's fake API server (scripted status codes, scripted lists),
//! paused tokio time, stores filled by hand, and the loop's journal read back.

use super::*;
use k8s_openapi::api::core::v1::Namespace;
use messages::crd::csv::ClusterServiceVersion;
use messages::msg::{Journal, JournalEvent};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::fake_api::FakeApi;

const BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
/// What the start-up sweep lists, in order.
const SWEPT: [&str; 5] = [BINDINGS, ROLES, API_SERVICES, VALIDATING, MUTATING];

/// A fake API whose swept lists hold these bindings, roles and APIServices (no webhook configurations).
fn sweep_api(
    bindings: Vec<serde_json::Value>,
    roles: Vec<serde_json::Value>,
    api_services: Vec<serde_json::Value>,
) -> FakeApi {
    FakeApi::new(vec![])
        .with_list(BINDINGS, bindings)
        .with_list(ROLES, roles)
        .with_list(API_SERVICES, api_services)
        .with_list(VALIDATING, vec![])
        .with_list(MUTATING, vec![])
}

/// The sweep's deletions: each a `deletecollection` of one object by name, as (collection, name).
fn swept(api: &FakeApi) -> Vec<(String, String)> {
    api.seen()
        .iter()
        .filter(|s| s.method == "DELETE")
        .map(|s| {
            let name = s
                .query
                .split('&')
                .find_map(|q| q.strip_prefix("fieldSelector=metadata.name%3D"))
                .unwrap_or("(no name selector)");
            (s.path.clone(), name.to_string())
        })
        .collect()
}

fn csv(uid: &str) -> ClusterServiceVersion {
    messages::testing::Csv::named("a.v1")
        .in_ns("ns")
        .uid(uid)
        .build()
}

/// Shared state whose CSV store holds `csvs` and whose Namespace store holds `namespaces`.
fn shared(client: kube::Client, csvs: Vec<ClusterServiceVersion>, namespaces: &[&str]) -> Shared {
    with_groups(client, csvs, namespaces, Vec::new())
}

fn with_groups(
    client: kube::Client,
    csvs: Vec<ClusterServiceVersion>,
    namespaces: &[&str],
    operator_groups: Vec<messages::crd::operator_group::OperatorGroup>,
) -> Shared {
    let namespaces = namespaces
        .iter()
        .map(|name| {
            let mut ns = Namespace::default();
            ns.metadata.name = Some((*name).to_string());
            ns
        })
        .collect();
    crate::tests::shared::shared(
        client,
        crate::tests::shared::Objects {
            csvs,
            operator_groups,
            namespaces,
        },
    )
}

fn start(shared: Shared) -> (Addr<JanitorActor>, SharedJournal) {
    let journal: SharedJournal = Arc::new(Mutex::new(Journal::with_capacity(100)));
    let actor = JanitorActor::new(shared)
        .with_journal(journal.clone())
        .start();
    (actor, journal)
}

fn gone(uid: &str) -> JanitorMsg {
    let csv = Arc::new(csv(uid));
    JanitorMsg::CsvGone(CsvGone {
        key: ObjectKey::new("ns", "a.v1"),
        uid: Some(uid.to_string()),
        csv: Some(csv),
    })
}

/// The requests of one method: their paths.
fn requests(api: &FakeApi, method: &str) -> Vec<String> {
    api.seen()
        .iter()
        .filter(|s| s.method == method)
        .map(|s| s.path.clone())
        .collect()
}

fn outcomes(journal: &SharedJournal) -> Vec<(Option<String>, Option<u64>)> {
    journal
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entries()
        .filter_map(|e| match &e.event {
            JournalEvent::Reconciled { error, requeue_ms } => Some((error.clone(), *requeue_ms)),
            _ => None,
        })
        .collect()
}

async fn settle(ms: u64) {
    for _ in 0..ms / 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What a gone CSV leaves, deleted by its owner labels: webhooks, API services, kube-system RoleBindings,
/// ClusterRoleBindings, ClusterRoles.
const CLEANED: [&str; 6] = [
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/apiregistration.k8s.io/v1/apiservices",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings",
    BINDINGS,
    ROLES,
];

#[actix_rt::test]
async fn a_gone_csvs_objects_are_deleted_and_a_failed_delete_is_retried_with_backoff() {
    tokio::time::pause();
    let api = FakeApi::new(vec![500]);
    let (janitor, journal) = start(shared(api.client(), vec![], &["ns"]));
    janitor.do_send(gone("u1"));
    settle(20).await;
    assert_eq!(requests(&api, "DELETE"), CLEANED, "every kind tried once");
    let out = outcomes(&journal);
    assert!(
        out.first()
            .is_some_and(|(e, _)| e.as_deref().is_some_and(|e| e.starts_with("transient"))),
        "the 500 fails the run as transient: {out:?}"
    );
    // The transient policy retries after 1 s, jittered into [0.5, 1] s.
    settle(1_100).await;
    assert_eq!(requests(&api, "DELETE"), [CLEANED, CLEANED].concat());
    assert_eq!(
        outcomes(&journal).last(),
        Some(&(None, None)),
        "done, no timer"
    );
    settle(10_000).await;
    assert_eq!(requests(&api, "DELETE").len(), 12, "nothing more once done");
}

#[actix_rt::test]
async fn a_recreated_csvs_objects_are_left_to_it() {
    tokio::time::pause();
    let api = FakeApi::new(vec![]);
    let (janitor, journal) = start(shared(api.client(), vec![csv("u2")], &["ns"]));
    janitor.do_send(gone("u1"));
    settle(100).await;
    assert!(api.seen().is_empty(), "no request: {:?}", api.seen());
    assert_eq!(outcomes(&journal), vec![(None, None)]);
}

fn rbac(name: &str, owner_namespace: &str, created: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "creationTimestamp": created, "labels": {
            "olm.owner": "a.v1", "olm.owner.namespace": owner_namespace,
            "olm.owner.kind": "ClusterServiceVersion"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    })
}

#[actix_rt::test]
async fn the_sweep_runs_once_when_the_stores_listed_and_deletes_only_known_orphans() {
    tokio::time::pause();
    let young = k8s_openapi::jiff::Timestamp::now().to_string();
    let api = sweep_api(
        vec![
            rbac("orphan", "gone", "2020-01-01T00:00:00Z"),
            rbac("young", "ns", &young),
            rbac("alive", "ns", "2020-01-01T00:00:00Z"),
        ],
        vec![],
        vec![],
    );
    let (janitor, journal) = start(shared(api.client(), vec![csv("u1")], &["ns"]));
    janitor.do_send(JanitorMsg::StoresSynced);
    settle(100).await;
    assert_eq!(requests(&api, "GET"), SWEPT);
    assert_eq!(swept(&api), [(BINDINGS.to_string(), "orphan".to_string())]);
    // Done once: a second StoresSynced (a restarted watch) does not sweep again.
    janitor.do_send(JanitorMsg::StoresSynced);
    settle(100).await;
    assert_eq!(api.seen().len(), SWEPT.len() + 1);
    assert_eq!(outcomes(&journal), vec![(None, None), (None, None)]);
}

/// Regression (chaos defect 13): RBAC of a namespace deleted shortly before the operator started was too young
/// for the one start-up sweep and stayed forever. Now the sweep looks again until no orphan is too young.
#[actix_rt::test]
async fn a_sweep_that_met_a_young_orphan_looks_again() {
    tokio::time::pause();
    let young = k8s_openapi::jiff::Timestamp::now().to_string();
    let api = sweep_api(vec![rbac("young", "gone", &young)], vec![], vec![]);
    let (janitor, journal) = start(shared(api.client(), vec![csv("u1")], &["ns"]));
    janitor.do_send(JanitorMsg::StoresSynced);
    settle(100).await;
    assert_eq!(requests(&api, "GET"), SWEPT);
    assert!(
        requests(&api, "DELETE").is_empty(),
        "too young to judge yet"
    );
    assert_eq!(
        outcomes(&journal),
        vec![(None, Some(RESWEEP.as_millis() as u64))],
        "the sweep is due again"
    );
    settle(RESWEEP.as_millis() as u64 + 100).await;
    assert_eq!(requests(&api, "GET"), [SWEPT, SWEPT].concat());
}

fn group_role(name: &str, group: &str, owner_namespace: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "creationTimestamp": "2020-01-01T00:00:00Z", "labels": {
            "olm.owner": group, "olm.owner.namespace": owner_namespace,
            "olm.owner.kind": "OperatorGroup"}},
        "rules": []
    })
}

/// A deleted OperatorGroup's ClusterRoles are the janitor's to delete, with retries: the group actor deleted
/// them itself once, and a failed delete was logged and lost (the roles of a namespace deleted under API
/// faults stayed for good).
#[actix_rt::test]
async fn a_gone_groups_cluster_roles_are_deleted_and_a_failed_delete_is_retried() {
    tokio::time::pause();
    let api = FakeApi::new(vec![500]);
    let (janitor, journal) = start(shared(api.client(), vec![], &["ns"]));
    janitor.do_send(JanitorMsg::GroupGone(ObjectKey::new("ns", "og")));
    settle(20).await;
    assert_eq!(requests(&api, "DELETE"), [ROLES]);
    settle(1_100).await;
    assert_eq!(
        requests(&api, "DELETE"),
        [ROLES, ROLES],
        "retried after the 500"
    );
    assert_eq!(outcomes(&journal).last(), Some(&(None, None)), "done");
    let selectors: Vec<String> = api
        .seen()
        .iter()
        .filter(|s| s.method == "DELETE")
        .map(|s| s.query.clone())
        .collect();
    assert!(
        selectors.iter().all(|q| q.contains("olm.owner%3Dog")
            && q.contains("olm.owner.namespace%3Dns")
            && q.contains("olm.owner.kind%3DOperatorGroup")),
        "by the group's owner labels: {selectors:?}"
    );
}

/// A janitor whose group store holds OperatorGroup `og` in `namespace` (and whose Namespace store holds `ns`),
/// after its start-up sweep.
async fn swept_with_group(client: kube::Client, namespace: &str) -> Addr<JanitorActor> {
    let mut og = messages::crd::operator_group::OperatorGroup::new("og", Default::default());
    og.metadata.namespace = Some(namespace.into());
    let (janitor, _journal) = start(with_groups(client, vec![], &["ns"], vec![og]));
    janitor.do_send(JanitorMsg::StoresSynced);
    settle(100).await;
    janitor
}

/// The start-up sweep also deletes the ClusterRoles of OperatorGroups gone while no operator ran (with their
/// namespace, or alone from a watched namespace), and leaves a live group's alone.
#[actix_rt::test]
async fn the_sweep_deletes_the_roles_of_gone_groups() {
    tokio::time::pause();
    let api = sweep_api(
        vec![],
        vec![
            group_role("og-gone-ns-admin", "og", "gone"),
            group_role("og-live-admin", "og", "ns"),
        ],
        vec![],
    );
    let _janitor = swept_with_group(api.client(), "ns").await;
    assert_eq!(
        swept(&api),
        [(ROLES.to_string(), "og-gone-ns-admin".to_string())]
    );
}

/// Regression (chaos seed 24 of the 100-seed bench): a namespace deleted after the start-up sweep, whose
/// OperatorGroup the control plane kept listing after the namespace was gone, so no `GroupGone` came and the
/// group's ClusterRoles stayed. A deleted namespace makes the janitor sweep again, and the sweep counts a gone
/// namespace's group as gone even while it is still listed.
#[actix_rt::test]
async fn a_deleted_namespace_makes_the_sweep_run_again() {
    tokio::time::pause();
    let api = sweep_api(
        vec![],
        vec![group_role("og-leftover-admin", "og", "gone")],
        vec![],
    );
    let janitor = swept_with_group(api.client(), "gone").await;
    assert_eq!(
        swept(&api),
        [(ROLES.to_string(), "og-leftover-admin".to_string())],
        "a group still listed in a gone namespace counts as gone"
    );
    janitor.do_send(JanitorMsg::NamespaceGone("gone".into()));
    settle(100).await;
    assert_eq!(
        requests(&api, "GET"),
        [SWEPT, SWEPT].concat(),
        "swept again"
    );
}

/// An APIService left by a CSV of a namespace that is gone (or terminating: the APIService pointing at its
/// deleted Service keeps it so) is swept, through `deletecollection` by name: olm-operator holds no `delete`.
#[actix_rt::test]
async fn the_sweep_deletes_an_orphaned_api_service() {
    tokio::time::pause();
    let mut orphan = rbac(
        "v1alpha1.widgets.example.com",
        "gone",
        "2020-01-01T00:00:00Z",
    );
    let mut alive = rbac("v1alpha1.gadgets.example.com", "ns", "2020-01-01T00:00:00Z");
    for o in [&mut orphan, &mut alive] {
        if let Some(m) = o.as_object_mut() {
            m.remove("roleRef");
        }
    }
    let api = sweep_api(vec![], vec![], vec![orphan, alive]);
    let (janitor, _journal) = start(shared(api.client(), vec![csv("u1")], &["ns"]));
    janitor.do_send(JanitorMsg::StoresSynced);
    settle(100).await;
    assert_eq!(
        swept(&api),
        [(
            API_SERVICES.to_string(),
            "v1alpha1.widgets.example.com".to_string()
        )]
    );
}
