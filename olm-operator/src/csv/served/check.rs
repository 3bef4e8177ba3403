//! Is what a CSV serves still in place? Pure, over a [`Live`] view of the caches: per serving deployment its
//! Service, a CA hash on its pod template; per webhook description a configuration (or CRD conversion) whose
//! CA bundle is that CA and still valid; per owned APIService one owned by this CSV with that CA and
//! `Available` (OLM's `areAPIServicesAvailable`: the aggregator reaches the deployment). The first
//! problem found is the answer, worded for the CSV's status message. Also: the spec problems that must stop
//! an install before anything is created (`spec_problem`) and the APIService owner conflict.

use super::{api_services, bundle, certs, plan, webhooks};
use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, WebhookAdmissionType};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the checks read about the cluster.
pub trait Live {
    fn service_exists(&self, namespace: &str, name: &str) -> bool;
    /// The `olmcahash` on the pod template of a live deployment.
    fn deployment_ca_hash(&self, namespace: &str, name: &str) -> Option<String>;
    /// The CA bundles of the webhook configurations of `type_` carrying these labels.
    fn webhook_ca_bundles(
        &self,
        type_: &WebhookAdmissionType,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Option<ByteString>>;
    fn crd(&self, name: &str) -> Option<Arc<CustomResourceDefinition>>;
    fn api_service(&self, name: &str) -> Option<Arc<APIService>>;
    /// When the live deployment's latest rollout completed (unix seconds; its `Progressing` condition with
    /// reason `NewReplicaSetAvailable`), if it did.
    fn rollout_completed_at(&self, namespace: &str, name: &str) -> Option<i64>;
}

/// Problems of the webhook descriptions (reason `InvalidWebhookDescription`); OLM's checks plus the
/// deployment each must name.
pub fn spec_problem(csv: &ClusterServiceVersion) -> Option<String> {
    webhooks::validate(csv).err()
}

/// An owned APIService that exists and may not be adopted (OLM's `apiServiceOwnerConflicts`).
pub fn api_service_conflict(
    csv: &ClusterServiceVersion,
    live: &dyn Live,
    owners: &dyn Fn(&APIService) -> bool,
) -> Option<String> {
    api_services::owned(csv)
        .iter()
        .map(|d| d.api_service_name())
        .find(|name| live.api_service(name).is_some_and(|a| !owners(&a)))
}

/// The first missing or inconsistent piece, or `None` when everything is in place.
pub fn problem(csv: &ClusterServiceVersion, live: &dyn Live, now: i64) -> Option<String> {
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let name = csv.metadata.name.as_deref().unwrap_or_default();
    let mut hashes = BTreeMap::new();
    for serving in plan::of(csv) {
        if !live.service_exists(namespace, &serving.service) {
            return Some(format!(
                "service {} of deployment {} is missing",
                serving.service, serving.deployment
            ));
        }
        let Some(hash) = live.deployment_ca_hash(namespace, &serving.deployment) else {
            return Some(format!(
                "deployment {} does not carry the hash of its serving CA",
                serving.deployment
            ));
        };
        hashes.insert(serving.deployment, hash);
    }
    // The bundle's newest CA must be the one the deployment serves with (during a rotation the bundle also
    // trusts the previous CA, see bundle.rs; a deployment still on that one has not rolled yet).
    let bundle_problem = |b: Option<&ByteString>, hash: &str| match b {
        None => Some("has no CA bundle".to_string()),
        Some(b) if !bundle::newest_is(&b.0, hash) => {
            Some("has a CA bundle other than the one its deployment serves with".into())
        }
        Some(b) => certs::usable_ca(bundle::newest(&b.0).unwrap_or_default(), now)
            .err()
            .map(|e| format!("has an unusable CA bundle: {e}")),
    };
    for desc in webhooks::of(csv) {
        let deployment = desc.deployment_name.clone().unwrap_or_default();
        let Some(hash) = hashes.get(&deployment) else {
            continue;
        };
        match &desc.type_ {
            WebhookAdmissionType::ConversionWebhook => {
                for crd in desc.conversion_crds.iter().flatten() {
                    let converts = live
                        .crd(crd)
                        .is_some_and(|c| webhooks::converts_with(&c, desc, hash));
                    if !converts {
                        return Some(format!(
                            "CRD {crd} does not convert through webhook {} with its current CA",
                            desc.generate_name
                        ));
                    }
                }
            }
            type_ => {
                let bundles =
                    live.webhook_ca_bundles(type_, &webhooks::labels(name, namespace, desc));
                if bundles.is_empty() {
                    return Some(format!("webhook {} is not installed", desc.generate_name));
                }
                for bundle in &bundles {
                    if let Some(p) = bundle_problem(bundle.as_ref(), hash) {
                        return Some(format!("webhook {} {p}", desc.generate_name));
                    }
                }
            }
        }
    }
    for desc in api_services::owned(csv) {
        let api_name = desc.api_service_name();
        let Some(hash) = desc.deployment_name.as_ref().and_then(|d| hashes.get(d)) else {
            continue;
        };
        let Some(api) = live.api_service(&api_name) else {
            return Some(format!("APIService {api_name} is missing"));
        };
        let labels = api.metadata.labels.as_ref();
        let owner = labels
            .and_then(|l| l.get(annotations::OWNER))
            .map(String::as_str);
        let owner_ns = labels
            .and_then(|l| l.get(annotations::OWNER_NAMESPACE))
            .map(String::as_str);
        if owner != Some(name) || owner_ns != Some(namespace) {
            return Some(format!("APIService {api_name} is not owned by this CSV"));
        }
        let bundle = api.spec.as_ref().and_then(|s| s.ca_bundle.as_ref());
        if let Some(p) = bundle_problem(bundle, hash) {
            return Some(format!("APIService {api_name} {p}"));
        }
        let available = api
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            });
        if !available {
            return Some(format!("APIService {api_name} is not available"));
        }
    }
    None
}

/// The CA bundles of what `csv` serves: its webhook configurations, the conversions of its CRDs that point
/// at its Services, its owned APIServices.
fn bundles(csv: &ClusterServiceVersion, live: &dyn Live) -> Vec<ByteString> {
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let name = csv.metadata.name.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    for desc in webhooks::of(csv) {
        match &desc.type_ {
            WebhookAdmissionType::ConversionWebhook => {
                for crd in desc.conversion_crds.iter().flatten() {
                    let config = live.crd(crd).and_then(|c| {
                        c.spec
                            .conversion
                            .as_ref()
                            .and_then(|v| v.webhook.as_ref())
                            .and_then(|w| w.client_config.clone())
                    });
                    let ours = config.as_ref().is_some_and(|c| {
                        c.service.as_ref().is_some_and(|s| {
                            s.namespace == namespace && s.name == desc.service_name()
                        })
                    });
                    out.extend(config.filter(|_| ours).and_then(|c| c.ca_bundle));
                }
            }
            type_ => out.extend(
                live.webhook_ca_bundles(type_, &webhooks::labels(name, namespace, desc))
                    .into_iter()
                    .flatten(),
            ),
        }
    }
    for desc in api_services::owned(csv) {
        let Some(api) = live.api_service(&desc.api_service_name()) else {
            continue;
        };
        let labels = api.metadata.labels.as_ref();
        let owned = labels
            .and_then(|l| l.get(annotations::OWNER))
            .map(String::as_str)
            == Some(name)
            && labels
                .and_then(|l| l.get(annotations::OWNER_NAMESPACE))
                .map(String::as_str)
                == Some(namespace);
        if owned {
            out.extend(api.spec.as_ref().and_then(|s| s.ca_bundle.clone()));
        }
    }
    out
}

/// How long until the CA bundles may drop the previous CAs they still trust after a rotation (`None`: they
/// trust only the newest): [`bundle::SETTLE`] after the serving deployments' latest rollout completed. Acted
/// on only once the install is healthy, i.e. every deployment serves with the newest CA and is rolled out.
pub fn settle_in(
    csv: &ClusterServiceVersion,
    live: &dyn Live,
    now: i64,
) -> Option<std::time::Duration> {
    if !bundles(csv, live)
        .iter()
        .any(|b| bundle::trusts_previous(&b.0))
    {
        return None;
    }
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let completed = plan::of(csv)
        .iter()
        .filter_map(|s| live.rollout_completed_at(namespace, &s.deployment))
        .max();
    Some(bundle::settle_in(completed, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn csv() -> ClusterServiceVersion {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "op.v1", "namespace": "ns", "uid": "u"},
            "spec": {
                "install": {"strategy": "deployment", "spec": {"deployments": [
                    {"name": "op", "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {}}}]}},
                "webhookdefinitions": [{"generateName": "v.x.io", "type": "ValidatingAdmissionWebhook", "deploymentName": "op"}],
                "apiservicedefinitions": {"owned": [{"name": "w", "group": "x.io", "version": "v1", "kind": "W", "deploymentName": "op"}]}
            }
        }))
        .expect("a CSV")
    }

    /// A cluster where everything is in place, with knobs to break one piece.
    struct Fake {
        ca: String,
        service: bool,
        deployment_hash: Option<String>,
        webhook: Option<Option<String>>,
        api_owner: Option<&'static str>,
        api_ca: Option<String>,
        api_available: bool,
        /// Another CA (the previous one of a rotation).
        old: String,
        completed_at: Option<i64>,
    }

    impl Fake {
        fn healthy() -> Self {
            let issued = certs::issue(&["op-service.ns".into()], NOW, certs::Lifetime::default())
                .expect("issued");
            let hash = certs::ca_hash(issued.ca_pem.as_bytes());
            let old = certs::issue(
                &["op-service.ns".into()],
                NOW - 10,
                certs::Lifetime::default(),
            )
            .expect("issued")
            .ca_pem;
            Self {
                old,
                completed_at: None,
                ca: issued.ca_pem.clone(),
                service: true,
                deployment_hash: Some(hash),
                webhook: Some(Some(issued.ca_pem.clone())),
                api_owner: Some("op.v1"),
                api_ca: Some(issued.ca_pem),
                api_available: true,
            }
        }
    }

    impl Live for Fake {
        fn service_exists(&self, namespace: &str, name: &str) -> bool {
            self.service && namespace == "ns" && name == "op-service"
        }
        fn deployment_ca_hash(&self, _: &str, _: &str) -> Option<String> {
            self.deployment_hash.clone()
        }
        fn webhook_ca_bundles(
            &self,
            _: &WebhookAdmissionType,
            labels: &BTreeMap<String, String>,
        ) -> Vec<Option<ByteString>> {
            assert_eq!(
                labels.get(webhooks::DESCRIPTION_LABEL).map(String::as_str),
                Some("v.x.io")
            );
            self.webhook
                .iter()
                .map(|b| b.as_ref().map(|s| ByteString(s.as_bytes().to_vec())))
                .collect()
        }
        fn crd(&self, _: &str) -> Option<Arc<CustomResourceDefinition>> {
            None
        }
        fn api_service(&self, name: &str) -> Option<Arc<APIService>> {
            let owner = self.api_owner?;
            let mut a =
                api_services::build(owner, "ns", &api_services::owned(&csv())[0], b"", None);
            if let Some(spec) = a.spec.as_mut() {
                spec.ca_bundle = self
                    .api_ca
                    .as_ref()
                    .map(|c| ByteString(c.as_bytes().to_vec()));
            }
            a.status = Some(k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceStatus {
                conditions: Some(vec![k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceCondition {
                    type_: "Available".into(),
                    status: if self.api_available { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
            });
            assert_eq!(name, "v1.x.io");
            Some(Arc::new(a))
        }
        fn rollout_completed_at(&self, _: &str, _: &str) -> Option<i64> {
            self.completed_at
        }
    }

    /// The webhook's bundle during a rotation: the new CA first, the previous one after it.
    fn rotating(f: &mut Fake) {
        f.webhook = Some(Some(format!("{}{}", f.ca, f.old)));
    }

    #[rstest]
    #[case::everything_in_place(|_f: &mut Fake| {}, None)]
    #[case::a_deleted_service(|f: &mut Fake| f.service = false, Some("service op-service of deployment op is missing"))]
    #[case::a_deployment_without_the_ca_hash(|f: &mut Fake| f.deployment_hash = None, Some("deployment op does not carry the hash of its serving CA"))]
    #[case::a_deleted_webhook_configuration(|f: &mut Fake| f.webhook = None, Some("webhook v.x.io is not installed"))]
    #[case::a_webhook_without_ca(|f: &mut Fake| f.webhook = Some(None), Some("webhook v.x.io has no CA bundle"))]
    #[case::a_webhook_with_another_ca(|f: &mut Fake| f.webhook = Some(Some("garbage".into())), Some("webhook v.x.io has a CA bundle other than the one its deployment serves with"))]
    #[case::a_broken_ca_everywhere(|f: &mut Fake| { f.webhook = Some(Some("garbage".into())); f.deployment_hash = Some(certs::ca_hash(b"garbage")); }, Some("webhook v.x.io has an unusable CA bundle"))]
    #[case::a_deleted_api_service(|f: &mut Fake| f.api_owner = None, Some("APIService v1.x.io is missing"))]
    #[case::an_api_service_taken_over(|f: &mut Fake| f.api_owner = Some("other.v1"), Some("APIService v1.x.io is not owned by this CSV"))]
    #[case::an_api_service_the_aggregator_cannot_reach(|f: &mut Fake| f.api_available = false, Some("APIService v1.x.io is not available"))]
    #[case::a_rotation_with_pods_on_the_new_ca(rotating, None)]
    #[case::a_rotation_with_pods_still_on_the_previous_ca(|f: &mut Fake| { rotating(f); f.deployment_hash = Some(certs::ca_hash(f.old.as_bytes())); }, Some("webhook v.x.io has a CA bundle other than the one its deployment serves with"))]
    #[case::an_api_service_with_another_ca(|f: &mut Fake| f.api_ca = Some(f.ca.replace('A', "B")), Some("APIService v1.x.io has a CA bundle other than"))]
    fn what_is_served_is_checked_piece_by_piece(
        #[case] breaks: fn(&mut Fake),
        #[case] expected: Option<&str>,
    ) {
        let mut live = Fake::healthy();
        breaks(&mut live);
        let found = problem(&csv(), &live, NOW + 1);
        match (found.as_deref(), expected) {
            (None, None) => {}
            (Some(f), Some(e)) => assert!(f.starts_with(e), "{f}"),
            (f, e) => panic!("found {f:?}, expected {e:?}"),
        }
    }

    #[rstest]
    #[case::bundles_with_one_ca_have_nothing_to_settle(|_f: &mut Fake| {}, None)]
    #[case::a_webhook_trusting_the_previous_ca_just_rolled_out_waits(|f: &mut Fake| { rotating(f); f.completed_at = Some(NOW - 2); }, Some(3))]
    #[case::a_webhook_trusting_the_previous_ca_long_rolled_out_settles_now(|f: &mut Fake| { rotating(f); f.completed_at = Some(NOW - 60); }, Some(0))]
    #[case::an_api_service_trusting_the_previous_ca_settles(|f: &mut Fake| f.api_ca = Some(format!("{}{}", f.ca, f.old)), Some(0))]
    #[case::an_api_service_of_another_csv_is_not_ours_to_settle(|f: &mut Fake| { f.api_owner = Some("other.v1"); f.api_ca = Some(format!("{}{}", f.ca, f.old)); }, None)]
    fn previous_cas_are_dropped_a_little_after_the_rollout(
        #[case] state: fn(&mut Fake),
        #[case] left: Option<u64>,
    ) {
        let mut live = Fake::healthy();
        state(&mut live);
        assert_eq!(
            settle_in(&csv(), &live, NOW),
            left.map(std::time::Duration::from_secs)
        );
    }

    #[test]
    fn an_api_service_of_another_csv_is_a_conflict() {
        let live = Fake {
            api_owner: Some("other.v1"),
            ..Fake::healthy()
        };
        assert_eq!(
            api_service_conflict(&csv(), &live, &|a| a
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(annotations::OWNER))
                .map(String::as_str)
                == Some("op.v1")),
            Some("v1.x.io".to_string())
        );
        let mine = Fake::healthy();
        assert_eq!(
            api_service_conflict(&csv(), &mine, &|a| a
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(annotations::OWNER))
                .map(String::as_str)
                == Some("op.v1")),
            None
        );
    }
}
