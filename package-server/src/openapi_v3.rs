//! The OpenAPI 3.0 document of `packages.operators.coreos.com/v1` (`GET /openapi/v3/apis/<group>/<version>`),
//! which the aggregator proxies as is and `kubectl explain` reads, and the `/openapi/v3` index naming it with
//! its hash. Rendered from the same operations (`openapi_paths`) and schemas (`schema`) as the v2 document.

use crate::openapi_paths::{self, Location};
use crate::schema::{self, Dialect};
use crate::types::{GROUP, GroupVersionKind, KIND, VERSION};
use schemars::Schema;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct OpenApi {
    pub openapi: &'static str,
    pub info: Info,
    pub paths: BTreeMap<String, PathItem>,
    pub components: Components,
}

#[derive(Serialize)]
pub struct Info {
    pub title: &'static str,
    pub version: &'static str,
}

#[derive(Serialize)]
pub struct Components {
    pub schemas: BTreeMap<String, Schema>,
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
    pub tags: Vec<&'static str>,
    pub description: &'static str,
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
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub content: BTreeMap<&'static str, MediaType>,
}

#[derive(Serialize)]
pub struct MediaType {
    pub schema: Reference,
}

#[derive(Serialize)]
pub struct Reference {
    #[serde(rename = "$ref")]
    pub reference: String,
}

#[derive(Serialize)]
pub struct Parameter {
    pub name: &'static str,
    #[serde(rename = "in")]
    pub location: &'static str,
    pub description: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    pub schema: ParameterSchema,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterSchema {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub unique_items: bool,
}

/// The index entry's key: the group-version's path without the leading slash.
pub fn group_version_path() -> String {
    format!("apis/{GROUP}/{VERSION}")
}

/// Where the document with this hash is, as kube-openapi writes it.
pub fn server_relative_url(hash: &str) -> String {
    format!("/openapi/v3/{}?hash={hash}", group_version_path())
}

/// `GET /openapi/v3`.
#[derive(Serialize)]
pub struct Index {
    pub paths: BTreeMap<String, IndexEntry>,
}

#[derive(Serialize)]
pub struct IndexEntry {
    #[serde(rename = "serverRelativeURL")]
    pub server_relative_url: String,
}

pub fn index(hash: &str) -> Index {
    Index {
        paths: BTreeMap::from([(
            group_version_path(),
            IndexEntry {
                server_relative_url: server_relative_url(hash),
            },
        )]),
    }
}

pub fn document() -> OpenApi {
    let paths = openapi_paths::operations()
        .into_iter()
        .map(|op| {
            let content = op
                .produces
                .iter()
                .map(|media| {
                    (
                        *media,
                        MediaType {
                            schema: Reference {
                                reference: Dialect::V3.reference(&op.response_model),
                            },
                        },
                    )
                })
                .collect();
            let responses = BTreeMap::from([
                (
                    "200",
                    Response {
                        description: "OK",
                        content,
                    },
                ),
                (
                    "401",
                    Response {
                        description: "Unauthorized",
                        content: BTreeMap::new(),
                    },
                ),
            ]);
            let item = PathItem {
                get: Operation {
                    tags: vec![openapi_paths::TAG],
                    description: op.description,
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
                        schema: ParameterSchema {
                            kind: p.kind.as_str(),
                            unique_items: true,
                        },
                    })
                    .collect(),
            };
            (op.path, item)
        })
        .collect();
    OpenApi {
        openapi: "3.0.0",
        info: Info {
            title: "Package API",
            version: "v1",
        },
        paths,
        components: Components {
            schemas: schema::definitions(Dialect::V3),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi_v2;
    use crate::types::{
        ApiServiceDescription, ApiServiceDescriptions, AppLink, ChannelEntry, CrdDescription,
        CrdDescriptions, CsvDescription, Deprecation, Icon, InstallMode, Maintainer,
        PackageChannel, PackageManifest, PackageManifestList, PackageManifestStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use serde_json::Value;

    fn json<T: Serialize>(v: &T) -> Value {
        serde_json::to_value(v).expect("json")
    }

    /// What a property is, whatever the dialect: a scalar type, a reference by model name, a list or map of.
    fn shape(schema: &Value) -> String {
        let reference = schema["$ref"]
            .as_str()
            .or_else(|| schema["allOf"][0]["$ref"].as_str());
        if let Some(r) = reference {
            return format!("ref {}", r.rsplit('/').next().unwrap_or(r));
        }
        match schema["type"].as_str() {
            Some("array") => format!("array of {}", shape(&schema["items"])),
            Some("object") if schema.get("additionalProperties").is_some() => {
                format!("map of {}", shape(&schema["additionalProperties"]))
            }
            Some(t) => t.to_string(),
            None => "any".to_string(),
        }
    }

    /// Every (definition, property) with its shape, and every definition's required list.
    fn fields(definitions: &Value) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for (name, def) in definitions.as_object().expect("definitions") {
            for (prop, schema) in def["properties"].as_object().into_iter().flatten() {
                out.push((name.clone(), prop.clone(), shape(schema)));
            }
            out.push((
                name.clone(),
                "<required>".into(),
                def["required"].to_string(),
            ));
            out.push((
                name.clone(),
                "<gvk>".into(),
                def["x-kubernetes-group-version-kind"].to_string(),
            ));
        }
        out
    }

    #[test]
    fn v2_and_v3_describe_the_same_fields() {
        let v2 = json(&openapi_v2::document());
        let v3 = json(&document());
        let (v2_fields, v3_fields) = (
            fields(&v2["definitions"]),
            fields(&v3["components"]["schemas"]),
        );
        assert!(
            v3_fields.len() > 100,
            "the schemas are there: {}",
            v3_fields.len()
        );
        assert_eq!(v2_fields, v3_fields);
    }

    #[test]
    fn v2_and_v3_describe_the_same_operations() {
        let ops = |doc: &Value| -> Vec<(String, Value, Value, Value, Vec<Value>)> {
            doc["paths"]
                .as_object()
                .expect("paths")
                .iter()
                .map(|(path, item)| {
                    let get = &item["get"];
                    let params = item["parameters"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|p| json(&(&p["name"], &p["in"], &p["required"])))
                        .collect();
                    (
                        path.clone(),
                        get["operationId"].clone(),
                        get["x-kubernetes-action"].clone(),
                        get["x-kubernetes-group-version-kind"].clone(),
                        params,
                    )
                })
                .collect()
        };
        let v2 = json(&openapi_v2::document());
        let v3 = json(&document());
        assert_eq!(ops(&v2), ops(&v3));
        assert_eq!(ops(&v3).len(), 6);
    }

    /// Walk `value` along `schema` (resolving references in `schemas`): every field served must be described.
    fn described(value: &Value, schema: &Value, schemas: &Value, at: &str) {
        let reference = schema["$ref"]
            .as_str()
            .or_else(|| schema["allOf"][0]["$ref"].as_str());
        if let Some(r) = reference {
            let name = r.rsplit('/').next().unwrap_or(r);
            assert!(schemas.get(name).is_some(), "{at}: dangling {r}");
            return described(value, &schemas[name], schemas, at);
        }
        match value {
            Value::Object(map) => {
                if let Some(values) = schema.get("additionalProperties") {
                    for (k, v) in map {
                        described(v, values, schemas, &format!("{at}.{k}"));
                    }
                    return;
                }
                for (k, v) in map {
                    let at = format!("{at}.{k}");
                    let property = &schema["properties"][k];
                    assert!(!property.is_null(), "{at} is served but not described");
                    described(v, property, schemas, &at);
                }
            }
            Value::Array(items) => {
                assert_eq!(schema["type"], "array", "{at}");
                for (i, v) in items.iter().enumerate() {
                    described(v, &schema["items"], schemas, &format!("{at}[{i}]"));
                }
            }
            Value::String(_) => assert_eq!(schema["type"], "string", "{at}"),
            Value::Bool(_) => assert_eq!(schema["type"], "boolean", "{at}"),
            Value::Number(_) => assert_eq!(schema["type"], "integer", "{at}"),
            Value::Null => panic!("{at}: null is never served"),
        }
    }

    fn everything_set() -> PackageManifest {
        let link = AppLink {
            name: "Example".into(),
            url: "https://example.com".into(),
        };
        let deprecation = Some(Deprecation {
            message: "use another".into(),
        });
        let crd = CrdDescription {
            name: "etcdclusters.etcd.database.coreos.com".into(),
            version: "v1beta2".into(),
            kind: "EtcdCluster".into(),
            display_name: "etcd Cluster".into(),
            description: "A cluster".into(),
        };
        let api = ApiServiceDescription {
            name: "v1.example.com".into(),
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Thing".into(),
            display_name: "Thing".into(),
            description: "A thing".into(),
        };
        PackageManifest {
            api_version: "packages.operators.coreos.com/v1".into(),
            kind: "PackageManifest".into(),
            metadata: ObjectMeta {
                name: Some("etcd".into()),
                namespace: Some("team".into()),
                labels: Some([("catalog".to_string(), "community".to_string())].into()),
                creation_timestamp: Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            spec: Default::default(),
            status: PackageManifestStatus {
                catalog_source: "community".into(),
                catalog_source_display_name: "Community".into(),
                catalog_source_publisher: "Red Hat".into(),
                catalog_source_namespace: "olm".into(),
                provider: link.clone(),
                package_name: "etcd".into(),
                deprecation: deprecation.clone(),
                channels: vec![PackageChannel {
                    name: "stable".into(),
                    current_csv: "etcd.v1".into(),
                    current_csv_desc: CsvDescription {
                        display_name: "etcd".into(),
                        icon: vec![Icon {
                            base64_data: "PHN2Zy8+".into(),
                            media_type: "image/svg+xml".into(),
                        }],
                        version: "1.0.0".into(),
                        provider: link.clone(),
                        annotations: [("a".to_string(), "b".to_string())].into(),
                        keywords: vec!["kv".into()],
                        links: vec![link.clone()],
                        maintainers: vec![Maintainer {
                            name: "me".into(),
                            email: "me@example.com".into(),
                        }],
                        maturity: "stable".into(),
                        description: "etcd".into(),
                        install_modes: vec![InstallMode {
                            mode: "AllNamespaces".into(),
                            supported: true,
                        }],
                        customresourcedefinitions: CrdDescriptions {
                            owned: vec![crd.clone()],
                            required: vec![crd],
                        },
                        apiservicedefinitions: ApiServiceDescriptions {
                            owned: vec![api.clone()],
                            required: vec![api],
                        },
                        native_apis: vec![crate::schema::gvk("Pod")],
                        min_kube_version: "1.30.0".into(),
                        related_images: vec!["quay.io/etcd:v1".into()],
                    },
                    deprecation: deprecation.clone(),
                    entries: vec![ChannelEntry {
                        name: "etcd.v1".into(),
                        version: "1.0.0".into(),
                        deprecation,
                    }],
                }],
                default_channel: "stable".into(),
            },
        }
    }

    #[test]
    fn every_field_a_served_manifest_can_carry_is_described() {
        let doc = json(&document());
        let schemas = &doc["components"]["schemas"];
        let manifest = everything_set();
        described(
            &json(&manifest),
            &schemas[crate::schema::manifest_model()],
            schemas,
            "manifest",
        );
        let list = PackageManifestList {
            api_version: "packages.operators.coreos.com/v1".into(),
            kind: "PackageManifestList".into(),
            metadata: Default::default(),
            items: vec![manifest],
        };
        described(
            &json(&list),
            &schemas[crate::schema::list_model()],
            schemas,
            "list",
        );
    }

    #[test]
    fn the_walk_notices_a_field_the_schema_lacks() {
        let doc = json(&document());
        let schemas = &doc["components"]["schemas"];
        let mut served = json(&everything_set());
        served["status"]["channels"][0]["unheardOf"] = Value::from("x");
        let walked = std::panic::catch_unwind(|| {
            described(
                &served,
                &schemas[crate::schema::manifest_model()],
                schemas,
                "manifest",
            )
        });
        assert!(walked.is_err());
    }

    #[test]
    fn kubectl_explain_finds_the_kind_through_the_list_path() {
        // kubectl explain takes the GVK from the `get` of `/apis/<g>/<v>/namespaces/{namespace}/<resource>`,
        // then the schema whose x-kubernetes-group-version-kind contains exactly that GVK.
        let doc = json(&document());
        let path = "/apis/packages.operators.coreos.com/v1/namespaces/{namespace}/packagemanifests";
        let gvk = &doc["paths"][path]["get"]["x-kubernetes-group-version-kind"];
        let holders: Vec<&String> = doc["components"]["schemas"]
            .as_object()
            .expect("schemas")
            .iter()
            .filter(|(_, s)| {
                s["x-kubernetes-group-version-kind"]
                    .as_array()
                    .is_some_and(|l| l.contains(gvk))
            })
            .map(|(name, _)| name)
            .collect();
        assert_eq!(holders, [&crate::schema::manifest_model()]);
        let status =
            &doc["components"]["schemas"][crate::schema::manifest_model()]["properties"]["status"];
        assert!(
            status["allOf"][0]["$ref"]
                .as_str()
                .is_some_and(|r| r.ends_with("PackageManifestStatus"))
        );
    }
}
