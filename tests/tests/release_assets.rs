//! The release's manifests and the Helm chart, without a cluster: `release/` renders deploy/ without its CRDs plus
//! PodDisruptionBudgets and NetworkPolicies, `release/crds` every CRD of deploy/crds, the chart (`helm lint`
//! clean) renders exactly the same objects with its default values, and each of its values changes what it says.
//! Also the OCI labels `hack/images/mkoci.py` writes. (The install itself: full_cluster_release.)

use anyhow::Context;
use olm_tests::release_fixture::{helm, kubectl, objects, repo_root, run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const CHART: &str = "deploy/chart/olm-rs";

fn kustomize(dir: &str, unrestricted: bool) -> anyhow::Result<BTreeMap<String, Value>> {
    let kubectl = kubectl()?;
    let mut args = vec!["kustomize", dir];
    if unrestricted {
        args.extend(["--load-restrictor", "LoadRestrictionsNone"]);
    }
    objects(&run(&kubectl, &args, &[])?)
}

fn helm_template(extra: &[&str]) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut args = vec!["template", "olm-rs", CHART, "--include-crds"];
    args.extend(extra);
    objects(&run(&helm()?, &args, &[])?)
}

fn kinds(objects: &BTreeMap<String, Value>, kind: &str) -> Vec<String> {
    objects
        .keys()
        .filter(|k| k.split(' ').next() == Some(kind))
        .cloned()
        .collect()
}

#[test]
fn release_overlay_is_deploy_without_crds_plus_budgets_and_policies() -> anyhow::Result<()> {
    let deploy = kustomize("deploy", false)?;
    let release = kustomize("release", false)?;
    let crds = kustomize("release/crds", true)?;
    let deploy_crds: BTreeMap<_, _> = deploy
        .iter()
        .filter(|(k, _)| k.starts_with("CustomResourceDefinition "))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(crds, deploy_crds, "crds.yaml is deploy/'s CRDs");
    // Every generated CRD file is in the release's list (a new CRD cannot be left out of crds.yaml).
    let files = std::fs::read_dir(repo_root().join("deploy/crds"))?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".crd.yaml"))
        .count();
    assert_eq!(
        crds.len(),
        files,
        "release/crds lists every deploy/crds file"
    );

    for (key, object) in &deploy {
        if key.starts_with("CustomResourceDefinition ") {
            assert!(
                !release.contains_key(key),
                "{key} is in crds.yaml, not olm-rs.yaml"
            );
        } else {
            assert_eq!(release.get(key), Some(object), "{key} as deploy/ has it");
        }
    }
    let added: Vec<&String> = release
        .keys()
        .filter(|k| !deploy.contains_key(*k))
        .collect();
    let expected = [
        "NetworkPolicy olm/catalog-operator",
        "NetworkPolicy olm/default-deny-all-traffic",
        "NetworkPolicy olm/olm-operator",
        "NetworkPolicy olm/olm-rs-catalog",
        "NetworkPolicy olm/package-server",
        "PodDisruptionBudget olm/catalog-operator",
        "PodDisruptionBudget olm/olm-operator",
        "PodDisruptionBudget olm/package-server",
    ];
    assert_eq!(
        added,
        expected.iter().collect::<Vec<_>>(),
        "what release/ adds"
    );
    Ok(())
}

#[test]
fn helm_lint_passes_and_the_chart_renders_what_kustomize_renders() -> anyhow::Result<()> {
    let lint = run(&helm()?, &["lint", CHART, "--strict"], &[])?;
    assert!(lint.contains("0 chart(s) failed"), "helm lint: {lint}");

    let mut kustomized = kustomize("release", false)?;
    kustomized.extend(kustomize("release/crds", true)?);
    let rendered = helm_template(&[])?;
    let only_kustomize: Vec<_> = kustomized
        .keys()
        .filter(|k| !rendered.contains_key(*k))
        .collect();
    let only_helm: Vec<_> = rendered
        .keys()
        .filter(|k| !kustomized.contains_key(*k))
        .collect();
    assert!(
        only_kustomize.is_empty() && only_helm.is_empty(),
        "same kinds and names: only in kustomize {only_kustomize:?}, only in helm {only_helm:?}"
    );
    for (key, object) in &kustomized {
        let helm_object = rendered.get(key).context("checked above")?;
        let difference = first_difference("", object, helm_object);
        assert_eq!(
            difference, None,
            "{key}: helm template differs from kustomize"
        );
    }
    Ok(())
}

/// The first place where `a` and `b` differ, as `path: a != b` (numbers compared as numbers: kustomize writes
/// the CRDs' `0.0` as `0`).
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .keys()
            .chain(y.keys().filter(|k| !x.contains_key(*k)))
            .find_map(|k| {
                first_difference(
                    &format!("{path}/{k}"),
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                )
            }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(&format!("{path}/{i}"), x, y)),
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ => (a != b).then(|| format!("{path}: {a} != {b}")),
    }
}

fn container_env<'a>(deployment: &'a Value, name: &str) -> Option<&'a str> {
    deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
}

#[test]
fn chart_values_change_what_they_say() -> anyhow::Result<()> {
    let rendered = helm_template(&[
        "--set=image.registry=registry.example.com/olm-rs",
        "--set=image.tag=1.2.3",
        "--set=logLevel=debug",
        "--set=olmOperator.replicas=3",
        "--set=catalogOperator.resources.limits.memory=1Gi",
        "--set=defaultCatalog.image=registry.example.com/catalog:1",
        "--set=insecureRegistries=registry.example.com:5000",
        "--set=podDisruptionBudgets.enabled=false",
    ])?;
    let olm = rendered
        .get("Deployment olm/olm-operator")
        .context("olm-operator")?;
    let catalog = rendered
        .get("Deployment olm/catalog-operator")
        .context("catalog-operator")?;
    let package = rendered
        .get("Deployment olm/package-server")
        .context("package-server")?;
    assert_eq!(olm["spec"]["replicas"], 3);
    assert_eq!(
        olm["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example.com/olm-rs/olm-operator:1.2.3"
    );
    assert_eq!(container_env(olm, "RUST_LOG"), Some("debug"));
    assert_eq!(
        catalog["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"],
        "1Gi"
    );
    for d in [catalog, package] {
        assert_eq!(
            container_env(d, "OLM_INSECURE_REGISTRIES"),
            Some("registry.example.com:5000")
        );
    }
    assert_eq!(
        container_env(olm, "OLM_INSECURE_REGISTRIES"),
        None,
        "olm-operator pulls nothing"
    );
    let source = rendered
        .get("CatalogSource olm/olm-rs-catalog")
        .context("default catalog")?;
    assert_eq!(source["spec"]["image"], "registry.example.com/catalog:1");
    assert!(source["spec"].get("address").is_none());
    for gone in [
        "Deployment olm/olm-rs-catalog",
        "Service olm/olm-rs-catalog",
        "NetworkPolicy olm/olm-rs-catalog",
    ] {
        assert!(
            !rendered.contains_key(gone),
            "{gone} left out with an image catalog"
        );
    }
    assert!(kinds(&rendered, "PodDisruptionBudget").is_empty());
    assert_eq!(kinds(&rendered, "NetworkPolicy").len(), 4);

    let none = helm_template(&[
        "--set=defaultCatalog.enabled=false",
        "--set=networkPolicies.enabled=false",
    ])?;
    assert!(
        kinds(&none, "CatalogSource").is_empty(),
        "no default catalog"
    );
    assert!(!none.contains_key("Deployment olm/olm-rs-catalog"));
    assert!(
        none.contains_key("OperatorGroup olm/olm-operators"),
        "the olm namespace's group stays"
    );
    assert!(kinds(&none, "NetworkPolicy").is_empty());
    Ok(())
}

/// mkoci.py's `--label`: in the image config's Labels and as manifest annotations.
#[test]
fn image_archives_carry_oci_labels() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("olm-rs-labels-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let archive = dir.join("x.oci.tar");
    let archive_arg = archive.display().to_string();
    run(
        Path::new("python3"),
        &[
            "hack/images/mkoci.py",
            "--name=localhost/olm-rs/x:1.2.3",
            &format!("--out={archive_arg}"),
            "--file=hack/images/pause.c:/pause.c",
            "--label=org.opencontainers.image.version=1.2.3",
            "--label=org.opencontainers.image.revision=abc",
            "--label=org.opencontainers.image.source=https://example.com/olm-rs",
        ],
        &[],
    )?;
    let image = oci::layout::read_layout(&archive)?;
    let manifest: Value = serde_json::from_slice(&image.manifest)?;
    let (_, config) = image.blobs.first().context("config blob")?;
    let config: Value = serde_json::from_slice(config)?;
    for (key, value) in [
        ("org.opencontainers.image.version", "1.2.3"),
        ("org.opencontainers.image.revision", "abc"),
        (
            "org.opencontainers.image.source",
            "https://example.com/olm-rs",
        ),
    ] {
        assert_eq!(config["config"]["Labels"][key], value, "label {key}");
        assert_eq!(manifest["annotations"][key], value, "annotation {key}");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
