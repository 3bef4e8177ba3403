//! The InstallPlans of a view run (olm-operator does not watch them): which Subscriptions' plans are listed, in
//! how many requests, and which plans are labelled or unlabelled. The current plan of a Subscription carries
//! the Operator's label, its older plans lose it (OLM's adoption controller). A run with a few such
//! Subscriptions lists each one's labelled plans; a run with more lists every plan's metadata once, so a
//! thousand new Subscriptions cost one list, not a thousand. A Subscription's first plan, when the view saw it
//! with none before, is not listed at all (`memo::PlanChange::First`: catalog-operator labels a plan for each
//! Subscription it serves or creates).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Up to this many Subscriptions, one list each (by label, in their namespace); above, one list of all.
pub const PER_SUBSCRIPTION_MAX: usize = 4;

/// How a run lists the plans of the Subscriptions whose current plan changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// No Subscription's current plan changed: no list.
    Nothing,
    /// One list per Subscription: its namespace's plans carrying its Operator's label.
    PerSubscription,
    /// One list of every InstallPlan's metadata in the cluster.
    All,
}

pub fn listing(subscriptions: usize) -> Listing {
    match subscriptions {
        0 => Listing::Nothing,
        n if n <= PER_SUBSCRIPTION_MAX => Listing::PerSubscription,
        _ => Listing::All,
    }
}

/// The label writes one Subscription's plans need.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Writes {
    /// The current plan, when it is not listed with the label (catalog-operator labels the plans it creates, so
    /// this is rare).
    pub label: Option<String>,
    /// Older plans still carrying the label.
    pub unlabel: Vec<String>,
}

/// The writes for the Subscription in `namespace` whose current plan is `current`, from listed plan metadata
/// (plans of other namespaces and plans without `label_key` are ignored).
pub fn writes<'a>(
    listed: impl IntoIterator<Item = &'a ObjectMeta>,
    namespace: &str,
    label_key: &str,
    current: &str,
) -> Writes {
    let mut out = Writes {
        label: Some(current.to_owned()),
        unlabel: Vec::new(),
    };
    let labelled = listed.into_iter().filter(|m| {
        m.namespace.as_deref() == Some(namespace)
            && m.labels.as_ref().is_some_and(|l| l.contains_key(label_key))
    });
    for name in labelled.filter_map(|m| m.name.as_deref()) {
        if name == current {
            out.label = None;
        } else {
            out.unlabel.push(name.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::collections::BTreeMap;

    const KEY: &str = "operators.coreos.com/etcd.ns";

    fn plan(namespace: &str, name: &str, labelled: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: labelled.then(|| BTreeMap::from([(KEY.to_owned(), String::new())])),
            ..ObjectMeta::default()
        }
    }

    #[rstest]
    #[case::no_subscription(0, Listing::Nothing)]
    #[case::one_install(1, Listing::PerSubscription)]
    #[case::a_few(PER_SUBSCRIPTION_MAX, Listing::PerSubscription)]
    #[case::more_than_a_few(PER_SUBSCRIPTION_MAX + 1, Listing::All)]
    #[case::a_thousand(1000, Listing::All)]
    fn how_plans_are_listed(#[case] subscriptions: usize, #[case] expected: Listing) {
        assert_eq!(listing(subscriptions), expected);
    }

    #[rstest]
    #[case::nothing_listed(vec![], Some("install-2"), vec![])]
    #[case::the_current_plan_labelled(vec![plan("ns", "install-2", true)], None, vec![])]
    #[case::the_current_plan_unlabelled(vec![plan("ns", "install-2", false)], Some("install-2"), vec![])]
    #[case::an_older_plan_keeps_the_label(
        vec![plan("ns", "install-1", true), plan("ns", "install-2", true)],
        None,
        vec!["install-1"]
    )]
    #[case::an_older_plan_without_the_label(vec![plan("ns", "install-1", false)], Some("install-2"), vec![])]
    #[case::plans_of_another_namespace_are_not_this_subscriptions(
        vec![plan("other", "install-1", true), plan("other", "install-2", true)],
        Some("install-2"),
        vec![]
    )]
    fn label_writes_of_a_subscriptions_plans(
        #[case] listed: Vec<ObjectMeta>,
        #[case] label: Option<&str>,
        #[case] unlabel: Vec<&str>,
    ) {
        assert_eq!(
            writes(&listed, "ns", KEY, "install-2"),
            Writes {
                label: label.map(str::to_owned),
                unlabel: unlabel.into_iter().map(str::to_owned).collect(),
            }
        );
    }
}
