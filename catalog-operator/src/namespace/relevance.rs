//! Which `Resolve` requests are worth a namespace resolution (issue 19: no per-namespace work for namespaces
//! that do not subscribe to anything). A resolution of a namespace without Subscriptions changes nothing
//! (OLM's `syncResolvingNamespace` returns early too), so a CSV or OperatorGroup change there starts no
//! resolution actor; a namespace whose actor already runs (it had Subscriptions) still resolves, so the
//! removal of its last Subscription is followed through. Other causes (catalogs, InstallPlans, Subscriptions,
//! retries) always resolve. Pure.

use crate::routes::Cause;

/// Whether to resolve a namespace for `cause`, given whether its resolution actor already runs and whether any
/// Subscription lives in it.
pub fn worth_resolving(cause: Cause, actor_running: bool, has_subscription: bool) -> bool {
    match cause {
        Cause::CsvChanged | Cause::OperatorGroupChanged => actor_running || has_subscription,
        Cause::SubscriptionChanged
        | Cause::CatalogChanged
        | Cause::InstallPlanChanged
        | Cause::Retry => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::a_copy_landing_in_a_bare_namespace(Cause::CsvChanged, false, false, false)]
    #[case::a_group_in_a_namespace_without_subscriptions(
        Cause::OperatorGroupChanged,
        false,
        false,
        false
    )]
    #[case::a_csv_beside_a_subscription(Cause::CsvChanged, false, true, true)]
    #[case::a_namespace_already_resolving(Cause::CsvChanged, true, false, true)]
    #[case::a_new_subscription(Cause::SubscriptionChanged, false, false, true)]
    #[case::a_catalog_change(Cause::CatalogChanged, false, false, true)]
    #[case::an_install_plan_change(Cause::InstallPlanChanged, false, false, true)]
    fn bare_namespaces_are_not_resolved(
        #[case] cause: Cause,
        #[case] actor_running: bool,
        #[case] has_subscription: bool,
        #[case] want: bool,
    ) {
        assert_eq!(
            worth_resolving(cause, actor_running, has_subscription),
            want
        );
    }
}
