//! The [`check::Live`] view over the operator's caches (no API calls), and the served facts of one CSV for
//! `observe::gather`: spec problems, the APIService owner conflict, the health of what is served, the
//! time left before the certificates are due for rotation, and before a rotation's previous CA may leave the
//! CA bundles.

use super::check::{self, Live};
use super::{api_services, install, plan, webhooks};
use crate::csv::facts::{InstallStatus, Served};
use crate::shared::Shared;
use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::runtime::reflector::ObjectRef;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, WebhookAdmissionType};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub struct StoreLive<'a> {
    pub shared: &'a Shared,
}

fn matches(have: Option<&BTreeMap<String, String>>, want: &BTreeMap<String, String>) -> bool {
    have.is_some_and(|h| want.iter().all(|(k, v)| h.get(k) == Some(v)))
}

impl Live for StoreLive<'_> {
    fn service_exists(&self, namespace: &str, name: &str) -> bool {
        self.shared
            .stores
            .csv
            .served
            .services
            .get(&ObjectRef::new(name).within(namespace))
            .is_some()
    }

    fn deployment_ca_hash(&self, namespace: &str, name: &str) -> Option<String> {
        let d = self
            .shared
            .stores
            .csv
            .deployments
            .get(&ObjectRef::new(name).within(namespace))?;
        super::objects::mounted_ca_hash(&d).map(String::from)
    }

    fn webhook_ca_bundles(
        &self,
        type_: &WebhookAdmissionType,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Option<ByteString>> {
        let stores = &self.shared.stores.csv.served;
        match type_ {
            WebhookAdmissionType::ValidatingAdmissionWebhook => stores
                .validating
                .state()
                .iter()
                .filter(|c| matches(c.metadata.labels.as_ref(), labels))
                .flat_map(|c| {
                    c.webhooks
                        .iter()
                        .flatten()
                        .map(|w| w.client_config.ca_bundle.clone())
                        .collect::<Vec<_>>()
                })
                .collect(),
            WebhookAdmissionType::MutatingAdmissionWebhook => stores
                .mutating
                .state()
                .iter()
                .filter(|c| matches(c.metadata.labels.as_ref(), labels))
                .flat_map(|c| {
                    c.webhooks
                        .iter()
                        .flatten()
                        .map(|w| w.client_config.ca_bundle.clone())
                        .collect::<Vec<_>>()
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn crd(&self, name: &str) -> Option<Arc<CustomResourceDefinition>> {
        self.shared.stores.csv.crds.get(&ObjectRef::new(name))
    }

    fn rollout_completed_at(&self, namespace: &str, name: &str) -> Option<i64> {
        let d = self
            .shared
            .stores
            .csv
            .deployments
            .get(&ObjectRef::new(name).within(namespace))?;
        d.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| {
                c.type_ == "Progressing" && c.reason.as_deref() == Some("NewReplicaSetAvailable")
            })
            .and_then(|c| c.last_update_time.as_ref())
            .map(|t| t.0.as_second())
    }

    fn api_service(&self, name: &str) -> Option<Arc<APIService>> {
        self.shared
            .stores
            .csv
            .api_services
            .get(&ObjectRef::new(name))
    }
}

/// Longest wait before looking at the certificates again (timers of years are pointless).
const ROTATION_RECHECK: Duration = Duration::from_secs(24 * 3600);

/// The served facts of `csv` at `now` (unix seconds).
pub fn served(shared: &Shared, csv: &ClusterServiceVersion, now: i64) -> Served {
    let rotate_in = if plan::of(csv).is_empty() {
        None
    } else {
        csv.status
            .as_ref()
            .and_then(|s| s.certs_rotate_at.as_ref())
            .map(|t| {
                let left = t.0.as_second().saturating_sub(now).max(0);
                Duration::from_secs(u64::try_from(left).unwrap_or_default()).min(ROTATION_RECHECK)
            })
    };
    let live = StoreLive { shared };
    let adoptable = |a: &APIService| {
        api_services::adoptable(a.metadata.labels.as_ref(), &install::owners(shared, csv, a))
    };
    Served {
        invalid: check::spec_problem(csv),
        api_service_conflict: check::api_service_conflict(csv, &live, &adoptable),
        rotate_in,
        settle_in: check::settle_in(csv, &live, now),
    }
}

/// The install status once the deployments are healthy: what is served must be in place too. While
/// Installing a problem is waited on (the caches may trail our own writes); later it fails the CSV, whose
/// recovery reinstalls.
pub fn refine(
    shared: &Shared,
    csv: &ClusterServiceVersion,
    install: InstallStatus,
    now: i64,
) -> InstallStatus {
    if install != InstallStatus::Healthy
        || webhooks::of(csv).is_empty() && api_services::owned(csv).is_empty()
    {
        return install;
    }
    match check::problem(csv, &StoreLive { shared }, now) {
        None => InstallStatus::Healthy,
        Some(p) if csv.phase() == CsvPhase::Installing => InstallStatus::Waiting(p),
        Some(p) => InstallStatus::Missing(p),
    }
}
