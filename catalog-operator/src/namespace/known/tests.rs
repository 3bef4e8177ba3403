//! Table tests of what resolution knows beyond its stores: wants over stored copies, gone Subscriptions,
//! decided statuses until acknowledged, created plans until their store copy has a status.

use super::*;
use crate::wants::News;
use messages::crd::install_plan::{InstallPlanPhase, InstallPlanStatus};
use rstest::rstest;

fn sub(name: &str, current: &str) -> Arc<Subscription> {
    let mut s: Subscription = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"name": "pkg", "source": "cat", "sourceNamespace": "ns"}
    }))
    .expect("subscription");
    if !current.is_empty() {
        s.status = Some(SubscriptionStatus {
            current_csv: current.to_string(),
            ..Default::default()
        });
    }
    Arc::new(s)
}

fn current(s: &Subscription) -> String {
    s.status
        .as_ref()
        .map(|st| st.current_csv.clone())
        .unwrap_or_default()
}

fn status(current: &str) -> SubscriptionStatus {
    SubscriptionStatus {
        current_csv: current.to_string(),
        ..Default::default()
    }
}

fn want(s: Arc<Subscription>, applied: Option<u64>) -> News {
    News::Subscription { sub: s, applied }
}

/// (name, currentCSV) of the merged view.
fn view(known: &mut Known, stored: Vec<Arc<Subscription>>) -> Vec<(String, String)> {
    known
        .subscriptions(stored)
        .iter()
        .map(|s| (name_of(s.as_ref()), current(s)))
        .collect()
}

enum Step {
    Hear(News),
    /// A want acknowledging the n-th decision of the case (1-based; numbers are process-wide, so not literal).
    HearAcking(Arc<Subscription>, usize),
    Decide(&'static str, &'static str),
}

#[rstest]
#[case::store_only(vec![], vec![sub("a", "v1")], vec![("a", "v1")])]
#[case::want_newer_than_store(vec![Step::Hear(want(sub("a", "v2"), None))], vec![sub("a", "v1")], vec![("a", "v2")])]
#[case::want_not_in_store_yet(vec![Step::Hear(want(sub("b", ""), None))], vec![sub("a", "v1")], vec![("a", "v1"), ("b", "")])]
#[case::gone_while_store_lags(vec![Step::Hear(want(sub("a", "v1"), None)), Step::Hear(News::SubscriptionGone { name: "a".into() })], vec![sub("a", "v1")], vec![])]
#[case::recreated_after_gone(vec![Step::Hear(News::SubscriptionGone { name: "a".into() }), Step::Hear(want(sub("a", ""), None))], vec![sub("a", "v1")], vec![("a", "")])]
#[case::decided_read_until_acknowledged(vec![Step::Hear(want(sub("a", ""), None)), Step::Decide("a", "v1")], vec![sub("a", "")], vec![("a", "v1")])]
#[case::want_crossing_a_decision_keeps_it(vec![Step::Decide("a", "v1"), Step::Hear(want(sub("a", ""), None))], vec![sub("a", "")], vec![("a", "v1")])]
#[case::older_ack_keeps_the_newer_decision(vec![Step::Decide("a", "v1"), Step::Decide("a", "v2"), Step::HearAcking(sub("a", "v1"), 1)], vec![], vec![("a", "v2")])]
#[case::acknowledged_then_the_want_counts(vec![Step::Decide("a", "v1"), Step::HearAcking(sub("a", "v9"), 1)], vec![sub("a", "")], vec![("a", "v9")])]
fn subscriptions_view(
    #[case] steps: Vec<Step>,
    #[case] stored: Vec<Arc<Subscription>>,
    #[case] expected: Vec<(&str, &str)>,
) {
    let mut known = Known::default();
    let mut decided = Vec::new();
    for step in steps {
        match step {
            Step::Hear(news) => {
                known.hear(news);
            }
            Step::HearAcking(s, n) => {
                known.hear(want(s, decided.get(n - 1).copied()));
            }
            Step::Decide(name, csv) => decided.push(known.decide(name, status(csv)).seq),
        }
    }
    let expected: Vec<(String, String)> = expected
        .into_iter()
        .map(|(n, c)| (n.to_string(), c.to_string()))
        .collect();
    assert_eq!(view(&mut known, stored), expected);
}

#[test]
fn a_gone_name_is_forgotten_once_the_store_drops_it() {
    let mut known = Known::default();
    assert!(known.hear(News::SubscriptionGone { name: "a".into() }));
    assert!(known.subscriptions(vec![sub("a", "v1")]).is_empty());
    assert!(known.subscriptions(vec![]).is_empty());
    // A new Subscription of that name, seen by the store before its actor spoke, counts again.
    assert_eq!(known.subscriptions(vec![sub("a", "")]).len(), 1);
}

#[test]
fn decisions_are_numbered_in_order() {
    let mut known = Known::default();
    let first = known.decide("a", status("v1"));
    let second = known.decide("b", status("v2"));
    assert!(second.seq > first.seq);
    assert_eq!(second.status.current_csv, "v2");
}

#[test]
fn a_restarted_namespace_actor_numbers_after_the_one_before() {
    // A Subscription actor drops decisions numbered at or below the last it applied: a fresh `Known` (the
    // namespace actor started again, from the same process's counter) must not begin at 1 again (chaos
    // defect 2).
    let numbers = crate::wants::DecisionNumbers::default();
    let mut before = Known::numbered(numbers.clone());
    let applied = before.decide("a", status("v1"));
    let mut after = Known::numbered(numbers);
    let next = after.decide("a", status("v2"));
    assert!(next.seq > applied.seq);
}

fn plan(name: &str, with_status: bool) -> Arc<InstallPlan> {
    let mut p: InstallPlan = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"clusterServiceVersionNames": [], "approval": "Automatic", "approved": true}
    }))
    .expect("plan");
    if with_status {
        p.status = Some(InstallPlanStatus {
            phase: InstallPlanPhase::Installing,
            ..Default::default()
        });
    }
    Arc::new(p)
}

/// (name, has status) of the merged plan view.
#[rstest]
#[case::created_not_stored_yet(vec![], vec![("install-a", true)])]
#[case::stored_without_status_yet(vec![plan("install-a", false)], vec![("install-a", true)])]
#[case::stored_with_status(vec![plan("install-a", true), plan("install-b", false)], vec![("install-a", true), ("install-b", false)])]
fn plans_view(#[case] stored: Vec<Arc<InstallPlan>>, #[case] expected: Vec<(&str, bool)>) {
    let mut known = Known::default();
    known.created((*plan("install-a", true)).clone());
    let got: Vec<(String, bool)> = known
        .plans(stored)
        .iter()
        .map(|p| (name_of(p.as_ref()), p.status.is_some()))
        .collect();
    let expected: Vec<(String, bool)> = expected
        .into_iter()
        .map(|(n, s)| (n.to_string(), s))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_created_plan_gives_way_to_its_stored_copy_with_status() {
    let mut known = Known::default();
    known.created((*plan("install-a", true)).clone());
    known.plans(vec![plan("install-a", true)]);
    // Deleted afterwards: the store no longer lists it and nothing of ours brings it back.
    assert!(known.plans(vec![]).is_empty());
}

fn with_spec_channel(s: Arc<Subscription>, channel: &str) -> Arc<Subscription> {
    let mut s = (*s).clone();
    s.spec.channel = Some(channel.to_string());
    Arc::new(s)
}

/// Whether a want asks for a resolution run: only when it changes what resolution reads. The last step's answer.
#[rstest]
#[case::first_word_of_a_subscription(vec![], want(sub("a", ""), None), true)]
#[case::the_same_again(vec![Step::Hear(want(sub("a", "v1"), None))], want(sub("a", "v1"), None), false)]
#[case::a_new_spec(vec![Step::Hear(want(sub("a", "v1"), None))], want(with_spec_channel(sub("a", "v1"), "beta"), None), true)]
#[case::a_status_someone_else_wrote(vec![Step::Hear(want(sub("a", "v1"), None))], want(sub("a", "v2"), None), true)]
#[case::the_decided_status_crossing_its_decision(vec![Step::Hear(want(sub("a", ""), None)), Step::Decide("a", "v1")], want(sub("a", ""), None), false)]
#[case::a_new_name_after_gone(vec![Step::Hear(want(sub("a", "v1"), None)), Step::Hear(News::SubscriptionGone { name: "a".into() })], want(sub("a", "v1"), None), true)]
fn wants_that_ask_for_a_run(#[case] steps: Vec<Step>, #[case] last: News, #[case] runs: bool) {
    let mut known = Known::default();
    for step in steps {
        match step {
            Step::Hear(news) => {
                known.hear(news);
            }
            Step::HearAcking(..) => unreachable!("not in these cases"),
            Step::Decide(name, csv) => {
                known.decide(name, status(csv));
            }
        }
    }
    assert_eq!(known.hear(last), runs);
}

/// The acknowledgement of a decision (the Subscription actor wrote the decided status) asks for no run.
#[test]
fn an_acknowledgement_asks_for_no_run() {
    let mut known = Known::default();
    assert!(known.hear(want(sub("a", ""), None)));
    let d = known.decide("a", status("v1"));
    assert!(!known.hear(want(sub("a", "v1"), Some(d.seq))));
    assert!(known.unacknowledged().is_empty());
    // Its own write's watch event, told again: still nothing new.
    assert!(!known.hear(want(sub("a", "v1"), Some(d.seq))));
}
