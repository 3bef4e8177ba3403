//! Taking over the fields earlier create/update writes of ours own (pure). Server-side apply removes a field it
//! applied before and no longer applies, but not a field an `Update` entry owns: a Deployment an olm-rs without
//! apply (user agent `olm-rs/…`) or OLM v0's olm-operator (`olm`) wrote, or one we created with a POST (a webhook
//! configuration's `generateName`), would keep, say, an env var the CSV dropped. After an apply, the fields of
//! those `Update` entries move into our `Apply` entry (client-go's `csaupgrade` does this for kubectl), so the
//! next apply removes what we no longer render. Those foreign managers wrote more than our objects' bodies (the
//! Operator view's component labels went through the same `olm-rs` manager), so only their fields outside
//! `metadata` are taken; an entry of our own manager is taken whole.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use serde_json::{Map, Value};

/// `Update` managers of earlier writers of the same objects: olm-rs before it applied, OLM v0's olm-operator.
pub const FOREIGN_LEGACY: &[&str] = &["olm-rs", "olm"];

const METADATA: &str = "f:metadata";

/// The managed fields to write back, and whether an apply must follow (fields were taken that the last apply
/// did not set, so only another apply removes them).
#[derive(Debug, PartialEq)]
pub struct TakeOver {
    pub entries: Vec<ManagedFieldsEntry>,
    pub reapply: bool,
}

/// What to write when `entries` (of an object `manager` just applied) hold `Update` entries to take over; `None`
/// when there is nothing to take.
pub fn take_over(entries: &[ManagedFieldsEntry], manager: &str) -> Option<TakeOver> {
    let main = |e: &ManagedFieldsEntry| e.subresource.as_deref().unwrap_or_default().is_empty();
    let is = |e: &ManagedFieldsEntry, op: &str| e.operation.as_deref() == Some(op) && main(e);
    let ours = entries
        .iter()
        .position(|e| e.manager.as_deref() == Some(manager) && is(e, "Apply"))?;
    let applied = fields(&entries[ours]);
    let mut owned = applied.clone();
    let mut out = Vec::with_capacity(entries.len());
    let mut taken_any = false;
    for (i, entry) in entries.iter().enumerate() {
        let legacy =
            i != ours && is(entry, "Update") && entry.api_version == entries[ours].api_version;
        let split = match entry.manager.as_deref() {
            Some(m) if legacy && m == manager => Some((fields(entry), Map::new())),
            Some(m) if legacy && FOREIGN_LEGACY.contains(&m) => {
                Some(outside_metadata(fields(entry)))
            }
            _ => None,
        };
        match split {
            Some((taken, kept)) if !taken.is_empty() => {
                taken_any = true;
                owned = union(&owned, &taken);
                if !kept.is_empty() {
                    out.push((i, with_fields(entry, kept)));
                }
            }
            _ => out.push((i, entry.clone())),
        }
    }
    if !taken_any {
        return None;
    }
    let reapply = owned != applied;
    let entries = out
        .into_iter()
        .map(|(i, e)| {
            if i == ours {
                with_fields(&e, owned.clone())
            } else {
                e
            }
        })
        .collect();
    Some(TakeOver { entries, reapply })
}

fn fields(entry: &ManagedFieldsEntry) -> Map<String, Value> {
    match entry.fields_v1.as_ref().map(|f| &f.0) {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    }
}

fn with_fields(entry: &ManagedFieldsEntry, fields: Map<String, Value>) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        fields_v1: Some(FieldsV1(Value::Object(fields))),
        ..entry.clone()
    }
}

/// (everything but `f:metadata`, `f:metadata` alone).
fn outside_metadata(mut all: Map<String, Value>) -> (Map<String, Value>, Map<String, Value>) {
    let mut kept = Map::new();
    if let Some(meta) = all.remove(METADATA) {
        kept.insert(METADATA.to_string(), meta);
    }
    (all, kept)
}

/// The union of two field sets (tries of `f:`/`k:`/`v:`/`i:` keys, `{}` at the leaves, `.` for a node itself).
pub fn union(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut out = a.clone();
    for (key, theirs) in b {
        let merged = match (out.get(key), theirs) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => {
                Value::Object(union(mine, theirs))
            }
            (Some(mine), _) => mine.clone(),
            (None, theirs) => theirs.clone(),
        };
        out.insert(key.clone(), merged);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            api_version: Some("apps/v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            ..Default::default()
        }
    }

    fn ours(fields: Value) -> ManagedFieldsEntry {
        entry("olm-operator", "Apply", fields)
    }

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn env(names: &[&str]) -> Value {
        let entries: Map<String, Value> = names
            .iter()
            .map(|n| {
                (
                    format!(r#"k:{{"name":"{n}"}}"#),
                    json!({".": {}, "f:name": {}, "f:value": {}}),
                )
            })
            .collect();
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {r#"k:{"name":"c"}"#: {"f:env": entries}}}}}})
    }

    #[rstest]
    #[case::nothing_but_our_apply(vec![ours(env(&["BAR"]))], None)]
    #[case::another_managers_update_is_theirs(
        vec![ours(env(&["BAR"])), entry("kubectl-edit", "Update", env(&["FOO"]))],
        None
    )]
    #[case::a_status_update_is_not_taken(
        vec![ours(env(&["BAR"])), ManagedFieldsEntry { subresource: Some("status".into()), ..entry("olm-rs", "Update", json!({"f:status": {}})) }],
        None
    )]
    #[case::an_update_of_another_api_version_is_left(
        vec![ours(env(&["BAR"])), ManagedFieldsEntry { api_version: Some("apps/v1beta1".into()), ..entry("olm-rs", "Update", env(&["FOO"])) }],
        None
    )]
    #[case::a_legacy_update_of_metadata_only_has_nothing_to_take(
        vec![ours(env(&["BAR"])), entry("olm-rs", "Update", json!({"f:metadata": {"f:labels": {"f:operators.coreos.com/op.ns": {}}}}))],
        None
    )]
    #[case::an_older_olm_rs_spec_is_taken_and_reapplied(
        vec![ours(env(&["BAR"])), entry("olm-rs", "Update", env(&["BAR", "FOO"]))],
        Some(TakeOver { entries: vec![ours(env(&["BAR", "FOO"]))], reapply: true })
    )]
    #[case::olm_v0_keeps_its_metadata(
        vec![
            ours(env(&["BAR"])),
            entry("olm", "Update", json!({"f:metadata": {"f:labels": {"f:team": {}}}, "f:spec": {"f:replicas": {}}})),
        ],
        Some(TakeOver {
            entries: vec![
                ours(union(&map(env(&["BAR"])), &map(json!({"f:spec": {"f:replicas": {}}}))).into()),
                entry("olm", "Update", json!({"f:metadata": {"f:labels": {"f:team": {}}}})),
            ],
            reapply: true,
        })
    )]
    #[case::our_own_create_is_taken_whole(
        vec![
            entry("olm-operator", "Update", json!({"f:metadata": {"f:annotations": {"f:a": {}}}, "f:webhooks": {}})),
            ours(json!({"f:webhooks": {}})),
        ],
        Some(TakeOver {
            entries: vec![ours(json!({"f:metadata": {"f:annotations": {"f:a": {}}}, "f:webhooks": {}}))],
            reapply: true,
        })
    )]
    #[case::a_legacy_update_within_what_we_apply_needs_no_second_apply(
        vec![ours(env(&["BAR", "FOO"])), entry("olm-rs", "Update", env(&["FOO"])), entry("kube-controller-manager", "Update", json!({"f:status": {}}))],
        Some(TakeOver {
            entries: vec![ours(env(&["BAR", "FOO"])), entry("kube-controller-manager", "Update", json!({"f:status": {}}))],
            reapply: false,
        })
    )]
    #[case::no_apply_of_ours_takes_nothing(vec![entry("olm-rs", "Update", env(&["FOO"]))], None)]
    fn legacy_update_entries_are_taken_over(
        #[case] entries: Vec<ManagedFieldsEntry>,
        #[case] expected: Option<TakeOver>,
    ) {
        assert_eq!(take_over(&entries, "olm-operator"), expected);
    }

    #[rstest]
    #[case::disjoint(json!({"f:a": {}}), json!({"f:b": {}}), json!({"f:a": {}, "f:b": {}}))]
    #[case::nested(
        json!({"f:spec": {"f:x": {}, ".": {}}}),
        json!({"f:spec": {"f:y": {"f:z": {}}}}),
        json!({"f:spec": {".": {}, "f:x": {}, "f:y": {"f:z": {}}}})
    )]
    #[case::list_items_by_key(
        env(&["BAR"]),
        env(&["FOO"]),
        env(&["BAR", "FOO"])
    )]
    #[case::idempotent(env(&["BAR"]), env(&["BAR"]), env(&["BAR"]))]
    fn field_sets_are_united(#[case] a: Value, #[case] b: Value, #[case] expected: Value) {
        assert_eq!(Value::Object(union(&map(a), &map(b))), expected);
    }
}
