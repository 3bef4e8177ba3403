//! operators.coreos.com API types and typed actor messages.

pub mod crd;
pub mod go_json;
#[cfg(feature = "testing")]
pub mod testing;

pub mod key;
pub mod msg;
pub mod rbac_names;
