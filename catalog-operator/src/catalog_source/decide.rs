//! What one run of the CatalogSource actor does (pure): restart the source when the spec asks for another
//! one, re-read the content when a cause asked for it (a `Refresh`, the connection becoming READY, a new
//! priority) or the registry poll is due, and when the next poll is due. The poll is the actor's one named
//! timer (`spec.updateStrategy.registryPoll.interval`): catalog content changes without any event.

use super::spec::{Invalid, Plan};
use olm_runtime::outcome::Next;
use std::time::Duration;
use tokio::time::Instant;

/// What the run observed of the object (its spec, at `now`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub plan: Result<Plan, Invalid>,
    pub priority: i32,
    /// The poll interval (`spec::poll_every`), if the spec asks for polling.
    pub poll_every: Option<Duration>,
    pub now: Instant,
}

/// What the actor holds from earlier runs and the messages it received since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The plan the running source was started for (`None` before the first run).
    pub plan: Option<Result<Plan, Invalid>>,
    pub priority: i32,
    /// A cause asked for the content to be read again.
    pub stale: bool,
    /// The poll interval in force and when the next poll is due.
    pub poll: Option<(Duration, Instant)>,
}

/// The steps of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steps {
    /// Stop the running source and start the one the plan asks for.
    pub restart: bool,
    /// Read the content now.
    pub fetch: bool,
    /// This run is the registry poll (recorded in `status.latestImageRegistryPoll`).
    pub polled: bool,
    /// The poll in force after this run; its due time is the loop's timer.
    pub poll: Option<(Duration, Instant)>,
}

pub fn steps(held: &Held, seen: &Observed) -> Steps {
    let restart = held.plan.as_ref() != Some(&seen.plan);
    let reprioritised = !restart && held.priority != seen.priority;
    let (poll, polled) = match (seen.poll_every, held.poll) {
        (None, _) => (None, false),
        (Some(every), Some((held_every, due))) if held_every == every && seen.now >= due => {
            (Some((every, seen.now + every)), true)
        }
        (Some(every), Some((held_every, due))) if held_every == every => {
            (Some((every, due)), false)
        }
        // A new interval starts counting now (as a restarted ticker does).
        (Some(every), _) => (Some((every, seen.now + every)), false),
    };
    // An address source is read once its connection is READY (the message sets `stale`); the others at once.
    let starts_reading =
        restart && matches!(seen.plan, Ok(Plan::Image { .. } | Plan::ConfigMap(_)));
    let fetch = seen.plan.is_ok() && (starts_reading || held.stale || reprioritised || polled);
    Steps {
        restart,
        fetch,
        polled,
        poll,
    }
}

/// After a run that read the content (`read`: whether it failed), whether the content is still to be read and
/// what the run asks for next. A read that failed (the API or the registry did not answer, the ConfigMap is not
/// there yet) is read again, rate-limited, as OLM requeues a catalog whose sync failed: nothing else may come
/// (a ConfigMap that does not change sends no event). Otherwise `next` (the poll, or idle).
pub fn after_read(read_failed: Option<bool>, next: Next) -> (bool, Next) {
    match read_failed {
        Some(true) => (true, Next::Backoff),
        Some(false) | None => (false, next),
    }
}

/// How long until the next poll (the run's `Next::After`), if polling.
pub fn until_poll(poll: Option<(Duration, Instant)>, now: Instant) -> Option<Duration> {
    poll.map(|(_, due)| due.saturating_duration_since(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MIN: Duration = Duration::from_secs(60);

    #[rstest]
    #[case::a_failed_read_is_read_again_rate_limited(Some(true), Next::After(MIN), (true, Next::Backoff))]
    #[case::a_read_that_loaded_waits_for_the_poll(Some(false), Next::After(MIN), (false, Next::After(MIN)))]
    #[case::no_read_keeps_what_the_run_asked(None, Next::Idle, (false, Next::Idle))]
    fn after_a_read(
        #[case] read_failed: Option<bool>,
        #[case] next: Next,
        #[case] want: (bool, Next),
    ) {
        assert_eq!(after_read(read_failed, next), want);
    }

    fn image() -> Result<Plan, Invalid> {
        Ok(Plan::Image {
            image: "reg/cat:1".into(),
            service: "cat".into(),
        })
    }

    fn address() -> Result<Plan, Invalid> {
        Ok(Plan::Address("reg:50051".into()))
    }

    fn config_map() -> Result<Plan, Invalid> {
        Ok(Plan::ConfigMap("cm".into()))
    }

    fn invalid() -> Result<Plan, Invalid> {
        Err(Invalid("unknown sourcetype: x".into()))
    }

    type HeldCase = (
        Option<Result<Plan, Invalid>>,
        i32,
        bool,
        Option<(Duration, u64)>,
    );
    type SeenCase = (Result<Plan, Invalid>, i32, Option<Duration>, u64);
    type WantCase = (bool, bool, bool, Option<(Duration, u64)>);

    /// (held plan, held priority, stale, held poll as (interval, due in s from t0)), (plan, priority, poll
    /// interval, now in s from t0) → (restart, fetch, polled, poll as (interval, due in s from t0)).
    #[rstest]
    #[case::first_sight_of_an_image_reads_it(
        (None, 0, false, None), (image(), 0, None, 0),
        (true, true, false, None)
    )]
    #[case::first_sight_of_an_address_waits_for_ready(
        (None, 0, false, None), (address(), 0, None, 0),
        (true, false, false, None)
    )]
    #[case::a_config_map_is_read_at_once(
        (None, 0, false, None), (config_map(), 0, None, 0),
        (true, true, false, None)
    )]
    #[case::an_invalid_spec_reads_nothing(
        (Some(image()), 0, true, None), (invalid(), 0, None, 0),
        (true, false, false, None)
    )]
    #[case::ready_marks_the_address_stale(
        (Some(address()), 0, true, None), (address(), 0, None, 0),
        (false, true, false, None)
    )]
    #[case::nothing_asked_reads_nothing(
        (Some(address()), 0, false, None), (address(), 0, None, 0),
        (false, false, false, None)
    )]
    #[case::a_new_priority_reads_again(
        (Some(address()), 0, false, None), (address(), 5, None, 0),
        (false, true, false, None)
    )]
    #[case::polling_starts_counting_now(
        (Some(image()), 0, false, None), (image(), 0, Some(MIN), 10),
        (false, false, false, Some((MIN, 70)))
    )]
    #[case::a_poll_not_due_keeps_its_time(
        (Some(image()), 0, false, Some((MIN, 70))), (image(), 0, Some(MIN), 30),
        (false, false, false, Some((MIN, 70)))
    )]
    #[case::a_due_poll_reads_and_schedules_the_next(
        (Some(image()), 0, false, Some((MIN, 70))), (image(), 0, Some(MIN), 70),
        (false, true, true, Some((MIN, 130)))
    )]
    #[case::a_new_interval_restarts_the_count(
        (Some(image()), 0, false, Some((MIN, 70))), (image(), 0, Some(2 * MIN), 30),
        (false, false, false, Some((2 * MIN, 150)))
    )]
    #[case::polling_removed_stops(
        (Some(image()), 0, false, Some((MIN, 70))), (image(), 0, None, 80),
        (false, false, false, None)
    )]
    fn steps_table(#[case] held: HeldCase, #[case] seen: SeenCase, #[case] want: WantCase) {
        let t0 = Instant::now();
        let now_s = seen.3;
        let at = |s: u64| t0 + Duration::from_secs(s);
        let held = Held {
            plan: held.0,
            priority: held.1,
            stale: held.2,
            poll: held.3.map(|(d, s)| (d, at(s))),
        };
        let seen = Observed {
            plan: seen.0,
            priority: seen.1,
            poll_every: seen.2,
            now: at(seen.3),
        };
        let got = steps(&held, &seen);
        assert_eq!(
            got,
            Steps {
                restart: want.0,
                fetch: want.1,
                polled: want.2,
                poll: want.3.map(|(d, s)| (d, at(s))),
            }
        );
        assert_eq!(
            until_poll(got.poll, seen.now),
            want.3.map(|(_, s)| Duration::from_secs(s - now_s.min(s)))
        );
    }
}
