//! The apply request (pure): its parameters (field manager [`MANAGER`], `force`), its body (the rendered object
//! less what only the server sets), and the one refusal that sends a write back to create/replace.

use super::MANAGER;
use kube::Resource;
use kube::api::{PatchParams, PostParams};

/// Server-side apply as [`MANAGER`], forcing: the fields we render are ours even when someone else changed
/// them since (the drift a reinstall repairs), as upstream controllers apply.
pub fn apply_params() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

/// Create and replace as [`MANAGER`] too, so the object's managed fields name us either way.
pub fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.into()),
        ..PostParams::default()
    }
}

/// The object to apply: as rendered, without the metadata only the server sets (an object built from a live
/// one carries them). A `resourceVersion` the caller set stays: the apply then fails with a conflict if the
/// object changed since that version (the APIService adopted on what was read).
pub fn body<K: Resource + Clone>(obj: &K) -> K {
    let mut body = obj.clone();
    let meta = body.meta_mut();
    meta.managed_fields = None;
    meta.uid = None;
    meta.creation_timestamp = None;
    meta.generation = None;
    meta.deletion_timestamp = None;
    meta.deletion_grace_period_seconds = None;
    body
}

/// Server-side apply refuses an object holding two items with one key in a keyed list (two env vars of one
/// name, two ports of one number and protocol), which create and update accept and OLM v0 installs: such an
/// object is written with create/replace instead.
pub fn refused_for_duplicates(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.message.contains("duplicate entries for key"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta, Time};
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn live() -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("op".into()),
                namespace: Some("ns".into()),
                labels: Some(BTreeMap::from([("olm.managed".into(), "true".into())])),
                resource_version: Some("42".into()),
                uid: Some("u".into()),
                generation: Some(3),
                creation_timestamp: Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                managed_fields: Some(vec![ManagedFieldsEntry::default()]),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        }
    }

    #[test]
    fn the_body_names_its_kind_and_drops_what_the_server_sets() {
        let body = serde_json::to_value(body(&live())).expect("serializable");
        assert_eq!(body["apiVersion"], "apps/v1");
        assert_eq!(body["kind"], "Deployment");
        let meta = body["metadata"].as_object().expect("metadata");
        let mut keys: Vec<&str> = meta.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["labels", "name", "namespace", "resourceVersion"]);
    }

    #[test]
    fn apply_forces_as_olm_operator() {
        let params = apply_params();
        assert_eq!(params.field_manager.as_deref(), Some("olm-operator"));
        assert!(params.force);
        assert_eq!(post_params().field_manager.as_deref(), Some("olm-operator"));
    }

    fn api(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: message.into(),
            ..Default::default()
        }))
    }

    #[rstest]
    #[case::duplicate_env_names(api(500, r#"failed to create typed patch object (ns/op; apps/v1, Kind=Deployment): .spec.template.spec.containers[name="c"].env: duplicate entries for key [name="BAR"]"#), true)]
    #[case::a_conflict(api(409, "the object has been modified"), false)]
    #[case::invalid(api(422, "Deployment.apps \"op\" is invalid"), false)]
    #[case::forbidden(api(403, "deployments.apps \"op\" is forbidden"), false)]
    fn only_duplicate_keys_fall_back_to_create_and_replace(
        #[case] error: kube::Error,
        #[case] falls_back: bool,
    ) {
        assert_eq!(refused_for_duplicates(&error), falls_back);
    }
}
