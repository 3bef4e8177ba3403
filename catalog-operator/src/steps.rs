//! InstallPlan steps from a resolved bundle (OLM `resolver/steps.go`, spec §4.3): the CSV (namespace set,
//! `spec.replaces` rewritten, properties annotated), every other bundle object (Secrets become
//! `BundleSecret`), then the RBAC of its install strategy ([`crate::rbac`]). Pure.

use crate::bundle_content::{self, Source};
use crate::bundle_ref::{self, BundleObjectRef};
use messages::crd::install_plan::{Step, StepResource, StepStatus};
use messages::crd::subscription::{Approval, Subscription, SubscriptionSpec};
use registry::api;
use resolver::{BundleStep, NewSubscription};
use serde_json::Value;
use std::collections::BTreeMap;

/// Annotation on Subscriptions an InstallPlan creates.
pub const GENERATED_BY: &str = "olm.generated-by";

pub const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error(
        "bundle {bundle} has no ClusterServiceVersion manifest (an image bundle that must be unpacked is not supported)"
    )]
    NoCsv { bundle: String },
    #[error("bundle {bundle}: the CSV manifest lacks apiVersion or kind")]
    CsvTypeMissing { bundle: String },
    #[error("{0}")]
    Refused(Box<crate::bundle_content::Refusal>),
}

/// (group, version) of an `apiVersion`.
pub fn group_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    }
}

fn step(
    resolving: &str,
    catalog: &resolver::CatalogKey,
    obj: &Value,
    kind_override: Option<&str>,
) -> Step {
    referring(resolving, catalog, obj, kind_override, None)
}

/// A step for `obj`; its manifest is `reference`'s when given (an object of a bundle image), else `obj` itself.
fn referring(
    resolving: &str,
    catalog: &resolver::CatalogKey,
    obj: &Value,
    kind_override: Option<&str>,
    reference: Option<&BundleObjectRef>,
) -> Step {
    let (group, version) = group_version(obj["apiVersion"].as_str().unwrap_or_default());
    let kind = kind_override
        .map(str::to_string)
        .unwrap_or_else(|| obj["kind"].as_str().unwrap_or_default().to_string());
    Step {
        resolving: resolving.to_string(),
        resource: StepResource {
            source_name: catalog.name.clone(),
            source_namespace: catalog.namespace.clone(),
            group,
            version,
            kind,
            name: obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            manifest: reference.map_or_else(|| obj.to_string(), BundleObjectRef::to_manifest),
        },
        optional: false,
        status: StepStatus::Unknown,
    }
}

/// The position of the bundle's CSV among its objects (for naming its file).
fn csv_index(b: &api::Bundle) -> Option<usize> {
    b.object.iter().position(|o| {
        serde_json::from_str::<Value>(o).is_ok_and(|v| v["kind"] == "ClusterServiceVersion")
    })
}

/// The CSV as we will create it.
pub fn csv_manifest(
    b: &api::Bundle,
    chosen: &BundleStep,
    source: &Source,
    namespace: &str,
    trace: &BTreeMap<String, String>,
) -> Result<Value, StepError> {
    let text = if !b.csv_json.is_empty() {
        b.csv_json.clone()
    } else {
        let found = b.object.iter().find(|o| {
            serde_json::from_str::<Value>(o)
                .map(|v| v["kind"] == "ClusterServiceVersion")
                .unwrap_or(false)
        });
        found.cloned().ok_or_else(|| StepError::NoCsv {
            bundle: chosen.name.clone(),
        })?
    };
    let mut csv = bundle_content::read(&chosen.name, source, csv_index(b), &text)
        .map_err(StepError::Refused)?;
    if csv["apiVersion"].as_str().unwrap_or_default().is_empty()
        || csv["kind"].as_str().unwrap_or_default().is_empty()
    {
        return Err(StepError::CsvTypeMissing {
            bundle: chosen.name.clone(),
        });
    }
    if !csv.is_object() {
        return Err(StepError::CsvTypeMissing {
            bundle: chosen.name.clone(),
        });
    }
    bundle_ref::adjust_csv(
        &mut csv,
        namespace,
        chosen.replaces.as_deref(),
        &csv_annotations(b, trace),
    );
    Ok(csv)
}

/// The annotations the plan adds to the CSV: its bundle's properties and the trace context.
fn csv_annotations(b: &api::Bundle, trace: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = trace.clone();
    out.insert(
        PROPERTIES_ANNOTATION.into(),
        crate::properties::document(&crate::properties::of_bundle(b)),
    );
    out
}

/// Every step for one chosen bundle, CSV first.
pub fn bundle_steps(
    b: &api::Bundle,
    chosen: &BundleStep,
    source: &Source,
    namespace: &str,
    trace: &BTreeMap<String, String>,
) -> Result<Vec<Step>, StepError> {
    let csv = csv_manifest(b, chosen, source, namespace, trace)?;
    // An image bundle's objects stay in the image: each step refers to its object ([`bundle_ref`]).
    let image = source
        .image
        .as_deref()
        .zip(source.digest.as_deref())
        .map(|(image, digest)| bundle_ref::pinned_image(image, digest));
    let reference = |i: usize, csv: bool| {
        image.as_ref().map(|image| BundleObjectRef {
            bundle_image: image.clone(),
            file: source.files.get(i).cloned().unwrap_or_default(),
            object: i,
            replaces: if csv { chosen.replaces.clone() } else { None },
            annotations: csv.then(|| csv_annotations(b, trace)),
        })
    };
    let csv_ref = csv_index(b).and_then(|i| reference(i, true));
    let mut out = vec![referring(
        &chosen.name,
        &chosen.catalog,
        &csv,
        None,
        csv_ref.as_ref(),
    )];
    for (i, text) in b.object.iter().enumerate() {
        let obj = bundle_content::read(&chosen.name, source, Some(i), text)
            .map_err(StepError::Refused)?;
        let kind = match obj["kind"].as_str() {
            Some("ClusterServiceVersion") | None => continue,
            Some("Secret") => Some("BundleSecret"),
            Some(_) => None,
        };
        out.push(referring(
            &chosen.name,
            &chosen.catalog,
            &obj,
            kind,
            reference(i, false).as_ref(),
        ));
    }
    for obj in crate::rbac::objects(&csv, namespace) {
        out.push(step(&chosen.name, &chosen.catalog, &obj, None));
    }
    Ok(out)
}

/// The Subscription step for a newly resolved dependency (approval Automatic, startingCSV the bundle).
pub fn subscription_step(sub: &NewSubscription, namespace: &str) -> Step {
    let mut typed = Subscription::new(
        &sub.name,
        SubscriptionSpec {
            package: sub.package.clone(),
            channel: Some(sub.channel.clone()),
            catalog_source: sub.source.clone(),
            catalog_source_namespace: sub.source_namespace.clone(),
            starting_csv: Some(sub.starting_csv.clone()),
            install_plan_approval: Some(Approval::Automatic),
            ..SubscriptionSpec::default()
        },
    );
    typed.metadata.namespace = Some(namespace.to_string());
    let obj = serde_json::to_value(&typed).unwrap_or_default();
    step(
        &sub.starting_csv,
        &resolver::CatalogKey::new(&sub.source, &sub.source_namespace),
        &obj,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use resolver::CatalogKey;
    use serde_json::json;

    fn chosen(replaces: Option<&str>) -> BundleStep {
        BundleStep {
            name: "a.v2".into(),
            package: "a".into(),
            channel: "stable".into(),
            version: "2.0.0".into(),
            catalog: CatalogKey::new("cat", "olm"),
            bundle_path: String::new(),
            replaces: replaces.map(str::to_string),
            subscription: "a".into(),
        }
    }

    fn bundle() -> api::Bundle {
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "a.v2", "namespace": "placeholder"},
            "spec": {"replaces": "a.v0", "install": {"strategy": "deployment", "spec": {"deployments": [],
                "permissions": [{"serviceAccountName": "a-sa", "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}]}}}});
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.example.com"}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        api::Bundle {
            csv_name: "a.v2".into(),
            csv_json: csv.to_string(),
            object: vec![csv.to_string(), crd.to_string(), secret.to_string()],
            properties: vec![api::Property {
                r#type: "olm.package".into(),
                value: r#"{"packageName":"a","version":"2.0.0"}"#.into(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_bundle_yields_the_csv_then_its_objects_then_its_rbac() {
        let steps = bundle_steps(
            &bundle(),
            &chosen(Some("a.v1")),
            &Source::default(),
            "ns",
            &BTreeMap::new(),
        )
        .expect("steps");
        let kinds: Vec<&str> = steps.iter().map(|s| s.resource.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "ClusterServiceVersion",
                "CustomResourceDefinition",
                "BundleSecret",
                "ServiceAccount",
                "Role",
                "RoleBinding"
            ]
        );
        assert!(steps.iter().all(|s| s.resolving == "a.v2"
            && s.resource.source_name == "cat"
            && s.status == StepStatus::Unknown));
        assert_eq!(steps[1].resource.group, "apiextensions.k8s.io");
    }

    #[test]
    fn the_csv_is_placed_in_the_namespace_and_replaces_what_the_resolver_says() {
        let trace = BTreeMap::from([(
            "tracing.olm.operatorframework.io/traceparent".to_string(),
            "00-abc-def-01".to_string(),
        )]);
        let csv = csv_manifest(
            &bundle(),
            &chosen(Some("a.v1")),
            &Source::default(),
            "ns",
            &trace,
        )
        .expect("csv");
        assert_eq!(csv["metadata"]["namespace"], "ns");
        assert_eq!(csv["spec"]["replaces"], "a.v1");
        assert_eq!(
            csv["metadata"]["annotations"]["tracing.olm.operatorframework.io/traceparent"],
            "00-abc-def-01"
        );
        let props: Value = serde_json::from_str(
            csv["metadata"]["annotations"][PROPERTIES_ANNOTATION]
                .as_str()
                .expect("annotation"),
        )
        .expect("json");
        assert_eq!(props["properties"][0]["type"], "olm.package");
    }

    #[test]
    fn a_fresh_install_replaces_nothing() {
        let csv = csv_manifest(
            &bundle(),
            &chosen(None),
            &Source::default(),
            "ns",
            &BTreeMap::new(),
        )
        .expect("csv");
        assert!(csv["spec"].get("replaces").is_none());
    }

    fn fresh_csv(b: &api::Bundle) -> Result<Value, StepError> {
        csv_manifest(b, &chosen(None), &Source::default(), "ns", &BTreeMap::new())
    }

    #[test]
    fn a_csv_without_a_kind_is_a_fatal_error() {
        let mut b = bundle();
        b.csv_json = json!({"metadata": {"name": "a.v2"}}).to_string();
        assert_eq!(
            fresh_csv(&b),
            Err(StepError::CsvTypeMissing {
                bundle: "a.v2".into()
            })
        );
    }

    #[test]
    fn an_image_bundle_without_manifests_is_reported() {
        let b = api::Bundle {
            csv_name: "a.v2".into(),
            bundle_path: "quay.io/a:2".into(),
            ..Default::default()
        };
        assert_eq!(
            fresh_csv(&b),
            Err(StepError::NoCsv {
                bundle: "a.v2".into()
            })
        );
    }

    #[test]
    fn a_dependency_subscription_is_automatic_and_starts_at_the_bundle() {
        let s = subscription_step(
            &NewSubscription {
                name: "b-stable-cat-olm".into(),
                package: "b".into(),
                channel: "stable".into(),
                source: "cat".into(),
                source_namespace: "olm".into(),
                starting_csv: "b.v1".into(),
            },
            "ns",
        );
        let obj: Value = serde_json::from_str(&s.resource.manifest).expect("json");
        assert_eq!(
            (
                s.resource.kind.as_str(),
                obj["spec"]["installPlanApproval"].as_str(),
                obj["spec"]["startingCSV"].as_str()
            ),
            ("Subscription", Some("Automatic"), Some("b.v1"))
        );
    }
}
