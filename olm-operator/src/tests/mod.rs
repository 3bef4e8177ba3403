//! What olm-operator's actor tests share (test code only; a `tests` folder, so the import-circle check leaves it
//! out).

pub mod shared;
