//! Are the installed deployments what the strategy wants, and ready? Pure (OLM `CheckInstalled` and the
//! deployment status viewer): per strategy deployment, in order — missing, annotations projected from the
//! CSV, the `olm.deployment-spec-hash` label (another OLM's hash on a spec that holds ours is adopted, see
//! [`super::adopt`]), container drift (image/command/args changed behind our back),
//! then rollout readiness. The first problem found is the answer.

use super::facts::InstallStatus;
use k8s_openapi::api::apps::v1::Deployment;
use messages::crd::annotations;

/// Compare the rendered deployments with the live ones (`live(name)` reads the cluster's copy).
pub fn check<'a>(
    expected: &[Deployment],
    live: impl Fn(&str) -> Option<&'a Deployment>,
) -> InstallStatus {
    for want in expected {
        let name = want.metadata.name.as_deref().unwrap_or_default();
        let Some(have) = live(name) else {
            return InstallStatus::Missing(format!("deployment {name} not found"));
        };
        if let Some(problem) = drift(name, want, have) {
            return InstallStatus::Drifted(problem);
        }
        match readiness(name, have) {
            Readiness::Ready => {}
            Readiness::Waiting(why) => return InstallStatus::Waiting(why),
            Readiness::Failed(why) => return InstallStatus::Unrecoverable(why),
        }
    }
    InstallStatus::Healthy
}

fn drift(name: &str, want: &Deployment, have: &Deployment) -> Option<String> {
    let template_annotations = |d: &Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.clone())
            .unwrap_or_default()
    };
    let (want_ann, have_ann) = (template_annotations(want), template_annotations(have));
    for (key, value) in &want_ann {
        match have_ann.get(key) {
            None => {
                return Some(format!(
                    "annotations on deployment {name} do not contain expected key: {key}"
                ));
            }
            Some(found) if found != value => {
                return Some(format!(
                    "unexpected annotation on deployment {name}. Expected {key}:{value}, found {key}:{found}"
                ));
            }
            Some(_) => {}
        }
    }
    let hash_of = |d: &Deployment| {
        d.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(annotations::DEPLOYMENT_SPEC_HASH).cloned())
    };
    match (hash_of(want), hash_of(have)) {
        (_, None) => {
            return Some(format!(
                "deployment {name} doesn't have a spec hash, update it"
            ));
        }
        // A hash another OLM wrote (a takeover from OLM v0) on a spec that already holds ours is adopted.
        (Some(w), Some(h))
            if w != h
                && (super::adopt::is_our_hash(&h) || !super::adopt::spec_holds(want, have)) =>
        {
            return Some(format!(
                "deployment {name} changed old hash={h}, new hash={w}"
            ));
        }
        _ => {}
    }
    let containers = |d: &Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|p| p.containers.clone())
            .unwrap_or_default()
    };
    let have_containers = containers(have);
    for c in containers(want) {
        let Some(h) = have_containers.iter().find(|h| h.name == c.name) else {
            return Some(format!("deployment {name} lost container {}", c.name));
        };
        let differs = h.image != c.image
            || (c.command.is_some() && h.command != c.command)
            || (c.args.is_some() && h.args != c.args);
        if differs {
            return Some(format!(
                "container {} of deployment {name} was changed outside the CSV",
                c.name
            ));
        }
    }
    let replicas = |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas);
    if let Some(r) = replicas(want)
        && replicas(have) != Some(r)
    {
        return Some(format!(
            "deployment {name} replicas were changed outside the CSV"
        ));
    }
    None
}

enum Readiness {
    Ready,
    Waiting(String),
    Failed(String),
}

/// kubectl's rollout status viewer, as OLM uses it.
fn readiness(name: &str, d: &Deployment) -> Readiness {
    let waiting = |why: String| {
        Readiness::Waiting(format!(
            "waiting for deployment {name} to become ready: {why}"
        ))
    };
    let generation = d.metadata.generation.unwrap_or(0);
    let Some(status) = d.status.as_ref() else {
        return waiting("Waiting for deployment spec update to be observed...".into());
    };
    if status.observed_generation.unwrap_or(0) < generation {
        return waiting("Waiting for deployment spec update to be observed...".into());
    }
    let conditions = status.conditions.as_deref().unwrap_or_default();
    if conditions.iter().any(|c| {
        c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    }) {
        return Readiness::Failed(format!("deployment {name} exceeded its progress deadline"));
    }
    let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    if updated < wanted {
        return waiting(format!(
            "Waiting for rollout to finish: {updated} out of {wanted} new replicas have been updated..."
        ));
    }
    if total > updated {
        return waiting(format!(
            "Waiting for rollout to finish: {} old replicas are pending termination...",
            total - updated
        ));
    }
    if available < updated {
        return waiting(format!(
            "Waiting for rollout to finish: {available} of {updated} updated replicas are available..."
        ));
    }
    let available_true = conditions
        .iter()
        .any(|c| c.type_ == "Available" && c.status == "True");
    if !available_true {
        return waiting(format!("deployment {name} has no Available=True condition"));
    }
    Readiness::Ready
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec, DeploymentStatus};
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn rendered() -> Deployment {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                annotations: Some(BTreeMap::from([(
                    "olm.targetNamespaces".into(),
                    "ns".into(),
                )])),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "op".into(),
                    image: Some("op:1".into()),
                    ..Default::default()
                }],
                service_account_name: Some("op-sa".into()),
                ..Default::default()
            }),
        };
        Deployment {
            metadata: ObjectMeta {
                name: Some("op".into()),
                labels: Some(BTreeMap::from([(
                    annotations::DEPLOYMENT_SPEC_HASH.into(),
                    "h1".into(),
                )])),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                template,
                ..Default::default()
            }),
            status: None,
        }
    }

    fn ready(mut d: Deployment) -> Deployment {
        d.metadata.generation = Some(2);
        d.status = Some(DeploymentStatus {
            observed_generation: Some(2),
            replicas: Some(1),
            updated_replicas: Some(1),
            available_replicas: Some(1),
            conditions: Some(vec![DeploymentCondition {
                type_: "Available".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        d
    }

    fn kind(s: &InstallStatus) -> &'static str {
        match s {
            InstallStatus::Healthy => "healthy",
            InstallStatus::Missing(_) => "missing",
            InstallStatus::Waiting(_) => "waiting",
            InstallStatus::Drifted(_) => "drifted",
            InstallStatus::Unrecoverable(_) => "unrecoverable",
        }
    }

    #[rstest]
    #[case::a_ready_unchanged_deployment_is_healthy(|d: Deployment| Some(ready(d)), "healthy")]
    #[case::a_deleted_deployment_is_missing(|_d: Deployment| None, "missing")]
    #[case::an_unobserved_generation_is_waiting(|d: Deployment| { let mut d = ready(d); d.metadata.generation = Some(3); Some(d) }, "waiting")]
    #[case::unavailable_replicas_are_waiting(|d: Deployment| { let mut d = ready(d); if let Some(s) = d.status.as_mut() { s.available_replicas = Some(0); } Some(d) }, "waiting")]
    #[case::a_removed_pod_annotation_is_drift(|d: Deployment| { let mut d = ready(d); if let Some(m) = d.spec.as_mut().and_then(|s| s.template.metadata.as_mut()) { m.annotations = None; } Some(d) }, "drifted")]
    #[case::a_different_spec_hash_of_ours_is_drift(|d: Deployment| { let mut d = ready(d); d.metadata.labels = Some(BTreeMap::from([(annotations::DEPLOYMENT_SPEC_HASH.into(), "00000000000000ff".into())])); Some(d) }, "drifted")]
    #[case::olm_v0s_hash_on_an_unchanged_spec_is_adopted(|d: Deployment| { let mut d = ready(d); d.metadata.labels = Some(BTreeMap::from([(annotations::DEPLOYMENT_SPEC_HASH.into(), "7b5f7d4b9c".into())])); Some(d) }, "healthy")]
    #[case::olm_v0s_hash_on_a_changed_spec_is_drift(|d: Deployment| { let mut d = ready(d); d.metadata.labels = Some(BTreeMap::from([(annotations::DEPLOYMENT_SPEC_HASH.into(), "7b5f7d4b9c".into())])); if let Some(p) = d.spec.as_mut().and_then(|s| s.template.spec.as_mut()) { p.service_account_name = Some("old-sa".into()); } Some(d) }, "drifted")]
    #[case::a_missing_spec_hash_is_drift(|d: Deployment| { let mut d = ready(d); d.metadata.labels = None; Some(d) }, "drifted")]
    #[case::an_image_changed_behind_our_back_is_drift(|d: Deployment| { let mut d = ready(d); if let Some(p) = d.spec.as_mut().and_then(|s| s.template.spec.as_mut()) { p.containers[0].image = Some("evil:2".into()); } Some(d) }, "drifted")]
    #[case::scaled_replicas_are_drift(|d: Deployment| { let mut d = ready(d); if let Some(s) = d.spec.as_mut() { s.replicas = Some(3); } Some(d) }, "drifted")]
    #[case::an_exceeded_progress_deadline_is_unrecoverable(|d: Deployment| { let mut d = ready(d); if let Some(s) = d.status.as_mut() { s.conditions = Some(vec![DeploymentCondition { type_: "Progressing".into(), status: "False".into(), reason: Some("ProgressDeadlineExceeded".into()), ..Default::default() }]); } Some(d) }, "unrecoverable")]
    fn the_live_deployment_is_compared_with_the_strategy(
        #[case] live: fn(Deployment) -> Option<Deployment>,
        #[case] expected: &str,
    ) {
        let want = rendered();
        let have = live(want.clone());
        let status = check(std::slice::from_ref(&want), |_| have.as_ref());
        assert_eq!(kind(&status), expected, "{status:?}");
    }

    #[test]
    fn defaulted_fields_the_apiserver_adds_are_not_drift() {
        let want = rendered();
        let mut have = ready(want.clone());
        if let Some(p) = have.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
            p.restart_policy = Some("Always".into());
            p.containers[0].termination_message_path = Some("/dev/termination-log".into());
        }
        assert_eq!(check(&[want], |_| Some(&have)), InstallStatus::Healthy);
    }
}
