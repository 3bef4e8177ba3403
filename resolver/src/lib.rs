//! resolver (work in progress)
