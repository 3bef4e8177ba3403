//! The catalog operator's metrics, with OLM's names (`RegisterCatalog`, spec §6).

use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

#[derive(Clone)]
pub struct CatalogMetrics {
    pub install_plan_count: IntGauge,
    pub subscription_count: IntGauge,
    pub catalog_source_count: IntGauge,
    pub catalogsource_ready: IntGaugeVec,
    pub catalog_source_snapshots_total: IntCounterVec,
    pub subscription_sync_total: IntCounterVec,
    /// OLM uses a summary; the `prometheus` crate has none, so a histogram under the same name.
    pub resolution_duration: HistogramVec,
    pub installplan_warnings_total: IntCounter,
}

impl CatalogMetrics {
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let m = Self {
            install_plan_count: IntGauge::new("install_plan_count", "Number of install plans")?,
            subscription_count: IntGauge::new("subscription_count", "Number of subscriptions")?,
            catalog_source_count: IntGauge::new(
                "catalog_source_count",
                "Number of catalog sources",
            )?,
            catalogsource_ready: IntGaugeVec::new(
                Opts::new(
                    "catalogsource_ready",
                    "State of a CatalogSource. 1 indicates that the CatalogSource is in a READY state. 0 indicates CatalogSource is in a Non READY state.",
                ),
                &["name", "namespace"],
            )?,
            catalog_source_snapshots_total: IntCounterVec::new(
                Opts::new(
                    "catalog_source_snapshots_total",
                    "The number of times the catalog operator has requested a snapshot of data from a catalog source",
                ),
                &["name", "namespace"],
            )?,
            subscription_sync_total: IntCounterVec::new(
                Opts::new(
                    "subscription_sync_total",
                    "Monotonic count of subscription syncs",
                ),
                &["name", "installed", "channel", "package", "approval"],
            )?,
            resolution_duration: HistogramVec::new(
                HistogramOpts::new(
                    "olm_resolution_duration_seconds",
                    "The duration of a dependency resolution attempt",
                ),
                &["outcome"],
            )?,
            installplan_warnings_total: IntCounter::new(
                "installplan_warnings_total",
                "monotonic count of resources that generated warnings when applied as part of an InstallPlan",
            )?,
        };
        registry.register(Box::new(m.install_plan_count.clone()))?;
        registry.register(Box::new(m.subscription_count.clone()))?;
        registry.register(Box::new(m.catalog_source_count.clone()))?;
        registry.register(Box::new(m.catalogsource_ready.clone()))?;
        registry.register(Box::new(m.catalog_source_snapshots_total.clone()))?;
        registry.register(Box::new(m.subscription_sync_total.clone()))?;
        registry.register(Box::new(m.resolution_duration.clone()))?;
        registry.register(Box::new(m.installplan_warnings_total.clone()))?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn olm_metric_names_appear_in_the_exposition() {
        let registry = Registry::new();
        let m = CatalogMetrics::register(&registry).expect("register");
        m.catalog_source_count.set(2);
        m.catalogsource_ready
            .with_label_values(&["cat", "ns"])
            .set(1);
        m.subscription_sync_total
            .with_label_values(&["sub", "a.v1", "stable", "a", "Automatic"])
            .inc();
        let text = prometheus::TextEncoder::new()
            .encode_to_string(&registry.gather())
            .expect("encode");
        for want in [
            "catalog_source_count 2",
            "catalogsource_ready{name=\"cat\",namespace=\"ns\"} 1",
            "subscription_sync_total{approval=\"Automatic\",channel=\"stable\",installed=\"a.v1\",name=\"sub\",package=\"a\"} 1",
        ] {
            assert!(text.contains(want), "{want} missing in {text}");
        }
    }
}
