//! The objects an InstallPlan's steps refer to, read before the steps are applied: olm-rs's references to bundle
//! images (`crate::bundle_ref`) and OLM v0's references to its unpacked-bundle ConfigMaps
//! ([`super::unpacked_configmap`], in plans OLM v0 left behind). The plan keeps its references; execution works on
//! a copy whose pending steps carry their objects, and only the steps' statuses go back into the plan.

use super::unpacked_configmap::{self, UnpackedRef};
use crate::bundle_image::credentials;
use crate::bundle_ref::{self, BundleObjectRef};
use crate::shared::Shared;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use messages::crd::install_plan::{Step, StepStatus};
use oci::UnpackedBundle;
use registry::api;
use resolver::CatalogKey;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How long reading one bundle image again may take (a pull by digest when the cache no longer holds it).
const PULL_TIMEOUT: Duration = Duration::from_secs(120);

/// `steps` with every pending step that refers to a bundle object carrying that object instead.
pub async fn materialize(
    shared: &Shared,
    namespace: &str,
    steps: &[Step],
) -> Result<Vec<Step>, String> {
    let mut out = steps.to_vec();
    let mut bundles: HashMap<String, Arc<UnpackedBundle>> = HashMap::new();
    for s in out.iter_mut() {
        if !matches!(s.status, StepStatus::Unknown | StepStatus::NotPresent) {
            continue;
        }
        if UnpackedRef::parse(&s.resource.manifest).is_some() {
            continue;
        }
        let Some(r) = BundleObjectRef::parse(&s.resource.manifest) else {
            continue;
        };
        let bundle = match bundles.get(&r.bundle_image) {
            Some(b) => b.clone(),
            None => {
                let catalog =
                    CatalogKey::new(&s.resource.source_name, &s.resource.source_namespace);
                let auth = credentials::for_catalog(shared, &catalog).await;
                let b = shared
                    .bundles
                    .get(&r.bundle_image, &auth, PULL_TIMEOUT)
                    .await
                    .map_err(|e| {
                        format!("cannot read the objects of bundle {}: {e}", s.resolving)
                    })?;
                bundles.insert(r.bundle_image.clone(), b.clone());
                b
            }
        };
        let obj = bundle_ref::resolve(
            &r,
            &s.resolving,
            &bundle.object_strings(),
            &bundle.files,
            &s.resource.kind,
            &s.resource.name,
            namespace,
        )?;
        s.resource.manifest = obj.to_string();
    }
    materialize_unpacked(shared, namespace, &mut out).await?;
    Ok(out)
}

/// The pending steps that refer to OLM v0's unpacked-bundle ConfigMaps, given their objects, one bundle at a time
/// (generated RBAC is matched among a bundle's steps).
async fn materialize_unpacked(
    shared: &Shared,
    namespace: &str,
    steps: &mut [Step],
) -> Result<(), String> {
    let mut by_bundle: Vec<(String, UnpackedRef, Vec<usize>)> = Vec::new();
    // Every step of a bundle, done or not: generated RBAC pairs up among all of them.
    for (i, s) in steps.iter().enumerate() {
        let Some(r) = UnpackedRef::parse(&s.resource.manifest) else {
            continue;
        };
        match by_bundle.iter_mut().find(|(b, _, _)| *b == s.resolving) {
            Some((_, _, indexes)) => indexes.push(i),
            None => by_bundle.push((s.resolving.clone(), r, vec![i])),
        }
    }
    for (resolving, r, indexes) in by_bundle {
        let bundle = unpacked_bundle(shared, &r, &resolving).await?;
        let these: Vec<&Step> = indexes.iter().filter_map(|i| steps.get(*i)).collect();
        let objects = unpacked_configmap::objects_for(&these, &r, &bundle, namespace)?;
        for (i, obj) in indexes.into_iter().zip(objects) {
            if let Some(s) = steps.get_mut(i)
                && matches!(s.status, StepStatus::Unknown | StepStatus::NotPresent)
            {
                s.resource.manifest = obj;
            }
        }
    }
    Ok(())
}

/// The bundle OLM v0 unpacked into the ConfigMap `r` names.
async fn unpacked_bundle(
    shared: &Shared,
    r: &UnpackedRef,
    resolving: &str,
) -> Result<api::Bundle, String> {
    let api: Api<ConfigMap> = Api::namespaced(shared.client.clone(), &r.namespace);
    let cm = api.get(&r.name).await.map_err(|e| {
        format!(
            "bundle {resolving}: cannot read OLM v0's unpacked bundle ConfigMap {}/{}: {}",
            r.namespace,
            r.name,
            crate::error::error_text(&e)
        )
    })?;
    unpacked_configmap::bundle(&cm, r, resolving)
}

/// The plan's own steps (references kept) with the statuses execution gave their copies.
pub fn keep_statuses(mut stored: Vec<Step>, executed: &[Step]) -> Vec<Step> {
    for (s, e) in stored.iter_mut().zip(executed) {
        s.status = e.status.clone();
    }
    stored
}

#[cfg(test)]
mod tests {
    use super::*;
    use messages::crd::install_plan::StepResource;

    fn step(manifest: &str, status: StepStatus) -> Step {
        Step {
            resolving: "a.v1".into(),
            resource: StepResource {
                manifest: manifest.into(),
                ..Default::default()
            },
            optional: false,
            status,
        }
    }

    #[test]
    fn statuses_go_back_and_references_stay() {
        let reference = r#"{"bundleImage":"r/b@sha256:1","file":"manifests/a.yaml","object":0}"#;
        let stored = vec![step(reference, StepStatus::Unknown)];
        let executed = vec![step(r#"{"kind":"ConfigMap"}"#, StepStatus::Created)];
        let kept = keep_statuses(stored, &executed);
        assert_eq!(kept[0].resource.manifest, reference);
        assert_eq!(kept[0].status, StepStatus::Created);
    }
}
