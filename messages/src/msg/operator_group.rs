//! Messages to the OperatorGroup actor. CSV actors never read-modify-write the group's `olm.providedAPIs`
//! annotation themselves: they ask the group's one actor to add or remove APIs, and that actor alone applies
//! unions and differences, one message at a time, so concurrent CSVs cannot lose an update (spec §3.4).

use crate::key::ObjectKey;
use actix::Message;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How a CSV wants the group's `olm.providedAPIs` changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApiChange {
    /// Union the APIs into the annotation (OLM's `AddAPIs`).
    Add,
    /// Remove the APIs from the annotation (OLM's `RemoveAPIs`).
    Remove,
}

/// Request/reply: change the group's provided APIs on behalf of the CSV `csv`. Replies with the annotation's
/// set after the change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeProvidedApis {
    pub csv: ObjectKey,
    pub change: ApiChange,
    /// `Kind.version.group` strings.
    pub apis: BTreeSet<String>,
}

/// Why the group actor could not apply a [`ChangeProvidedApis`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ProvidedApisError {
    /// `spec.staticProvidedAPIs` is true: the annotation belongs to the user.
    #[error("operator group {0} has static provided APIs")]
    Static(ObjectKey),
    /// The group is not known (yet, or any more).
    #[error("operator group {0} is not observed")]
    NotObserved(ObjectKey),
    /// The group's current version does not decode: nothing is written on it until one does.
    #[error("operator group {0} does not decode; its provided APIs wait until it does")]
    Undecodable(ObjectKey),
    /// Writing the annotation failed; the CSV retries on its next reconcile.
    #[error("writing olm.providedAPIs of {group}: {message}")]
    Write { group: ObjectKey, message: String },
}

impl Message for ChangeProvidedApis {
    type Result = Result<BTreeSet<String>, ProvidedApisError>;
}

/// Fire-and-forget traffic to an OperatorGroup actor. Every variant runs the same level-triggered sync; the
/// variant feeds spans only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OperatorGroupMsg {
    /// A namespace appeared, changed its labels or went away.
    NamespaceChanged(String),
    /// A CSV in the group's namespace (or a copy of one) changed or went away.
    MemberChanged(ObjectKey),
    /// The cluster's OLMConfig changed (e.g. `disableCopiedCSVs`).
    OlmConfigChanged,
}

impl Message for OperatorGroupMsg {
    type Result = ();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::an_add_request(ChangeProvidedApis { csv: ObjectKey::new("ns", "a.v1"), change: ApiChange::Add, apis: BTreeSet::from(["Goose.v1alpha1.birds.com".to_string()]) })]
    #[case::a_remove_request(ChangeProvidedApis { csv: ObjectKey::new("ns", "a.v1"), change: ApiChange::Remove, apis: BTreeSet::new() })]
    fn change_requests_round_trip_through_message_pack(#[case] msg: ChangeProvidedApis) {
        let bytes = rmp_serde::to_vec_named(&msg).expect("encode");
        let back: ChangeProvidedApis = rmp_serde::from_slice(&bytes).expect("decode");
        assert_eq!(back, msg);
    }

    #[test]
    fn group_messages_round_trip_through_message_pack() {
        for msg in [
            OperatorGroupMsg::NamespaceChanged("a".into()),
            OperatorGroupMsg::MemberChanged(ObjectKey::new("ns", "x")),
            OperatorGroupMsg::OlmConfigChanged,
        ] {
            let bytes = rmp_serde::to_vec_named(&msg).expect("encode");
            assert_eq!(
                rmp_serde::from_slice::<OperatorGroupMsg>(&bytes).expect("decode"),
                msg
            );
        }
    }
}
