//! Table output for `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): OLM's columns
//! Name, Catalog (the CatalogSource's display name) and Age, one row per manifest, each row carrying the object's
//! metadata (`includeObject=Metadata`, kubectl's default), the whole object (`Object`) or nothing (`None`).

use crate::types::PackageManifest;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: Option<&str>) -> IncludeObject {
        match s {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Table {
    pub kind: &'static str,
    pub api_version: String,
    pub metadata: ListMeta,
    pub column_definitions: Vec<Column>,
    pub rows: Vec<Row>,
}

#[derive(Serialize)]
pub struct Column {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i32,
}

#[derive(Serialize)]
pub struct Row {
    pub cells: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<RowObject>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum RowObject {
    Metadata(Box<PartialObjectMetadata>),
    Object(Box<PackageManifest>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialObjectMetadata {
    pub kind: &'static str,
    pub api_version: String,
    pub metadata: ObjectMeta,
}

fn columns() -> Vec<Column> {
    vec![
        Column {
            name: "Name",
            kind: "string",
            format: "name",
            description: "Name must be unique within a namespace.",
            priority: 0,
        },
        Column {
            name: "Catalog",
            kind: "string",
            format: "",
            description: "The source catalog for this package",
            priority: 0,
        },
        Column {
            name: "Age",
            kind: "string",
            format: "",
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
            priority: 0,
        },
    ]
}

/// `meta.k8s.io/<version>` Table of `items`; `now` in seconds since the epoch for the Age column.
pub fn table(
    items: Vec<PackageManifest>,
    resource_version: Option<String>,
    meta_version: &str,
    include: IncludeObject,
    now: i64,
    with_columns: bool,
) -> Table {
    let api_version = format!("meta.k8s.io/{meta_version}");
    let rows = items
        .into_iter()
        .map(|m| {
            let age = m
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| human_duration(now - t.0.as_second()))
                .unwrap_or_else(|| "<unknown>".into());
            let cells = vec![
                m.metadata.name.clone().unwrap_or_default(),
                m.status.catalog_source_display_name.clone(),
                age,
            ];
            let object = match include {
                IncludeObject::None => None,
                IncludeObject::Metadata => {
                    Some(RowObject::Metadata(Box::new(PartialObjectMetadata {
                        kind: "PartialObjectMetadata",
                        api_version: api_version.clone(),
                        metadata: m.metadata,
                    })))
                }
                IncludeObject::Object => Some(RowObject::Object(Box::new(m))),
            };
            Row { cells, object }
        })
        .collect();
    Table {
        kind: "Table",
        api_version,
        metadata: ListMeta {
            resource_version,
            ..Default::default()
        },
        column_definitions: if with_columns { columns() } else { Vec::new() },
        rows,
    }
}

/// Kubernetes' `duration.HumanDuration` (what `kubectl get` shows as AGE).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        return if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = m / 60;
    if h < 8 {
        return if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        };
    }
    if h < 48 {
        return format!("{h}h");
    }
    if h < 24 * 8 {
        let (d, rh) = (h / 24, h % 24);
        return if rh == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rh}h")
        };
    }
    if h < 24 * 365 * 2 {
        return format!("{}d", h / 24);
    }
    if h < 24 * 365 * 8 {
        let (y, d) = (h / 24 / 365, (h / 24) % 365);
        return if d == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{d}d")
        };
    }
    format!("{}y", h / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PackageManifestStatus;
    use rstest::rstest;

    #[rstest]
    #[case::seconds(5, "5s")]
    #[case::two_minutes(125, "2m5s")]
    #[case::whole_minutes(300, "5m")]
    #[case::an_hour(3600, "60m")]
    #[case::hours(5 * 3600 + 60, "5h1m")]
    #[case::a_day(30 * 3600, "30h")]
    #[case::days(3 * 86400 + 3600, "3d1h")]
    #[case::many_days(40 * 86400, "40d")]
    #[case::invalid(-5, "<invalid>")]
    fn ages_as_kubectl_prints_them(#[case] secs: i64, #[case] want: &str) {
        assert_eq!(human_duration(secs), want);
    }

    #[test]
    fn rows_carry_name_catalog_display_name_and_metadata() {
        let m = PackageManifest {
            metadata: ObjectMeta {
                name: Some("etcd".into()),
                ..Default::default()
            },
            status: PackageManifestStatus {
                catalog_source_display_name: "Community Operators".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let t = table(
            vec![m],
            Some("7".into()),
            "v1",
            IncludeObject::Metadata,
            0,
            true,
        );
        let json = serde_json::to_value(&t).expect("json");
        assert_eq!(
            json["rows"][0]["cells"],
            serde_json::json!(["etcd", "Community Operators", "<unknown>"])
        );
        assert_eq!(json["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(json["columnDefinitions"][1]["name"], "Catalog");
        assert_eq!(json["metadata"]["resourceVersion"], "7");
        assert_eq!(json["apiVersion"], "meta.k8s.io/v1");
    }
}
