//! When a change of a global catalog fans out (issue 19). A CatalogSource in the global catalog namespace is
//! visible to every Subscription, so each of its changes resolves every subscribed namespace, and each of those
//! resolutions rewrites its Subscriptions' `status.catalogHealth` (a new entry, then its health). OLM v0 does
//! the same per change; with 1,000 Subscriptions, adding 50 catalogs (each created, then healthy) made about
//! 100 writes per Subscription, and a new install waited 82 s behind them (the fifth session's bench).
//!
//! Chosen: changes are gathered, not sent one by one. The first change after a quiet spell fans out after
//! [`SETTLE`] (a new catalog usually turns healthy within it, so its two changes make one fan-out); later
//! changes wait until [`spacing`] has passed since the last fan-out, which grows with the number of subscribed
//! namespaces (the writes of one fan-out should be done before the next starts). A fan-out reads the catalogs
//! as they are when it runs, so nothing a gathered change said is lost; it only arrives later (at most
//! [`MAX_SPACING`]). Changes of a catalog outside the global namespace concern one namespace and are not
//! gathered. Pure: the router (`super::NamespaceResolver`) keeps the [`Burst`] and the timer.

use std::time::{Duration, Instant};

/// The wait of the first change after a quiet spell.
pub const SETTLE: Duration = Duration::from_millis(250);
/// What one subscribed namespace adds to the spacing of fan-outs (its resolution and status writes).
pub const PER_NAMESPACE: Duration = Duration::from_millis(5);
/// The longest a gathered change waits.
pub const MAX_SPACING: Duration = Duration::from_secs(10);

/// The least time between two fan-outs, for `namespaces` subscribed namespaces.
pub fn spacing(namespaces: usize) -> Duration {
    let per = PER_NAMESPACE.saturating_mul(u32::try_from(namespaces).unwrap_or(u32::MAX));
    per.clamp(SETTLE, MAX_SPACING)
}

/// What the router does with one global catalog change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Fan out after this wait (start the timer).
    FanOutIn(Duration),
    /// A fan-out is already scheduled; it will see this change.
    Gathered,
}

/// The router's memory of global catalog fan-outs.
#[derive(Debug, Default, Clone)]
pub struct Burst {
    /// The earliest the next fan-out may run (the last one plus its spacing).
    next: Option<Instant>,
    scheduled: bool,
}

impl Burst {
    /// A global catalog changed at `now`.
    pub fn change(&mut self, now: Instant) -> Step {
        if self.scheduled {
            return Step::Gathered;
        }
        self.scheduled = true;
        let wait = self
            .next
            .map_or(Duration::ZERO, |next| next.saturating_duration_since(now));
        Step::FanOutIn(wait.max(SETTLE))
    }

    /// The scheduled fan-out ran at `now`, to `namespaces` subscribed namespaces.
    pub fn fanned_out(&mut self, now: Instant, namespaces: usize) {
        self.scheduled = false;
        self.next = Some(now + spacing(namespaces));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[rstest]
    #[case::no_namespace(0, ms(250))]
    #[case::a_few_namespaces(10, ms(250))]
    #[case::a_hundred(100, ms(500))]
    #[case::a_thousand(1_000, ms(5_000))]
    #[case::ten_thousand_is_capped(10_000, ms(10_000))]
    fn spacing_grows_with_the_namespaces_and_is_bounded(#[case] n: usize, #[case] want: Duration) {
        assert_eq!(spacing(n), want);
    }

    /// With 1,000 subscribed namespaces (spacing 5 s): a change at `at` ms, the last fan-out at `last` ms.
    #[rstest]
    #[case::the_first_change_settles(1_000, None, ms(250))]
    #[case::long_after_the_last_fan_out(10_000, Some(0), ms(250))]
    #[case::soon_after_the_last_waits_out_the_spacing(4_000, Some(3_000), ms(4_000))]
    #[case::never_less_than_the_settle(4_900, Some(0), ms(250))]
    fn a_change_waits_for_the_settle_or_the_spacing(
        #[case] at: u64,
        #[case] last: Option<u64>,
        #[case] want: Duration,
    ) {
        let t0 = Instant::now();
        let mut burst = Burst::default();
        if let Some(last) = last {
            assert!(matches!(burst.change(t0), Step::FanOutIn(_)));
            burst.fanned_out(t0 + ms(last), 1_000);
        }
        assert_eq!(burst.change(t0 + ms(at)), Step::FanOutIn(want));
    }

    #[test]
    fn changes_while_a_fan_out_is_scheduled_are_gathered_into_it() {
        let t0 = Instant::now();
        let mut burst = Burst::default();
        assert_eq!(burst.change(t0), Step::FanOutIn(SETTLE));
        for i in 1..50 {
            assert_eq!(burst.change(t0 + ms(i)), Step::Gathered);
        }
        burst.fanned_out(t0 + SETTLE, 1_000);
        // The next change after the fan-out waits for the spacing since it.
        assert_eq!(
            burst.change(t0 + SETTLE + ms(100)),
            Step::FanOutIn(ms(4_900))
        );
        assert_eq!(burst.change(t0 + SETTLE + ms(200)), Step::Gathered);
    }
}
