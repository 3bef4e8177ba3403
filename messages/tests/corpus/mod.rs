//! Support for the corpus round-trip test.

pub mod diff;
pub mod documents;
pub mod kinds;
