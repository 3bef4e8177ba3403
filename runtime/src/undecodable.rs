//! Watched objects whose stored JSON does not decode as their kind ([`crate::lenient`]): what the watch knows of
//! one ([`Skipped`]: its metadata, the error, whether it was a deletion) and the Warning Event that names it and
//! the error on the object itself (`kubectl describe` and `kubectl get events` show it), published when a
//! version that does not decode is seen. The registry does the rest: a deletion is routed as a deletion, a change
//! holds the object's actor ([`crate::reconcile::hold`]) until a version that decodes arrives.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// The Event reason of an object that does not decode.
pub const REASON: &str = "UndecodableObject";

/// Event notes are limited to 1 kB.
const NOTE_CHARS: usize = 1000;

/// An object of a watch that did not decode.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub meta: ObjectMeta,
    /// The decoding error (serde's, naming the field and the line and column of the stored JSON).
    pub error: String,
    /// The version that did not decode was the object's deletion.
    pub deleted: bool,
}

/// The Warning Event saying that the object's current version does not decode, and why.
pub fn event(error: &str) -> Event {
    let note = format!(
        "the stored object does not decode, so it is not reconciled until a version that does is written: {error}"
    );
    Event {
        type_: EventType::Warning,
        reason: REASON.to_string(),
        note: Some(note.chars().take(NOTE_CHARS).collect()),
        action: "Decode".to_string(),
        secondary: None,
    }
}

/// The reference of an object of kind `K` known by its metadata alone.
pub fn reference<K: Resource<DynamicType = ()>>(meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// Publishes [`event`]s as one controller.
#[derive(Clone)]
pub struct Announcer {
    recorder: Recorder,
}

impl Announcer {
    /// Events written by `controller` (e.g. `olm-operator`), from the pod named by `POD_NAME` when set.
    pub fn new(client: kube::Client, controller: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Write the Event of `skipped` (an object of kind `K`) in the background; deletions have none (the object
    /// is gone).
    pub fn announce<K: Resource<DynamicType = ()>>(&self, skipped: &Skipped) {
        if skipped.deleted {
            return;
        }
        let reference = reference::<K>(&skipped.meta);
        let event = event(&skipped.error);
        let recorder = self.recorder.clone();
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &reference).await {
                tracing::warn!(reason = REASON, object = ?reference.name, error = &error as &dyn std::error::Error, "cannot write Event");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn the_event_is_a_warning_that_names_the_error() {
        let e = event("invalid type: string \"x\", expected a map at line 1 column 40");
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(e.reason, REASON);
        let note = e.note.expect("a note");
        assert!(
            note.contains("expected a map at line 1 column 40"),
            "{note}"
        );
        assert!(note.contains("not reconciled"), "{note}");
    }

    #[test]
    fn a_long_error_is_cut_to_the_note_limit() {
        let e = event(&"x".repeat(5000));
        assert_eq!(e.note.map(|n| n.chars().count()), Some(NOTE_CHARS));
    }

    #[test]
    fn the_reference_names_the_object_by_its_metadata() {
        let meta = ObjectMeta {
            name: Some("bad".into()),
            namespace: Some("ns".into()),
            uid: Some("u-1".into()),
            ..ObjectMeta::default()
        };
        let r = reference::<ConfigMap>(&meta);
        assert_eq!(
            (r.api_version.as_deref(), r.kind.as_deref()),
            (Some("v1"), Some("ConfigMap"))
        );
        assert_eq!(
            (r.namespace.as_deref(), r.name.as_deref(), r.uid.as_deref()),
            (Some("ns"), Some("bad"), Some("u-1"))
        );
    }
}
