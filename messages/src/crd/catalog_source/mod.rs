//! CatalogSource (`operators.coreos.com/v1alpha1`, namespaced): a catalog OLM resolves from
//! (API `catalogsource_types.go`, spec §1.2), with `Address()`, `Poll()` and `Update()`.

mod duration;

pub use duration::{DurationError, parse_go_duration};

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::crd::csv::Icon;
use crate::wire_enum;

/// Poll interval used when `registryPoll.interval` does not parse (`DefaultRegistryPollDuration`).
pub const DEFAULT_REGISTRY_POLL: Duration = Duration::from_secs(15 * 60);

wire_enum! {
    /// `spec.sourceType`.
    pub enum SourceType {
        Grpc = "grpc",
        ConfigMap = "configmap",
        /// Deprecated alias of `configmap`.
        Internal = "internal",
    }
}

wire_enum! {
    /// `spec.grpcPodConfig.securityContextConfig`.
    pub enum SecurityConfig {
        Legacy = "legacy",
        Restricted = "restricted",
    }
}

wire_enum! {
    /// `status.reason`; `None` is `""`.
    #[derive(Default)]
    pub enum CatalogSourceReason {
        #[default]
        None = "",
        SpecInvalidError = "SpecInvalidError",
        ConfigMapError = "ConfigMapError",
        RegistryServerError = "RegistryServerError",
        InvalidIntervalError = "InvalidIntervalError",
    }
}

wire_enum! {
    /// gRPC connectivity state in `status.connectionState.lastObservedState`.
    pub enum GrpcConnectionState {
        Idle = "IDLE",
        Connecting = "CONNECTING",
        Ready = "READY",
        TransientFailure = "TRANSIENT_FAILURE",
        Shutdown = "SHUTDOWN",
    }
}

impl CatalogSourceReason {
    pub fn is_none(&self) -> bool {
        *self == CatalogSourceReason::None
    }
}

/// `spec` of a CatalogSource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "CatalogSource",
    plural = "catalogsources",
    singular = "catalogsource",
    namespaced,
    status = "CatalogSourceStatus",
    shortname = "catsrc",
    category = "olm",
    derive = "PartialEq",
    doc = "CatalogSource is a repository of CSVs, CRDs, and operator packages.",
    printcolumn = r#"{"name":"Display","type":"string","description":"The pretty name of the catalog","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Type","type":"string","description":"The type of the catalog","jsonPath":".spec.sourceType"}"#,
    printcolumn = r#"{"name":"Publisher","type":"string","description":"The publisher of the catalog","jsonPath":".spec.publisher"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceSpec {
    pub source_type: SourceType,
    /// Higher is preferred; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// `host:port` of a running registry (grpc only; ignored when `image` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_pod_config: Option<GrpcPodConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
}

/// `spec.grpcPodConfig`: scheduling and security of the registry pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcPodConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context_config: Option<SecurityConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_target: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_content: Option<ExtractContentConfig>,
}

/// `spec.grpcPodConfig.extractContent`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtractContentConfig {
    /// Optional in OLM's schema.
    #[serde(default)]
    pub cache_dir: String,
    pub catalog_dir: String,
}

/// `spec.updateStrategy`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_poll: Option<RegistryPoll>,
}

/// `spec.updateStrategy.registryPoll`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RegistryPoll {
    /// A Go duration string such as `10m`, `1h30m`, `45s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// The poll interval in effect and, when the configured one did not parse, OLM's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollInterval {
    pub interval: Duration,
    pub parse_error: Option<String>,
}

impl RegistryPoll {
    /// The interval, or 15m plus OLM's message when it does not parse (Go's `UnmarshalJSON`).
    pub fn poll_interval(&self) -> PollInterval {
        match parse_go_duration(self.interval.as_deref().unwrap_or_default()) {
            Ok(interval) => PollInterval {
                interval,
                parse_error: None,
            },
            Err(err) => PollInterval {
                interval: DEFAULT_REGISTRY_POLL,
                parse_error: Some(format!(
                    "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead. Error: {err}"
                )),
            },
        }
    }
}

/// `status` of a CatalogSource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "CatalogSourceReason::is_none")]
    pub reason: CatalogSourceReason,
    #[serde(
        rename = "configMapReference",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub config_map_reference: Option<ConfigMapResourceReference>,
    #[serde(
        rename = "registryService",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub registry_service: Option<RegistryServiceStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_state: Option<GrpcConnectionStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_image_registry_poll: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status.configMapReference`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapResourceReference {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// `status.registryService`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryServiceStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service_namespace: String,
    /// A string in OLM's API.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub port: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
}

impl RegistryServiceStatus {
    /// `<serviceName>.<serviceNamespace>.svc:<port>`.
    pub fn address(&self) -> String {
        format!(
            "{}.{}.svc:{}",
            self.service_name, self.service_namespace, self.port
        )
    }
}

/// `status.connectionState`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcConnectionStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub address: String,
    pub last_observed_state: GrpcConnectionState,
    #[serde(
        rename = "lastConnect",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_connect: Option<Time>,
}

impl CatalogSource {
    /// OLM's `Address()`: `spec.address` if set, else the registry service's address (None when
    /// neither is known; OLM would dereference nil here).
    pub fn address(&self) -> Option<String> {
        match self.spec.address.as_deref() {
            Some(address) if !address.is_empty() => Some(address.to_owned()),
            _ => self
                .status
                .as_ref()?
                .registry_service
                .as_ref()
                .map(RegistryServiceStatus::address),
        }
    }

    /// The registry poll settings, if any.
    pub fn registry_poll(&self) -> Option<&RegistryPoll> {
        self.spec.update_strategy.as_ref()?.registry_poll.as_ref()
    }

    /// OLM's `Poll()`: registryPoll set, image set and sourceType grpc.
    pub fn poll(&self) -> bool {
        self.registry_poll().is_some()
            && self.spec.image.as_deref().is_some_and(|i| !i.is_empty())
            && self.spec.source_type == SourceType::Grpc
    }

    /// OLM's `Update()`: [`poll`](Self::poll) and (latestImageRegistryPoll, else
    /// creationTimestamp) + interval < now. False when no reference time is known.
    pub fn update_due(&self, now: Timestamp) -> bool {
        let Some(poll) = self.registry_poll().filter(|_| self.poll()) else {
            return false;
        };
        let last = self
            .status
            .as_ref()
            .and_then(|s| s.latest_image_registry_poll.as_ref())
            .or(self.metadata.creation_timestamp.as_ref());
        let Some(last) = last else { return false };
        let Ok(interval) = SignedDuration::try_from(poll.poll_interval().interval) else {
            return false;
        };
        last.0.checked_add(interval).is_ok_and(|due| due < now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn catsrc(
        source_type: SourceType,
        address: Option<&str>,
        image: Option<&str>,
        interval: Option<&str>,
    ) -> CatalogSource {
        let mut c = CatalogSource::new(
            "cs",
            CatalogSourceSpec {
                source_type,
                priority: None,
                config_map: None,
                address: address.map(str::to_owned),
                image: image.map(str::to_owned),
                grpc_pod_config: None,
                update_strategy: interval.map(|i| UpdateStrategy {
                    registry_poll: Some(RegistryPoll {
                        interval: Some(i.to_owned()),
                    }),
                }),
                secrets: None,
                display_name: None,
                description: None,
                publisher: None,
                icon: None,
            },
        );
        c.metadata.creation_timestamp = Some(Time(Timestamp::from_second(1_000).expect("ts")));
        c
    }

    fn with_service(mut c: CatalogSource) -> CatalogSource {
        c.status = Some(CatalogSourceStatus {
            registry_service: Some(RegistryServiceStatus {
                protocol: "grpc".into(),
                service_name: "cs".into(),
                service_namespace: "olm".into(),
                port: "50051".into(),
                created_at: None,
            }),
            ..Default::default()
        });
        c
    }

    #[rstest]
    #[case::spec_address_wins(
        with_service(catsrc(SourceType::Grpc, Some("h:1"), None, None)),
        Some("h:1")
    )]
    #[case::service_address_when_spec_is_empty(
        with_service(catsrc(SourceType::Grpc, None, Some("img"), None)),
        Some("cs.olm.svc:50051")
    )]
    #[case::empty_spec_address_falls_back_to_service(
        with_service(catsrc(SourceType::Grpc, Some(""), None, None)),
        Some("cs.olm.svc:50051")
    )]
    #[case::nothing_known_yet(catsrc(SourceType::Grpc, None, Some("img"), None), None)]
    fn address_follows_olm(#[case] c: CatalogSource, #[case] expected: Option<&str>) {
        assert_eq!(c.address().as_deref(), expected);
    }

    #[rstest]
    #[case::ten_minutes("10m", 600, None)]
    #[case::hours_and_minutes("1h30m", 5400, None)]
    #[case::unparseable_falls_back_to_fifteen_minutes(
        "often",
        900,
        Some(
            "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead. Error: time: invalid duration \"often\""
        )
    )]
    #[case::missing_unit_falls_back_too(
        "15",
        900,
        Some(
            "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead. Error: time: missing unit in duration \"15\""
        )
    )]
    fn poll_interval_parses_go_durations(
        #[case] raw: &str,
        #[case] secs: u64,
        #[case] message: Option<&str>,
    ) {
        let got = RegistryPoll {
            interval: Some(raw.to_owned()),
        }
        .poll_interval();
        assert_eq!(
            got,
            PollInterval {
                interval: Duration::from_secs(secs),
                parse_error: message.map(str::to_owned)
            }
        );
    }

    #[rstest]
    #[case::grpc_image_with_poll_polls(
        catsrc(SourceType::Grpc, None, Some("img"), Some("10m")),
        true
    )]
    #[case::no_image_does_not_poll(catsrc(SourceType::Grpc, Some("h:1"), None, Some("10m")), false)]
    #[case::configmap_does_not_poll(
        catsrc(SourceType::ConfigMap, None, Some("img"), Some("10m")),
        false
    )]
    #[case::no_strategy_does_not_poll(catsrc(SourceType::Grpc, None, Some("img"), None), false)]
    fn poll_follows_olm(#[case] c: CatalogSource, #[case] polls: bool) {
        assert_eq!(c.poll(), polls);
    }

    #[rstest]
    #[case::before_the_interval_is_over(1_000 + 599, false)]
    #[case::exactly_at_the_interval(1_000 + 600, false)]
    #[case::after_the_interval(1_000 + 601, true)]
    fn update_is_due_after_creation_plus_interval(#[case] now: i64, #[case] due: bool) {
        let c = catsrc(SourceType::Grpc, None, Some("img"), Some("10m"));
        assert_eq!(c.update_due(Timestamp::from_second(now).expect("ts")), due);
    }

    #[test]
    fn update_is_never_due_for_a_catalog_that_does_not_poll() {
        let c = catsrc(SourceType::Grpc, Some("h:1"), None, Some("10m"));
        assert!(!c.update_due(Timestamp::from_second(1_000_000).expect("ts")));
    }

    #[test]
    fn update_counts_from_the_latest_poll_when_there_was_one() {
        let mut c = with_service(catsrc(SourceType::Grpc, None, Some("img"), Some("10m")));
        if let Some(status) = c.status.as_mut() {
            status.latest_image_registry_poll =
                Some(Time(Timestamp::from_second(5_000).expect("ts")));
        }
        assert!(!c.update_due(Timestamp::from_second(5_500).expect("ts")));
        assert!(c.update_due(Timestamp::from_second(5_601).expect("ts")));
    }
}
