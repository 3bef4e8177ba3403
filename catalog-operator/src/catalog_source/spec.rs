//! Pure CatalogSource logic: which kind of source a spec asks for (OLM's validation messages), and the
//! status we write for what we observed (reason, message, connection state).

use messages::crd::catalog_source::{
    CatalogSourceReason, CatalogSourceSpec, GrpcConnectionState, SourceType,
};
use registry::client::ConnectionState;
use std::time::Duration;

/// The registry port OLM's catalog pods serve on.
pub const GRPC_PORT: u16 = 50051;

/// Where the catalog content comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `grpc` with `address`: a registry someone else runs.
    Address(String),
    /// `grpc` with `image`: OLM runs the registry in a Pod behind a Service.
    Image { image: String, service: String },
    /// `configmap`/`internal`: served from the ConfigMap in this process.
    ConfigMap(String),
}

/// A spec we cannot serve: `SpecInvalidError` with OLM's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

/// OLM's service name for a catalog: dots are not allowed in Service names.
pub fn service_name(catalog: &str) -> String {
    catalog.replace('.', "-")
}

pub fn plan(catalog: &str, spec: &CatalogSourceSpec) -> Result<Plan, Invalid> {
    let nonempty = |s: &Option<String>| {
        s.as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    match &spec.source_type {
        SourceType::ConfigMap | SourceType::Internal => match nonempty(&spec.config_map) {
            Some(cm) => Ok(Plan::ConfigMap(cm)),
            None => Err(Invalid(format!(
                "configmap name unset: must be set for sourcetype: {}",
                spec.source_type.as_str()
            ))),
        },
        SourceType::Grpc => match (nonempty(&spec.image), nonempty(&spec.address)) {
            (Some(image), _) => Ok(Plan::Image {
                image,
                service: service_name(catalog),
            }),
            (None, Some(address)) => Ok(Plan::Address(address)),
            (None, None) => Err(Invalid(
                "image and address unset: at least one must be set for sourcetype: grpc"
                    .to_string(),
            )),
        },
        SourceType::Other(other) => Err(Invalid(format!("unknown sourcetype: {other}"))),
    }
}

pub fn wire_state(s: ConnectionState) -> GrpcConnectionState {
    match s {
        ConnectionState::Idle => GrpcConnectionState::Idle,
        ConnectionState::Connecting => GrpcConnectionState::Connecting,
        ConnectionState::Ready => GrpcConnectionState::Ready,
        ConnectionState::TransientFailure => GrpcConnectionState::TransientFailure,
        ConnectionState::Shutdown => GrpcConnectionState::Shutdown,
    }
}

/// Everything the actor knows that shapes the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub plan: Result<Plan, Invalid>,
    /// Set when `registryPoll.interval` does not parse (the default 15m is used).
    pub interval_error: Option<String>,
    /// The gRPC connection state (address and image sources).
    pub connection: Option<ConnectionState>,
    /// The last content fetch failed with this text.
    pub fetch_error: Option<String>,
    /// Content is loaded and served to resolution.
    pub serving: bool,
}

/// `status.reason` and `status.message` for the facts (reset every sync, as OLM does).
pub fn reason_and_message(f: &Facts) -> (CatalogSourceReason, String) {
    match &f.plan {
        Err(Invalid(msg)) => (CatalogSourceReason::SpecInvalidError, msg.clone()),
        Ok(plan) => {
            if let Some(e) = &f.fetch_error {
                if f.serving && keeps_last_good(plan) {
                    return (
                        CatalogSourceReason::RegistryServerError,
                        format!("{e} (still serving the last catalog that loaded)"),
                    );
                }
                let reason = match plan {
                    Plan::ConfigMap(_) => CatalogSourceReason::ConfigMapError,
                    Plan::Address(_) | Plan::Image { .. } => {
                        CatalogSourceReason::RegistryServerError
                    }
                };
                return (reason, e.clone());
            }
            if let Some(e) = &f.interval_error {
                return (CatalogSourceReason::InvalidIntervalError, e.clone());
            }
            match (plan, f.connection) {
                (Plan::Image { service, .. }, Some(s)) if s != ConnectionState::Ready => (
                    CatalogSourceReason::RegistryServerError,
                    format!(
                        "registry pod for service {service} is not reachable (connection {s}); without a kubelet nothing serves it"
                    ),
                ),
                (Plan::Address(addr), Some(ConnectionState::TransientFailure)) => (
                    CatalogSourceReason::RegistryServerError,
                    format!("registry server at {addr} is not reachable"),
                ),
                _ => (CatalogSourceReason::None, String::new()),
            }
        }
    }
}

/// Healthy for Subscriptions: the spec is valid and its content is being served.
pub fn healthy(f: &Facts) -> bool {
    f.plan.is_ok()
        && f.serving
        && (f.fetch_error.is_none() || f.plan.as_ref().is_ok_and(keeps_last_good))
        && !matches!(
            f.connection,
            Some(ConnectionState::TransientFailure | ConnectionState::Shutdown)
        )
}

/// Whether a failed re-read keeps the catalog already loaded: an image catalog whose poll fails (registry
/// unreachable, the tag now names something that is not a catalog) keeps serving its last good content, as OLM
/// keeps the old registry pod serving until the new image's pod is healthy. Other sources drop it.
pub fn keeps_last_good(plan: &Plan) -> bool {
    matches!(plan, Plan::Image { .. })
}

/// When to re-read the content: `registryPoll.interval` when set (we poll address and ConfigMap catalogs too).
pub fn poll_every(interval: Option<Duration>) -> Option<Duration> {
    interval.map(|d| d.max(Duration::from_secs(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn spec(json: serde_json::Value) -> CatalogSourceSpec {
        serde_json::from_value(json).expect("spec")
    }

    #[rstest]
    #[case::grpc_with_an_address_is_an_address_source(serde_json::json!({"sourceType": "grpc", "address": "reg:50051"}), Ok(Plan::Address("reg:50051".into())))]
    #[case::an_image_wins_over_an_address(serde_json::json!({"sourceType": "grpc", "address": "reg:50051", "image": "quay.io/x:1"}), Ok(Plan::Image { image: "quay.io/x:1".into(), service: "my-cat".into() }))]
    #[case::grpc_without_image_or_address_is_invalid(serde_json::json!({"sourceType": "grpc"}), Err(Invalid("image and address unset: at least one must be set for sourcetype: grpc".into())))]
    #[case::configmap_needs_its_configmap(serde_json::json!({"sourceType": "configmap"}), Err(Invalid("configmap name unset: must be set for sourcetype: configmap".into())))]
    #[case::internal_is_a_configmap_source(serde_json::json!({"sourceType": "internal", "configMap": "cm"}), Ok(Plan::ConfigMap("cm".into())))]
    fn a_spec_becomes_a_plan_or_olms_error(
        #[case] s: serde_json::Value,
        #[case] want: Result<Plan, Invalid>,
    ) {
        assert_eq!(plan("my.cat", &spec(s)), want);
    }

    fn facts(
        plan: Result<Plan, Invalid>,
        connection: Option<ConnectionState>,
        serving: bool,
    ) -> Facts {
        Facts {
            plan,
            interval_error: None,
            connection,
            fetch_error: None,
            serving,
        }
    }

    #[rstest]
    #[case::a_ready_address_is_healthy_without_a_reason(facts(Ok(Plan::Address("a:1".into())), Some(ConnectionState::Ready), true), CatalogSourceReason::None, true)]
    #[case::an_unreachable_address_is_a_registry_server_error(facts(Ok(Plan::Address("a:1".into())), Some(ConnectionState::TransientFailure), false), CatalogSourceReason::RegistryServerError, false)]
    #[case::an_image_without_a_listener_says_it_is_not_reachable(facts(Ok(Plan::Image { image: "i".into(), service: "s".into() }), Some(ConnectionState::Connecting), false), CatalogSourceReason::RegistryServerError, false)]
    #[case::an_invalid_spec_is_spec_invalid_and_unhealthy(facts(Err(Invalid("bad".into())), None, false), CatalogSourceReason::SpecInvalidError, false)]
    #[case::a_loaded_configmap_is_healthy(facts(Ok(Plan::ConfigMap("cm".into())), None, true), CatalogSourceReason::None, true)]
    fn status_and_health_follow_the_facts(
        #[case] f: Facts,
        #[case] reason: CatalogSourceReason,
        #[case] is_healthy: bool,
    ) {
        assert_eq!(reason_and_message(&f).0, reason);
        assert_eq!(healthy(&f), is_healthy);
    }

    fn failed_fetch(plan: Plan, serving: bool) -> Facts {
        let connection = Some(ConnectionState::Ready);
        let mut f = facts(Ok(plan), connection, serving);
        f.fetch_error = Some("pull failed".into());
        f
    }

    #[rstest]
    #[case::a_failed_poll_of_a_loaded_image_keeps_serving(failed_fetch(Plan::Image { image: "i".into(), service: "s".into() }, true), true, "pull failed (still serving the last catalog that loaded)")]
    #[case::an_image_that_never_loaded_is_not_served(failed_fetch(Plan::Image { image: "i".into(), service: "s".into() }, false), false, "pull failed")]
    #[case::a_failed_address_fetch_is_unhealthy(failed_fetch(Plan::Address("a:1".into()), true), false, "pull failed")]
    #[case::a_failed_configmap_load_is_unhealthy(failed_fetch(Plan::ConfigMap("cm".into()), true), false, "pull failed")]
    fn only_an_image_catalog_serves_through_a_failed_refresh(
        #[case] f: Facts,
        #[case] is_healthy: bool,
        #[case] message: &str,
    ) {
        assert_eq!(healthy(&f), is_healthy);
        assert_eq!(reason_and_message(&f).1, message);
        let plan = f.plan.as_ref().expect("plan");
        assert_eq!(keeps_last_good(plan), matches!(plan, Plan::Image { .. }));
    }

    #[test]
    fn a_configmap_that_fails_to_load_is_a_configmap_error() {
        let mut f = facts(Ok(Plan::ConfigMap("cm".into())), None, false);
        f.fetch_error = Some("configmap ns/cm not found".into());
        assert_eq!(
            reason_and_message(&f),
            (
                CatalogSourceReason::ConfigMapError,
                "configmap ns/cm not found".into()
            )
        );
        assert!(!healthy(&f));
    }

    #[test]
    fn an_unparseable_interval_is_reported_but_the_catalog_still_serves() {
        let mut f = facts(
            Ok(Plan::Address("a:1".into())),
            Some(ConnectionState::Ready),
            true,
        );
        f.interval_error = Some("error parsing spec.updateStrategy.registryPoll.interval".into());
        assert_eq!(
            reason_and_message(&f).0,
            CatalogSourceReason::InvalidIntervalError
        );
        assert!(healthy(&f));
    }
}
