//! The view's pending work: the Subscriptions to adopt from and the Operators to refresh, handed to one run at
//! a time in batches of at most [`MAX_BATCH`] each. A batch stays recorded as in flight until its run ends, so
//! a run abandoned at its deadline (its future dropped) loses nothing: the next batch takes it again.

use messages::key::ObjectKey;
use std::collections::BTreeSet;

/// The most Subscriptions, and the most Operators, one run handles: a batch of this size ends well within the
/// reconcile deadline (one list per kind, writes in parallel); the rest waits for the next run, at once.
pub const MAX_BATCH: usize = 500;

/// One run's work.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batch {
    pub subscriptions: BTreeSet<ObjectKey>,
    pub names: BTreeSet<String>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.subscriptions.is_empty() && self.names.is_empty()
    }
}

#[derive(Debug, Default)]
pub struct Queue {
    pending: Batch,
    in_flight: Option<Batch>,
}

impl Queue {
    pub fn add_subscription(&mut self, key: ObjectKey) {
        self.pending.subscriptions.insert(key);
    }

    pub fn add_names(&mut self, names: impl IntoIterator<Item = String>) {
        self.pending.names.extend(names);
    }

    /// The next batch: what a run left in flight (it never ended), then pending work up to `max` of each.
    pub fn take(&mut self, max: usize) -> Batch {
        let mut batch = self.in_flight.take().unwrap_or_default();
        fill(
            &mut batch.subscriptions,
            &mut self.pending.subscriptions,
            max,
        );
        fill(&mut batch.names, &mut self.pending.names, max);
        self.in_flight = Some(batch.clone());
        batch
    }

    /// The run of the batch in flight ended; `retry` is what it failed and goes back to pending.
    pub fn done(&mut self, retry: Batch) {
        self.in_flight = None;
        self.pending.subscriptions.extend(retry.subscriptions);
        self.pending.names.extend(retry.names);
    }

    /// Whether work waits beyond the batch in flight.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

fn fill<T: Ord>(batch: &mut BTreeSet<T>, pending: &mut BTreeSet<T>, max: usize) {
    while batch.len() < max {
        match pending.pop_first() {
            Some(item) => {
                batch.insert(item);
            }
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("op{i:03}.ns")).collect()
    }

    #[rstest]
    #[case::nothing_pending(0, 10, 0, false)]
    #[case::fewer_than_a_batch(3, 10, 3, false)]
    #[case::exactly_a_batch(10, 10, 10, false)]
    #[case::more_than_a_batch_leaves_the_rest(25, 10, 10, true)]
    fn a_batch_takes_up_to_its_size(
        #[case] pending: usize,
        #[case] max: usize,
        #[case] taken: usize,
        #[case] left: bool,
    ) {
        let mut q = Queue::default();
        q.add_names(names(pending));
        let batch = q.take(max);
        assert_eq!(batch.names.len(), taken);
        assert_eq!(q.has_pending(), left);
    }

    #[test]
    fn an_abandoned_batch_is_taken_again() {
        let mut q = Queue::default();
        q.add_names(names(3));
        q.add_subscription(ObjectKey::new("ns", "sub"));
        let first = q.take(10);
        // The run never ended (abandoned at its deadline): no `done`.
        q.add_names(["late.ns".to_owned()]);
        let second = q.take(10);
        assert!(first.names.is_subset(&second.names));
        assert!(second.names.contains("late.ns"));
        assert_eq!(second.subscriptions, first.subscriptions);
    }

    #[test]
    fn a_finished_batch_is_not_taken_again_and_its_failures_are() {
        let mut q = Queue::default();
        q.add_names(names(3));
        let first = q.take(10);
        let failed = Batch {
            subscriptions: BTreeSet::new(),
            names: first.names.iter().take(1).cloned().collect(),
        };
        q.done(failed.clone());
        assert!(q.has_pending());
        assert_eq!(q.take(10), failed);
        q.done(Batch::default());
        assert!(q.take(10).is_empty());
    }
}
