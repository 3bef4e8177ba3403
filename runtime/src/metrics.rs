//! The process-wide Prometheus registry (the tikv `prometheus` crate keeps OLM's metric names verbatim, e.g. the
//! `csv_upgrade_count` counter), the gauges of live object actors per kind, and the counts of watched objects
//! that do not decode.

use crate::leader::Role;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Metrics shared by the registries and the HTTP endpoints.
#[derive(Clone)]
pub struct Metrics {
    pub registry: Registry,
    actors: IntGaugeVec,
    leader: IntGaugeVec,
    undecodable: IntCounterVec,
    held: IntGaugeVec,
    counts: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let actors = IntGaugeVec::new(
            Opts::new("olm_rs_object_actors", "Live per-object actors, by kind"),
            &["kind"],
        )?;
        registry.register(Box::new(actors.clone()))?;
        let leader = IntGaugeVec::new(
            Opts::new(
                "leader_election_master_status",
                "1 while this replica holds the named leader Lease, else 0 (client-go's metric name)",
            ),
            &["name"],
        )?;
        registry.register(Box::new(leader.clone()))?;
        let undecodable = IntCounterVec::new(
            Opts::new(
                "olm_rs_undecodable_objects_total",
                "Watched objects skipped because their stored JSON does not decode as their kind, by kind",
            ),
            &["kind"],
        )?;
        registry.register(Box::new(undecodable.clone()))?;
        let held = IntGaugeVec::new(
            Opts::new(
                "olm_rs_objects_held_undecodable",
                "Objects whose current version does not decode as their kind, their actors holding until one does, by kind",
            ),
            &["kind"],
        )?;
        registry.register(Box::new(held.clone()))?;
        crate::actor_metrics::install(crate::actor_metrics::ActorMetrics::register(&registry)?);
        crate::api_metrics::register(&registry)?;
        Ok(Self {
            registry,
            actors,
            leader,
            undecodable,
            held,
            counts: Arc::default(),
        })
    }

    pub fn set_actor_count(&self, kind: &'static str, count: usize) {
        if let Some(m) = crate::actor_metrics::global() {
            m.zero(kind);
        }
        self.actors
            .with_label_values(&[kind])
            .set(i64::try_from(count).unwrap_or(i64::MAX));
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kind, count);
    }

    /// One watched object of `kind` did not decode and was skipped.
    pub fn count_undecodable(&self, kind: &str) {
        self.undecodable.with_label_values(&[kind]).inc();
    }

    /// `count` objects of `kind` have a current version that does not decode (their actors hold).
    pub fn set_held_undecodable(&self, kind: &'static str, count: usize) {
        self.held
            .with_label_values(&[kind])
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Keep `leader_election_master_status{name}` in step with an elector's role.
    pub fn follow_leadership(&self, name: &str, mut role: tokio::sync::watch::Receiver<Role>) {
        let gauge = self.leader.with_label_values(&[name]);
        gauge.set(0);
        tokio::spawn(async move {
            loop {
                let leading = *role.borrow_and_update() == Role::Leader;
                gauge.set(i64::from(leading));
                if role.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// Live actors per kind, for `/debug/actors`.
    pub fn actor_counts(&self) -> BTreeMap<&'static str, usize> {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The text exposition format (0.0.4) of every registered metric.
    pub fn encode(&self) -> Result<String, prometheus::Error> {
        let encoder = prometheus::TextEncoder::new();
        encoder.encode_to_string(&self.registry.gather())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actor_counts_show_in_the_exposition_and_the_debug_map() {
        let m = Metrics::new().expect("metrics");
        m.set_actor_count("ClusterServiceVersion", 3);
        m.set_actor_count("OperatorGroup", 1);
        let text = m.encode().expect("encode");
        assert!(
            text.contains("olm_rs_object_actors{kind=\"ClusterServiceVersion\"} 3"),
            "{text}"
        );
        assert_eq!(m.actor_counts().get("OperatorGroup"), Some(&1));
    }
}
