//! operators.coreos.com API types and typed actor messages.

pub mod crd;
#[cfg(feature = "testing")]
pub mod testing;

pub mod key;
pub mod msg;
pub mod rbac_names;
