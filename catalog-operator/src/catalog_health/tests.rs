//! Table tests of `catalogHealth`: the written form, the store's summary, and what resolution writes.

use super::*;
use k8s_openapi::jiff::Timestamp;
use rstest::rstest;

fn at(s: i64) -> Time {
    Time(Timestamp::from_second(s).expect("ts"))
}

fn catalog(name: &str, healthy: bool) -> CatalogHealth {
    CatalogHealth {
        key: CatalogKey::new(name, "ns"),
        uid: format!("uid-{name}"),
        healthy,
        loading: false,
    }
}

/// The entry resolution writes for `catalog(name, healthy)` at time `t`.
fn written(name: &str, healthy: bool, t: i64) -> SubscriptionCatalogHealth {
    SubscriptionCatalogHealth {
        catalog_source_ref: Some(reference(&catalog(name, healthy))),
        last_updated: Some(at(t)),
        healthy,
    }
}

/// OLM v0's entry: its reference carries the CatalogSource's resourceVersion.
fn olm_v0(name: &str, healthy: bool, t: i64) -> SubscriptionCatalogHealth {
    let mut e = written(name, healthy, t);
    if let Some(r) = e.catalog_source_ref.as_mut() {
        r.resource_version = Some("42".into());
    }
    e
}

fn status(list: Vec<SubscriptionCatalogHealth>) -> SubscriptionStatus {
    SubscriptionStatus {
        catalog_health: list,
        ..Default::default()
    }
}

/// `status(list)` as the store holds it.
fn stored(list: Vec<SubscriptionCatalogHealth>) -> SubscriptionStatus {
    let mut sub = Subscription::new("s", Default::default());
    sub.status = Some(status(list));
    project(&mut sub);
    sub.status.unwrap_or_default()
}

#[rstest]
#[case::the_written_form(vec![written("a", true, 5), written("b", false, 5)], Some(2))]
#[case::per_entry_times(vec![written("a", true, 5), written("b", false, 6)], None)]
#[case::olm_v0_references(vec![olm_v0("a", true, 5)], None)]
#[case::an_entry_without_a_time(vec![SubscriptionCatalogHealth { last_updated: None, ..written("a", true, 5) }], None)]
#[case::an_entry_without_a_reference(vec![SubscriptionCatalogHealth { catalog_source_ref: None, ..written("a", true, 5) }], None)]
#[case::no_entries(vec![], None)]
fn only_the_written_form_is_summarized(
    #[case] list: Vec<SubscriptionCatalogHealth>,
    #[case] entries: Option<u32>,
) {
    let summary = summarize(&list);
    assert_eq!(summary.as_ref().map(|s| s.entries), entries);
    let kept = stored(list.clone());
    match summary {
        Some(s) => {
            assert!(
                kept.catalog_health.is_empty(),
                "the list is not kept beside its summary"
            );
            assert_eq!(s.last_updated, at(5));
            assert_eq!(kept.catalog_health_summary, Some(s));
        }
        None => {
            assert_eq!(
                kept.catalog_health, list,
                "a list in another form stays whole"
            );
            assert_eq!(kept.catalog_health_summary, None);
        }
    }
}

#[test]
fn a_summary_says_what_its_list_says_and_differs_when_an_entry_does() {
    let list = vec![written("a", true, 5), written("b", false, 5)];
    assert_eq!(
        identity(&stored(list.clone())),
        identity(&status(list.clone()))
    );
    let flipped = vec![written("a", true, 5), written("b", true, 5)];
    assert_ne!(identity(&stored(flipped)), identity(&status(list.clone())));
    let renamed = vec![written("a", true, 5), written("c", false, 5)];
    assert_ne!(identity(&stored(renamed)), identity(&status(list.clone())));
    let shorter = vec![written("a", true, 5)];
    assert_ne!(identity(&stored(shorter)), identity(&status(list)));
}

#[rstest]
#[case::unchanged_rebuilt_from_the_summary(
    stored(vec![written("a", true, 5), written("b", false, 5)]),
    vec![catalog("a", true), catalog("b", false)],
    vec![written("a", true, 5), written("b", false, 5)]
)]
#[case::unchanged_with_per_entry_times_kept(
    status(vec![written("a", true, 5), written("b", false, 6)]),
    vec![catalog("a", true), catalog("b", false)],
    vec![written("a", true, 5), written("b", false, 6)]
)]
#[case::a_catalog_turning_healthy_stamps_every_entry(
    stored(vec![written("a", true, 5), written("b", false, 5)]),
    vec![catalog("a", true), catalog("b", true)],
    vec![written("a", true, 9), written("b", true, 9)]
)]
#[case::a_catalog_added_stamps_every_entry(
    stored(vec![written("a", true, 5)]),
    vec![catalog("a", true), catalog("b", true)],
    vec![written("a", true, 9), written("b", true, 9)]
)]
#[case::a_catalog_removed_stamps_every_entry(
    stored(vec![written("a", true, 5), written("b", true, 5)]),
    vec![catalog("a", true)],
    vec![written("a", true, 9)]
)]
#[case::olm_v0_entries_are_rewritten_in_the_written_form(
    stored(vec![olm_v0("a", true, 5)]),
    vec![catalog("a", true)],
    vec![written("a", true, 9)]
)]
#[case::no_catalogs_no_entries(status(vec![]), vec![], vec![])]
fn resolution_writes_the_old_entries_unless_one_changed(
    #[case] old: SubscriptionStatus,
    #[case] catalogs: Vec<CatalogHealth>,
    #[case] want: Vec<SubscriptionCatalogHealth>,
) {
    assert_eq!(entries(&catalogs, &old, &at(9)), want);
}
