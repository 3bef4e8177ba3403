//! OLM's CSV metrics with their exact names and labels (spec §6), on the process registry (tikv
//! `prometheus`, which keeps `csv_upgrade_count` verbatim): `csv_count`, `csv_succeeded{namespace,name,version}`,
//! `csv_abnormal{namespace,name,version,phase,reason}` (old series deleted on change and deletion) and the
//! `csv_upgrade_count` counter.

use prometheus::{Histogram, HistogramOpts, IntCounter, IntGauge, IntGaugeVec, Opts, Registry};

/// Seconds, from 1 s to an hour (the install timeout is 5 minutes; upgrades may wait on approval).
const DURATION_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

/// Which duration histogram a CSV's phase change feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationKind {
    Install,
    Upgrade,
}

#[derive(Clone)]
pub struct CsvMetrics {
    count: IntGauge,
    succeeded: IntGaugeVec,
    abnormal: IntGaugeVec,
    upgrades: IntCounter,
    install_duration: Histogram,
    upgrade_duration: Histogram,
}

/// The label values of one CSV's series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub phase: String,
    pub reason: String,
}

impl CsvMetrics {
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let count = IntGauge::new("csv_count", "Number of CSVs successfully registered")?;
        let succeeded = IntGaugeVec::new(
            Opts::new("csv_succeeded", "Successful CSV install"),
            &["namespace", "name", "version"],
        )?;
        let abnormal = IntGaugeVec::new(
            Opts::new("csv_abnormal", "CSV is not installed"),
            &["namespace", "name", "version", "phase", "reason"],
        )?;
        let upgrades = IntCounter::new("csv_upgrade_count", "Monotonic count of CSV upgrades")?;
        registry.register(Box::new(count.clone()))?;
        registry.register(Box::new(succeeded.clone()))?;
        registry.register(Box::new(abnormal.clone()))?;
        registry.register(Box::new(upgrades.clone()))?;
        let install_duration = Histogram::with_opts(
            HistogramOpts::new(
                "olm_rs_install_duration_seconds",
                "From the Subscription's creation (else the CSV's) to the CSV's first Succeeded",
            )
            .buckets(DURATION_BUCKETS.to_vec()),
        )?;
        let upgrade_duration = Histogram::with_opts(
            HistogramOpts::new(
                "olm_rs_upgrade_duration_seconds",
                "From a replacing CSV's creation to its Succeeded",
            )
            .buckets(DURATION_BUCKETS.to_vec()),
        )?;
        registry.register(Box::new(install_duration.clone()))?;
        registry.register(Box::new(upgrade_duration.clone()))?;
        Ok(Self {
            count,
            succeeded,
            abnormal,
            upgrades,
            install_duration,
            upgrade_duration,
        })
    }

    pub fn set_count(&self, count: usize) {
        self.count.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    pub fn observe_duration(&self, kind: DurationKind, seconds: f64) {
        match kind {
            DurationKind::Install => self.install_duration.observe(seconds),
            DurationKind::Upgrade => self.upgrade_duration.observe(seconds),
        }
    }

    pub fn count_upgrade(&self) {
        self.upgrades.inc();
    }

    /// OLM's `EmitCSVMetric`: drop the previous abnormal series, then publish the new ones. Copies
    /// (`copied`) are not published.
    pub fn record(&self, previous: &mut Option<Series>, now: Series, copied: bool) {
        if copied {
            return;
        }
        if let Some(old) = previous.take() {
            let _ = self.abnormal.remove_label_values(&[
                &old.namespace,
                &old.name,
                &old.version,
                &old.phase,
                &old.reason,
            ]);
            if old.version != now.version {
                let _ =
                    self.succeeded
                        .remove_label_values(&[&old.namespace, &old.name, &old.version]);
            }
        }
        let succeeded =
            self.succeeded
                .with_label_values(&[&now.namespace, &now.name, &now.version]);
        if now.phase == "Succeeded" {
            succeeded.set(1);
        } else {
            succeeded.set(0);
            self.abnormal
                .with_label_values(&[
                    &now.namespace,
                    &now.name,
                    &now.version,
                    &now.phase,
                    &now.reason,
                ])
                .set(1);
        }
        *previous = Some(now);
    }

    /// OLM's `DeleteCSVMetric`.
    pub fn forget(&self, previous: &mut Option<Series>) {
        if let Some(old) = previous.take() {
            let _ = self.abnormal.remove_label_values(&[
                &old.namespace,
                &old.name,
                &old.version,
                &old.phase,
                &old.reason,
            ]);
            let _ = self
                .succeeded
                .remove_label_values(&[&old.namespace, &old.name, &old.version]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(phase: &str, reason: &str) -> Series {
        Series {
            namespace: "ns".into(),
            name: "a.v1".into(),
            version: "1.0.0".into(),
            phase: phase.into(),
            reason: reason.into(),
        }
    }

    fn text(registry: &Registry) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&registry.gather())
            .expect("encode")
    }

    #[test]
    fn a_csv_moves_from_abnormal_to_succeeded_and_disappears_on_deletion() {
        let registry = Registry::new();
        let m = CsvMetrics::register(&registry).expect("register");
        let mut last = None;
        m.record(&mut last, series("Pending", "RequirementsNotMet"), false);
        let t = text(&registry);
        assert!(t.contains(r#"csv_abnormal{name="a.v1",namespace="ns",phase="Pending",reason="RequirementsNotMet",version="1.0.0"} 1"#), "{t}");
        assert!(
            t.contains(r#"csv_succeeded{name="a.v1",namespace="ns",version="1.0.0"} 0"#),
            "{t}"
        );
        m.record(&mut last, series("Succeeded", "InstallSucceeded"), false);
        let t = text(&registry);
        assert!(
            !t.contains("csv_abnormal{"),
            "the old abnormal series is deleted: {t}"
        );
        assert!(
            t.contains(r#"csv_succeeded{name="a.v1",namespace="ns",version="1.0.0"} 1"#),
            "{t}"
        );
        m.forget(&mut last);
        let t = text(&registry);
        assert!(!t.contains("csv_succeeded{"), "{t}");
    }

    #[test]
    fn the_upgrade_counter_and_count_keep_olms_names() {
        let registry = Registry::new();
        let m = CsvMetrics::register(&registry).expect("register");
        m.count_upgrade();
        m.set_count(3);
        let t = text(&registry);
        assert!(t.contains("csv_upgrade_count 1"), "{t}");
        assert!(!t.contains("csv_upgrade_count_total"), "{t}");
        assert!(t.contains("csv_count 3"), "{t}");
    }

    #[test]
    fn copies_are_not_published() {
        let registry = Registry::new();
        let m = CsvMetrics::register(&registry).expect("register");
        let mut last = None;
        m.record(&mut last, series("Succeeded", "Copied"), true);
        assert!(!text(&registry).contains("csv_succeeded{"));
    }
}
