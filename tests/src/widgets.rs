//! Namespaces and open CRDs (any field kept) the tests create: the `Widget` CRD the repo's `test-webhook` image
//! admits and converts, and the CRDs the OperatorGroup tests' CSVs own.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};

/// Create namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

/// The namespaced `widgets.<group>` CRD serving `versions` (the first one stored), each keeping any field.
pub fn widget_crd(group: &str, versions: &[&str]) -> CustomResourceDefinition {
    open_crd("widgets", group, "Widget", versions)
}

/// The namespaced CRD `<plural>.<group>` of `kind` serving `versions` (the first one stored), each keeping any
/// field.
pub fn open_crd(
    plural: &str,
    group: &str,
    kind: &str,
    versions: &[&str],
) -> CustomResourceDefinition {
    let schema = CustomResourceValidation {
        open_api_v3_schema: Some(JSONSchemaProps {
            type_: Some("object".into()),
            x_kubernetes_preserve_unknown_fields: Some(true),
            ..JSONSchemaProps::default()
        }),
    };
    CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(format!("{plural}.{group}")),
            ..ObjectMeta::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: group.to_string(),
            scope: "Namespaced".into(),
            names: CustomResourceDefinitionNames {
                plural: plural.into(),
                singular: Some(kind.to_lowercase()),
                kind: kind.into(),
                list_kind: Some(format!("{kind}List")),
                ..CustomResourceDefinitionNames::default()
            },
            versions: versions
                .iter()
                .enumerate()
                .map(|(i, name)| CustomResourceDefinitionVersion {
                    name: (*name).to_string(),
                    served: true,
                    storage: i == 0,
                    schema: Some(schema.clone()),
                    ..CustomResourceDefinitionVersion::default()
                })
                .collect(),
            ..CustomResourceDefinitionSpec::default()
        },
        status: None,
    }
}

/// Create [`widget_crd`]; its name.
pub async fn create_widget_crd(
    client: &Client,
    group: &str,
    versions: &[&str],
) -> anyhow::Result<String> {
    let crd = widget_crd(group, versions);
    let name = crd.metadata.name.clone().unwrap_or_default();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await?;
    Ok(name)
}

/// CRD `name` once it is Established (discovery serves it), waited for up to `deadline`.
pub async fn await_established(
    client: &Client,
    name: &str,
    deadline: std::time::Duration,
) -> anyhow::Result<CustomResourceDefinition> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crate::await_object(&crds, name, deadline, "Established", |c| {
        c.and_then(|c| c.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
    })
    .await
}
