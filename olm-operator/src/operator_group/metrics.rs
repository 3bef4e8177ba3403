//! Counters of the API writes OperatorGroup actors make, by kind (`olm_rs_operator_group_writes_total`), so
//! the cost of copies and labels per namespace can be read from `/metrics`.

use olm_runtime::metrics::Metrics;
use prometheus::{IntCounterVec, Opts};
use std::sync::OnceLock;

static WRITES: OnceLock<Option<IntCounterVec>> = OnceLock::new();

/// Count `n` API requests of `kind` (registered in the process registry on first use).
pub fn count(metrics: &Metrics, kind: &str, n: usize) {
    let counter = WRITES.get_or_init(|| {
        let counter = IntCounterVec::new(
            Opts::new(
                "olm_rs_operator_group_writes_total",
                "API requests made by OperatorGroup actors, by kind",
            ),
            &["kind"],
        )
        .ok()?;
        metrics.registry.register(Box::new(counter.clone())).ok()?;
        Some(counter)
    });
    if let Some(counter) = counter {
        counter
            .with_label_values(&[kind])
            .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }
}
