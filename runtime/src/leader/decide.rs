//! The pure leader-election decision: from the Lease as last read, who we are, and how long that record has
//! stayed unchanged *by our own clock*, decide whether to create the Lease, take it, renew it, or wait.
//!
//! Like client-go's `leaderelection`, expiry is judged by how long we have watched the same record go
//! unrenewed (never by comparing the holder's `renewTime` with our clock), so clock skew between nodes cannot
//! make two replicas lead at once; a new candidate therefore waits one full lease duration after it first sees
//! a live holder's record.

use std::time::Duration;

/// What a Lease says, reduced to what the decision needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// `spec.holderIdentity`; `None` or empty when released.
    pub holder: Option<String>,
    /// `spec.leaseDurationSeconds` as the holder wrote it.
    pub lease_duration: Option<Duration>,
    /// `spec.renewTime` as written (compared for change only, never with our clock).
    pub renew_time: Option<String>,
    /// `spec.leaseTransitions`.
    pub transitions: i32,
}

impl Record {
    fn held_by_someone(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No Lease exists: create it with us as holder.
    Create,
    /// We hold it: write a new `renewTime`.
    Renew,
    /// It is released or expired: write ourselves as holder, counting one more transition.
    Acquire { transitions: i32 },
    /// Someone else holds a live lease.
    Follow { holder: String },
}

/// Decide from the Lease as read (`None`: not found), our identity, how long the same record has stayed
/// unchanged in our eyes, and our own lease duration (used when the record names none).
pub fn decide(
    record: Option<&Record>,
    me: &str,
    unchanged_for: Duration,
    our_lease_duration: Duration,
) -> Decision {
    let Some(record) = record else {
        return Decision::Create;
    };
    match record.held_by_someone() {
        Some(holder) if holder == me => Decision::Renew,
        None => Decision::Acquire {
            transitions: record.transitions.saturating_add(1),
        },
        Some(holder) => {
            let duration = record.lease_duration.unwrap_or(our_lease_duration);
            if unchanged_for >= duration {
                Decision::Acquire {
                    transitions: record.transitions.saturating_add(1),
                }
            } else {
                Decision::Follow {
                    holder: holder.to_string(),
                }
            }
        }
    }
}

/// Whether a leader whose last successful renewal was `since_renewed` ago must step down.
pub fn must_step_down(since_renewed: Duration, renew_deadline: Duration) -> bool {
    since_renewed >= renew_deadline
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const ME: &str = "pod-a";
    const OURS: Duration = Duration::from_secs(15);

    fn held_by(holder: Option<&str>, secs: Option<u64>, transitions: i32) -> Record {
        Record {
            holder: holder.map(str::to_string),
            lease_duration: secs.map(Duration::from_secs),
            renew_time: Some("2026-11-23T19:00:00.000000Z".into()),
            transitions,
        }
    }

    #[rstest]
    #[case::no_lease_yet_is_created(None, 0, Decision::Create)]
    #[case::our_own_lease_is_renewed(Some(held_by(Some(ME), Some(15), 3)), 0, Decision::Renew)]
    #[case::our_own_lease_is_renewed_even_when_stale(
        Some(held_by(Some(ME), Some(15), 3)),
        60,
        Decision::Renew
    )]
    #[case::a_live_lease_of_another_is_followed(
        Some(held_by(Some("pod-b"), Some(15), 3)),
        14,
        Decision::Follow { holder: "pod-b".into() }
    )]
    #[case::an_expired_lease_of_another_is_taken(
        Some(held_by(Some("pod-b"), Some(15), 3)),
        15,
        Decision::Acquire { transitions: 4 }
    )]
    #[case::the_holders_duration_wins_over_ours(
        Some(held_by(Some("pod-b"), Some(40), 0)),
        20,
        Decision::Follow { holder: "pod-b".into() }
    )]
    #[case::our_duration_applies_when_the_lease_names_none(
        Some(held_by(Some("pod-b"), None, 0)),
        15,
        Decision::Acquire { transitions: 1 }
    )]
    #[case::a_released_lease_is_taken_at_once(Some(held_by(None, Some(1), 7)), 0, Decision::Acquire { transitions: 8 })]
    #[case::an_empty_holder_counts_as_released(Some(held_by(Some(""), Some(15), 2)), 0, Decision::Acquire { transitions: 3 })]
    fn the_decision_follows_the_lease(
        #[case] record: Option<Record>,
        #[case] unchanged_secs: u64,
        #[case] expected: Decision,
    ) {
        assert_eq!(
            decide(
                record.as_ref(),
                ME,
                Duration::from_secs(unchanged_secs),
                OURS
            ),
            expected
        );
    }

    #[rstest]
    #[case::renewed_recently_keeps_leading(9, false)]
    #[case::renew_deadline_passed_steps_down(10, true)]
    fn a_leader_steps_down_after_the_renew_deadline(#[case] secs: u64, #[case] expected: bool) {
        assert_eq!(
            must_step_down(Duration::from_secs(secs), Duration::from_secs(10)),
            expected
        );
    }
}
