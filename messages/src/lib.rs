//! operators.coreos.com API types and typed actor messages.

pub mod crd;

pub mod key;
pub mod msg;
