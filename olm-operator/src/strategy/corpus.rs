//! Corpus test: every `*.clusterserviceversion.yaml` of `../shared/catalogs` goes through the strategy
//! validation and rendering; a valid strategy renders deployments that carry OLM's labels, the spec hash on
//! both the deployment and the pod template, the CSV annotations and `OPERATOR_CONDITION_NAME`; an invalid one
//! is rejected with a reason (never a panic). Skipped (with a message) when the corpus is absent.

use super::*;
use std::path::PathBuf;

fn corpus_root() -> Option<PathBuf> {
    let root = match std::env::var_os("OLM_RS_SHARED") {
        Some(shared) => PathBuf::from(shared).join("catalogs"),
        None => PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
        )
        .join("../../shared/catalogs"),
    };
    root.is_dir().then_some(root)
}

fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: None,
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
    }
}

#[test]
fn every_corpus_csv_renders_or_is_rejected_with_a_reason() {
    let Some(root) = corpus_root() else {
        panic!(
            "the shared catalogs (../shared/catalogs beside the clone, or $OLM_RS_SHARED/catalogs) are this test's input and are missing"
        );
    };
    let (mut rendered, mut rejected, mut unreadable) =
        (0usize, BTreeMap::<String, usize>::new(), 0usize);
    for entry in walkdir::WalkDir::new(&root)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if !path
            .to_string_lossy()
            .ends_with(".clusterserviceversion.yaml")
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let value: Result<serde_json::Value, _> =
            serde_saphyr::from_str_with_options(&text, yaml_options());
        let Some(mut csv) = value
            .ok()
            .and_then(|v| serde_json::from_value::<ClusterServiceVersion>(v).ok())
        else {
            unreadable += 1;
            continue;
        };
        csv.metadata.namespace = Some("corpus".into());
        csv.metadata.uid = Some("uid-corpus".into());
        let name = csv.metadata.name.clone().unwrap_or_default();
        match render(&csv).expect("namespace, name and uid are set") {
            Err(e) => {
                *rejected
                    .entry(
                        e.to_string()
                            .split(':')
                            .next()
                            .unwrap_or_default()
                            .chars()
                            .take(40)
                            .collect(),
                    )
                    .or_default() += 1
            }
            Ok(r) => {
                rendered += 1;
                let details = validate(&csv).expect("rendered, so valid");
                assert_eq!(
                    r.deployments.len(),
                    details.deployments.len(),
                    "{}",
                    path.display()
                );
                for d in &r.deployments {
                    let labels = d.metadata.labels.clone().unwrap_or_default();
                    assert_eq!(labels.get("olm.owner"), Some(&name), "{}", path.display());
                    assert_eq!(labels.get("olm.managed").map(String::as_str), Some("true"));
                    let spec = d.spec.clone().expect("a spec");
                    let annotations = spec
                        .template
                        .metadata
                        .clone()
                        .and_then(|m| m.annotations)
                        .unwrap_or_default();
                    assert!(
                        labels.contains_key("olm.deployment-spec-hash")
                            && !annotations.contains_key("olm.deployment-spec-hash"),
                        "{}: the spec hash is a Deployment label, never a pod-template annotation",
                        path.display()
                    );
                    for key in projected_annotations(&csv).keys() {
                        assert!(
                            annotations.contains_key(key),
                            "{}: annotation {key} not projected",
                            path.display()
                        );
                    }
                    let containers = spec.template.spec.map(|p| p.containers).unwrap_or_default();
                    assert!(
                        containers.iter().all(|c| c
                            .env
                            .iter()
                            .flatten()
                            .any(|e| e.name == "OPERATOR_CONDITION_NAME")),
                        "{}",
                        path.display()
                    );
                    assert_eq!(
                        render(&csv).expect("persisted").expect("valid").deployments[0]
                            .metadata
                            .labels,
                        r.deployments[0].metadata.labels,
                        "rendering is deterministic"
                    );
                }
                for role in &r.roles {
                    assert!(
                        is_dns_subdomain(role.metadata.name.as_deref().unwrap_or_default()),
                        "{}",
                        path.display()
                    );
                }
            }
        }
    }
    eprintln!(
        "corpus: {rendered} CSVs rendered, {unreadable} unreadable, rejected by reason: {rejected:?}"
    );
    assert!(
        rendered > 100,
        "the corpus has hundreds of CSVs with a deployment strategy ({rendered} rendered)"
    );
}
