//! A CSV phase transition: what the CSV machine (`csv::machine`) decides to write to `status` and what the
//! phase Event (`events`) announces. A leaf of the module graph, so `events` does not import the CSV actor.

use messages::crd::csv::{CsvPhase, CsvReason};

/// A phase change (or a change of reason/message within a phase) to write to `status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub phase: CsvPhase,
    pub reason: CsvReason,
    pub message: String,
}

impl Transition {
    pub fn new(phase: CsvPhase, reason: CsvReason, message: impl Into<String>) -> Self {
        Self {
            phase,
            reason,
            message: message.into(),
        }
    }
}
