//! The CatalogSource status write: a typed merge patch that sets every status field the actor owns and
//! clears (JSON `null`) the ones it has no value for; `conditions` are left to whoever writes them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::catalog_source::{
    CatalogSourceReason, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionStatus,
    RegistryServiceStatus,
};
use serde::Serialize;

/// `{"status": {...}}`: every field is written, `None` as `null` (a merge patch removes it).
#[derive(Serialize, Debug, PartialEq)]
pub struct StatusPatch<'a> {
    status: Fields<'a>,
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Fields<'a> {
    message: Option<&'a str>,
    reason: Option<&'a CatalogSourceReason>,
    config_map_reference: Option<&'a ConfigMapResourceReference>,
    registry_service: Option<&'a RegistryServiceStatus>,
    connection_state: Option<&'a GrpcConnectionStatus>,
    latest_image_registry_poll: Option<&'a Time>,
}

pub fn of(s: &CatalogSourceStatus) -> StatusPatch<'_> {
    StatusPatch {
        status: Fields {
            message: Some(s.message.as_str()).filter(|m| !m.is_empty()),
            reason: Some(&s.reason).filter(|r| !r.is_none()),
            config_map_reference: s.config_map_reference.as_ref(),
            registry_service: s.registry_service.as_ref(),
            connection_state: s.connection_state.as_ref(),
            latest_image_registry_poll: s.latest_image_registry_poll.as_ref(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_fields_are_cleared_and_set_ones_written() {
        let status = CatalogSourceStatus {
            reason: CatalogSourceReason::RegistryServerError,
            message: "down".into(),
            ..CatalogSourceStatus::default()
        };
        assert_eq!(
            serde_json::to_value(of(&status)).expect("serialisable"),
            json!({"status": {
                "message": "down",
                "reason": "RegistryServerError",
                "configMapReference": null,
                "registryService": null,
                "connectionState": null,
                "latestImageRegistryPoll": null,
            }})
        );
    }

    #[test]
    fn a_healthy_status_clears_reason_and_message() {
        let v = serde_json::to_value(of(&CatalogSourceStatus::default())).expect("serialisable");
        assert_eq!(v["status"]["reason"], serde_json::Value::Null);
        assert_eq!(v["status"]["message"], serde_json::Value::Null);
    }
}
