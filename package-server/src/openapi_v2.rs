//! The Swagger 2.0 document of the group (`GET /openapi/v2`), which the aggregator merges into the cluster's
//! `/openapi/v2`: the operations of `openapi_paths` and the definitions of `schema`.

use crate::openapi_paths::{self, Location};
use crate::schema::{self, Dialect};
use crate::types::{GroupVersionKind, KIND};
use schemars::Schema;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct Swagger {
    pub swagger: &'static str,
    pub info: Info,
    pub paths: BTreeMap<String, PathItem>,
    pub definitions: BTreeMap<String, Schema>,
}

#[derive(Serialize)]
pub struct Info {
    pub title: &'static str,
    pub version: &'static str,
}

#[derive(Serialize)]
pub struct PathItem {
    pub get: Operation,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    pub description: &'static str,
    pub consumes: Vec<&'static str>,
    pub produces: Vec<&'static str>,
    pub schemes: Vec<&'static str>,
    pub tags: Vec<&'static str>,
    pub operation_id: String,
    pub responses: BTreeMap<&'static str, Response>,
    #[serde(rename = "x-kubernetes-action")]
    pub action: &'static str,
    #[serde(rename = "x-kubernetes-group-version-kind")]
    pub group_version_kind: GroupVersionKind,
}

#[derive(Serialize)]
pub struct Response {
    pub description: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Reference>,
}

#[derive(Serialize)]
pub struct Reference {
    #[serde(rename = "$ref")]
    pub reference: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Parameter {
    pub name: &'static str,
    #[serde(rename = "in")]
    pub location: &'static str,
    pub description: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub unique_items: bool,
}

pub fn document() -> Swagger {
    let paths = openapi_paths::operations()
        .into_iter()
        .map(|op| {
            let responses = BTreeMap::from([
                (
                    "200",
                    Response {
                        description: "OK",
                        schema: Some(Reference {
                            reference: Dialect::V2.reference(&op.response_model),
                        }),
                    },
                ),
                (
                    "401",
                    Response {
                        description: "Unauthorized",
                        schema: None,
                    },
                ),
            ]);
            let item = PathItem {
                get: Operation {
                    description: op.description,
                    consumes: vec!["*/*"],
                    produces: op.produces.to_vec(),
                    schemes: vec!["https"],
                    tags: vec![openapi_paths::TAG],
                    operation_id: op.operation_id,
                    responses,
                    action: op.action.as_str(),
                    group_version_kind: schema::gvk(KIND),
                },
                parameters: op
                    .parameters
                    .iter()
                    .map(|p| Parameter {
                        name: p.name,
                        location: p.location.as_str(),
                        description: p.description,
                        required: p.location == Location::Path,
                        kind: p.kind.as_str(),
                        unique_items: true,
                    })
                    .collect(),
            };
            (op.path, item)
        })
        .collect();
    Swagger {
        swagger: "2.0",
        info: Info {
            title: "Package API",
            version: "v1",
        },
        paths,
        definitions: schema::definitions(Dialect::V2),
    }
}
