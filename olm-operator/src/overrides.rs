//! Subscription `spec.config` projected onto the install strategy's deployments (spec §2.6, OLM's
//! `overrides/*`), pure. The Subscription whose `status.installedCSV` names the CSV supplies it: env merged by
//! name (the Subscription wins, new variables appended), envFrom appended when absent, volumes and volumeMounts
//! replaced by name, tolerations appended when absent, resources replace every container's, nodeSelector
//! replaces, affinity's non-empty parts override, annotations are added to the deployment and its pod template
//! without overwriting existing keys. `config.selector` is unused (as in OLM).

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{Affinity, Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::subscription::SubscriptionConfig;
use std::collections::BTreeMap;

/// Apply `config` to a deployment's spec (before its spec hash is taken, so a config change is a drift).
pub fn apply_to_spec(spec: &mut DeploymentSpec, config: &SubscriptionConfig) {
    if let Some(annotations) = &config.annotations {
        let meta = spec
            .template
            .metadata
            .get_or_insert_with(ObjectMeta::default);
        add_annotations(&mut meta.annotations, annotations);
    }
    let Some(pod) = spec.template.spec.as_mut() else {
        return;
    };
    apply_to_pod(pod, config);
    for container in pod
        .containers
        .iter_mut()
        .chain(pod.init_containers.iter_mut().flatten())
    {
        apply_to_container(container, config);
    }
}

/// Add the config's annotations to a deployment's own metadata (never overwriting).
pub fn apply_to_metadata(meta: &mut ObjectMeta, config: &SubscriptionConfig) {
    if let Some(annotations) = &config.annotations {
        add_annotations(&mut meta.annotations, annotations);
    }
}

fn add_annotations(
    target: &mut Option<BTreeMap<String, String>>,
    extra: &BTreeMap<String, String>,
) {
    let target = target.get_or_insert_with(BTreeMap::new);
    for (k, v) in extra {
        target.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

fn apply_to_pod(pod: &mut PodSpec, config: &SubscriptionConfig) {
    if let Some(selector) = &config.node_selector {
        pod.node_selector = Some(selector.clone());
    }
    if let Some(tolerations) = &config.tolerations {
        let have = pod.tolerations.get_or_insert_with(Vec::new);
        for t in tolerations {
            if !have.contains(t) {
                have.push(t.clone());
            }
        }
    }
    if let Some(volumes) = &config.volumes {
        let have = pod.volumes.get_or_insert_with(Vec::new);
        for v in volumes {
            match have.iter_mut().find(|h| h.name == v.name) {
                Some(existing) => *existing = v.clone(),
                None => have.push(v.clone()),
            }
        }
    }
    if let Some(affinity) = &config.affinity {
        merge_affinity(pod.affinity.get_or_insert_with(Affinity::default), affinity);
    }
}

fn merge_affinity(have: &mut Affinity, want: &Affinity) {
    if want.node_affinity.is_some() {
        have.node_affinity = want.node_affinity.clone();
    }
    if want.pod_affinity.is_some() {
        have.pod_affinity = want.pod_affinity.clone();
    }
    if want.pod_anti_affinity.is_some() {
        have.pod_anti_affinity = want.pod_anti_affinity.clone();
    }
}

fn apply_to_container(container: &mut Container, config: &SubscriptionConfig) {
    if let Some(env) = &config.env {
        let have = container.env.get_or_insert_with(Vec::new);
        for e in env {
            match have.iter_mut().find(|h| h.name == e.name) {
                Some(existing) => *existing = e.clone(),
                None => have.push(e.clone()),
            }
        }
    }
    if let Some(env_from) = &config.env_from {
        let have = container.env_from.get_or_insert_with(Vec::new);
        for e in env_from {
            if !have.contains(e) {
                have.push(e.clone());
            }
        }
    }
    if let Some(mounts) = &config.volume_mounts {
        let have = container.volume_mounts.get_or_insert_with(Vec::new);
        for m in mounts {
            match have.iter_mut().find(|h| h.name == m.name) {
                Some(existing) => *existing = m.clone(),
                None => have.push(m.clone()),
            }
        }
    }
    if let Some(resources) = &config.resources {
        container.resources = Some(resources.clone());
    }
}

#[cfg(test)]
mod tests;
