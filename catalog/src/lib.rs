//! catalog (work in progress)
