//! How catalog-operator's actors address the namespace resolution: the typed messages the `messages` crate does
//! not define, in a leaf module (it imports no actor module), so `shared.rs` holds recipients of them, never actor
//! types, and no import circle runs through it; `run.rs` wires the addresses in at start-up.

use actix::Message;

/// Why a namespace is resolved again (for logs and the journal only; every cause runs the same sync).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    SubscriptionChanged,
    CatalogChanged,
    InstallPlanChanged,
    CsvChanged,
    OperatorGroupChanged,
    Retry,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::SubscriptionChanged => "subscription changed",
            Cause::CatalogChanged => "catalog changed",
            Cause::InstallPlanChanged => "install plan changed",
            Cause::CsvChanged => "csv changed",
            Cause::OperatorGroupChanged => "operator group changed",
            Cause::Retry => "retry",
        }
    }
}

#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Resolve {
    pub namespace: String,
    pub cause: Cause,
}
