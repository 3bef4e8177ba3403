//! Schema helpers for fields whose shape Kubernetes must not check (free-form JSON).
//!
//! A structural (apiextensions v1) schema needs a `type` on every node, except nodes marked
//! `x-kubernetes-preserve-unknown-fields: true`. These functions are used with
//! `#[schemars(schema_with = "...")]`.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Any JSON value (object, array, string, number, bool), kept as is by the apiserver.
pub fn any_json(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// An optional JSON object whose fields are kept as is by the apiserver.
pub fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
