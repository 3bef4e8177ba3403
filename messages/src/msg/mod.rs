//! Typed actor messages shared by both operators. Every message is a plain serde type, so actor traffic can be
//! recorded to a MessagePack journal (`journal.rs`) and replayed in tests.

pub mod journal;
pub mod object;
pub mod operator_group;

pub use journal::{Journal, JournalEntry, JournalEvent};
pub use object::{ActorCount, ObjectEvent, Requeue, RequeueReason};
pub use operator_group::{ApiChange, ChangeProvidedApis, OperatorGroupMsg, ProvidedApisError};
