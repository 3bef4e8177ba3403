//! Tables of the pure comparison: the diff of two snapshots and the end-state invariants.

use super::*;
use rstest::rstest;

fn snap(facts: &[(&str, &str, &str)]) -> Snapshot {
    let mut s = Snapshot::default();
    for (kind, name, summary) in facts {
        s.insert(kind, name, *summary);
    }
    s
}

#[rstest]
#[case::same_state(
    snap(&[("CSV", "a.v2", "phase=Succeeded")]),
    snap(&[("CSV", "a.v2", "phase=Succeeded")]),
    vec![]
)]
#[case::phase_differs(
    snap(&[("CSV", "a.v2", "phase=Succeeded")]),
    snap(&[("CSV", "a.v2", "phase=Installing")]),
    vec!["- CSV/a.v2: phase=Succeeded", "+ CSV/a.v2: phase=Installing"]
)]
#[case::missing_and_orphan(
    snap(&[("CSV", "a.v2", "phase=Succeeded")]),
    snap(&[("CSV", "a.v1", "phase=Succeeded")]),
    vec!["+ CSV/a.v1: phase=Succeeded", "- CSV/a.v2: phase=Succeeded"]
)]
fn diffs_read_like_a_patch(
    #[case] want: Snapshot,
    #[case] got: Snapshot,
    #[case] lines: Vec<&str>,
) {
    assert_eq!(diff(&want, &got), lines);
}

fn s(v: &str) -> String {
    v.to_string()
}

#[rstest]
#[case::clean(
    Raw {
        csvs: vec![(s("a.v2"), s("Succeeded"))],
        plans: vec![(s("a"), vec![s("a.v1")]), (s("a"), vec![s("a.v2")])],
        deployments: vec![(s("a-op"), vec![s("a.v2"), s("a.v2")])],
    },
    vec![]
)]
#[case::between_phases(
    Raw { csvs: vec![(s("a.v2"), s("Installing"))], ..Raw::default() },
    vec!["CSV a.v2 left between phases (\"Installing\")"]
)]
#[case::duplicate_plans(
    Raw { plans: vec![(s("a"), vec![s("a.v2")]), (s("a"), vec![s("a.v2")])], ..Raw::default() },
    vec!["Subscription a has 2 InstallPlans for [\"a.v2\"]"]
)]
#[case::two_writers(
    Raw { deployments: vec![(s("a-op"), vec![s("a.v1"), s("a.v2")])], ..Raw::default() },
    vec!["Deployment a-op claimed by [\"a.v1\", \"a.v2\"]"]
)]
fn invariants_name_what_is_broken(#[case] raw: Raw, #[case] want: Vec<&str>) {
    assert_eq!(invariants(&raw), want);
}

#[test]
fn the_run_namespace_is_normalised() {
    let a = normalise_namespace(
        snap(&[("RBAC", "x", r#"[{"namespace":"chaos-abc"}]"#)]),
        "chaos-abc",
    );
    let b = normalise_namespace(
        snap(&[("RBAC", "x", r#"[{"namespace":"chaos-xyz"}]"#)]),
        "chaos-xyz",
    );
    assert_eq!(diff(&a, &b), Vec::<String>::new());
    let other = normalise_namespace(
        snap(&[("RBAC", "x", r#"[{"namespace":"kube-system"}]"#)]),
        "chaos-xyz",
    );
    assert_eq!(
        diff(&a, &other).len(),
        2,
        "another namespace is still a difference"
    );
}

#[rstest]
#[case::every_namespace_of_the_run_reads_its_role(
    snap(&[("ns2:Subscription", "dep-stable-grpc-chaos-abc", "installed=dep.v1"), ("ns:CSV", "g.v1", "copiedFrom=\"chaos-abc-g\"")]),
    snap(&[("ns2:Subscription", "dep-stable-grpc-<ns>", "installed=dep.v1"), ("ns:CSV", "g.v1", "copiedFrom=\"<nsg>\"")]),
)]
#[case::other_namespaces_stay(
    snap(&[("ns:RBAC", "x", "kube-system chaos-abc-b")]),
    snap(&[("ns:RBAC", "x", "kube-system <ns2>")]),
)]
fn the_run_namespaces_are_normalised_longest_first(#[case] got: Snapshot, #[case] want: Snapshot) {
    let roles = [
        ("ns", "chaos-abc"),
        ("ns2", "chaos-abc-b"),
        ("nsg", "chaos-abc-g"),
    ];
    assert_eq!(normalise_names(got, &roles), want);
}

#[test]
fn a_gone_namespaces_objects_are_set_apart_but_not_its_cluster_rbac() {
    let mut facts = BTreeMap::new();
    for k in [
        "ns:CSV/a",
        "nsd:CSV/temp",
        "nsd:Subscription/temp",
        "nsd:cluster:ClusterRoles of temp",
    ] {
        facts.insert(k.to_string(), "x".to_string());
    }
    let raw = Raw {
        csvs: vec![(s("ns:a"), s("Succeeded")), (s("nsd:temp"), s("Failed"))],
        plans: vec![(s("nsd:temp"), vec![s("temp.v1")])],
        deployments: vec![],
    };
    let (kept, raw, apart) = set_apart(Snapshot { facts }, raw, "nsd");
    assert_eq!(
        kept.facts.keys().collect::<Vec<_>>(),
        ["ns:CSV/a", "nsd:cluster:ClusterRoles of temp"]
    );
    assert_eq!(apart, ["nsd:CSV/temp", "nsd:Subscription/temp"]);
    assert_eq!(raw.csvs, [(s("ns:a"), s("Succeeded"))]);
    assert!(raw.plans.is_empty());
}

fn secs(s: u64) -> std::time::Duration {
    std::time::Duration::from_secs(s)
}

#[rstest]
#[case::deleted_gone_then_restarted(Some(5), Some(9), &[7], true)]
#[case::restart_after_gone(Some(5), Some(9), &[30], true)]
#[case::restart_before_the_deletion_only(Some(5), Some(9), &[2], false)]
#[case::no_restart(Some(5), Some(9), &[], false)]
#[case::never_seen_gone(Some(5), None, &[7], false)]
#[case::never_deleted(None, None, &[7], false)]
fn leftovers_are_set_apart_only_after_a_confirmed_deletion_and_a_later_restart(
    #[case] deleted: Option<u64>,
    #[case] gone: Option<u64>,
    #[case] restarts: &[u64],
    #[case] want: bool,
) {
    let restarts: Vec<_> = restarts.iter().map(|s| secs(*s)).collect();
    assert_eq!(
        may_set_apart(deleted.map(secs), gone.map(secs), &restarts),
        want
    );
}
