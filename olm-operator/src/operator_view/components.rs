//! What an Operator's `status.components` says (OLM's `decorators.Operator.SetComponents`): the label selector
//! `operators.coreos.com/<name>` Exists, and one reference per labelled object, sorted by kind, apiVersion,
//! namespace and name, carrying the object's conditions. A CSV's conditions are its phase (`type` = phase,
//! `status` True, reason, message and times); any other object's are its `status.conditions` as they are.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use messages::crd::annotations::operator_component_label;
use messages::crd::operator::{
    Components, Operator, OperatorComponentCondition, OperatorStatus, RichReference,
};

/// One labelled object as the view sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub conditions: Vec<OperatorComponentCondition>,
}

/// The selector OLM writes: the component label exists.
pub fn selector(operator: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: operator_component_label(operator),
            operator: "Exists".into(),
            values: None,
        }]),
        match_labels: None,
    }
}

/// The status of the Operator `operator` whose labelled objects are `found`.
pub fn status(operator: &str, mut found: Vec<Component>) -> OperatorStatus {
    found.sort_by(|a, b| {
        (&a.kind, &a.api_version, &a.namespace, &a.name).cmp(&(
            &b.kind,
            &b.api_version,
            &b.namespace,
            &b.name,
        ))
    });
    found.dedup_by(|a, b| {
        (&a.kind, &a.api_version, &a.namespace, &a.name)
            == (&b.kind, &b.api_version, &b.namespace, &b.name)
    });
    OperatorStatus {
        components: Some(Components {
            label_selector: Some(selector(operator)),
            refs: found
                .into_iter()
                .map(|c| RichReference {
                    object: ObjectReference {
                        api_version: Some(c.api_version),
                        kind: Some(c.kind),
                        namespace: c.namespace,
                        name: Some(c.name),
                        ..Default::default()
                    },
                    conditions: c.conditions,
                })
                .collect(),
        }),
    }
}

/// What the view writes for one Operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// The Operator shows this status already (or has no components and does not exist).
    Nothing,
    /// Objects carry its label and it does not exist: create it, then write its status.
    Create,
    /// Its status differs: write it.
    Status,
}

/// Compare the Operator as stored with the status computed for it: only a difference is written.
pub fn write(existing: Option<&Operator>, status: &OperatorStatus) -> Write {
    match existing {
        None if status.components.as_ref().is_none_or(|c| c.refs.is_empty()) => Write::Nothing,
        None => Write::Create,
        Some(o) if o.status.as_ref() == Some(status) => Write::Nothing,
        Some(_) => Write::Status,
    }
}

/// A CSV's phase as the one condition OLM shows for it.
pub fn csv_conditions(
    status: Option<&messages::crd::csv::ClusterServiceVersionStatus>,
) -> Vec<OperatorComponentCondition> {
    let Some(s) = status else { return Vec::new() };
    let phase = s.phase.as_str().to_string();
    if phase.is_empty() {
        return Vec::new();
    }
    vec![OperatorComponentCondition {
        type_: phase,
        status: "True".into(),
        reason: s.reason.as_str().to_string(),
        message: s.message.clone(),
        last_update_time: s.last_update_time.clone(),
        last_transition_time: s.last_transition_time.clone(),
    }]
}

/// Conditions read leniently from an object's `status.conditions` (an entry that does not decode is left out).
pub fn generic_conditions(status: Option<&serde_json::Value>) -> Vec<OperatorComponentCondition> {
    status
        .and_then(|s| s.get("conditions"))
        .and_then(|c| c.as_array())
        .map(|list| {
            list.iter()
                .filter_map(|c| {
                    serde_json::from_value::<OperatorComponentCondition>(c.clone()).ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
