//! OLM v0's unpacked-bundle references: which manifests are references, the ConfigMap read both ways opm writes
//! it (plain `data`, and gzip+base64 `binaryData`), and each step's object found as OLM's resolver finds it.

use super::*;
use flate2::Compression;
use flate2::write::GzEncoder;
use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::install_plan::{StepResource, StepStatus};
use serde_json::Value;
use std::io::Write;

const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: p.v2.0.0
  annotations:
    createdAt:
spec:
  version: 2.0.0
  replaces: p.v0.9.0
  install:
    strategy: deployment
    spec:
      deployments: []
      permissions:
      - serviceAccountName: p-sa
        rules:
        - apiGroups: [\"\"]
          resources: [configmaps]
          verbs: [get]
";
const SECRET: &str =
    "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"p-secret\"}}";
const NOT_AN_OBJECT: &str = "just: some\nnotes: here\n";

fn reference() -> UnpackedRef {
    UnpackedRef {
        kind: "ConfigMap".into(),
        name: "0a1b2c".into(),
        namespace: "olm".into(),
        catalog_source_name: "cat".into(),
        catalog_source_namespace: "olm".into(),
        replaces: "p.v1.0.0".into(),
        properties: r#"{"properties":[{"type":"olm.package","value":{"packageName":"p","version":"2.0.0"}}]}"#
            .into(),
    }
}

fn files() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("p.clusterserviceversion.yaml".to_string(), CSV.to_string()),
        ("p-secret.json".to_string(), SECRET.to_string()),
        ("notes.yaml".to_string(), NOT_AN_OBJECT.to_string()),
    ])
}

fn plain() -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("0a1b2c".into()),
            ..Default::default()
        },
        data: Some(files()),
        ..Default::default()
    }
}

/// As `opm alpha bundle extract -z` writes it: each file gzipped, then base64 (the API adds its own base64).
fn gzipped() -> ConfigMap {
    let binary = files()
        .into_iter()
        .map(|(k, v)| {
            let mut gz = GzEncoder::new(Vec::new(), Compression::default());
            gz.write_all(v.as_bytes()).expect("gzip");
            let text = base64::engine::general_purpose::STANDARD.encode(gz.finish().expect("gzip"));
            (k, ByteString(text.into_bytes()))
        })
        .collect();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("0a1b2c".into()),
            annotations: Some(BTreeMap::from([(
                ENCODING_ANNOTATION.to_string(),
                GZIP_BASE64.to_string(),
            )])),
            ..Default::default()
        },
        binary_data: Some(binary),
        ..Default::default()
    }
}

fn step(kind: &str, group: &str, version: &str, name: &str) -> Step {
    Step {
        resolving: "p.v2.0.0".into(),
        resource: StepResource {
            source_name: "cat".into(),
            source_namespace: "olm".into(),
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            name: name.into(),
            manifest: String::new(),
        },
        optional: false,
        status: StepStatus::Unknown,
    }
}

#[test]
fn only_olm_references_are_references() {
    let full = r#"{"kind":"ConfigMap","name":"h","namespace":"olm","catalogSourceName":"c","catalogSourceNamespace":"olm","replaces":"","properties":""}"#;
    let cases = [
        ("OLM's reference", full, true),
        (
            "a ConfigMap object (name under metadata)",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"h","namespace":"olm"}}"#,
            false,
        ),
        (
            "no catalog source",
            r#"{"kind":"ConfigMap","name":"h","namespace":"olm"}"#,
            false,
        ),
        (
            "another kind",
            r#"{"kind":"Secret","name":"h","namespace":"olm","catalogSourceName":"c","catalogSourceNamespace":"olm"}"#,
            false,
        ),
        (
            "olm-rs's own image reference",
            r#"{"bundleImage":"r/b@sha256:1","file":"f","object":0}"#,
            false,
        ),
        ("not JSON", "kind: ConfigMap", false),
    ];
    for (case, manifest, want) in cases {
        assert_eq!(UnpackedRef::parse(manifest).is_some(), want, "{case}");
    }
}

#[test]
fn both_configmap_encodings_give_the_same_bundle() {
    for (case, cm) in [("data", plain()), ("gzip+base64 binaryData", gzipped())] {
        let b = bundle(&cm, &reference(), "p.v2.0.0").unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(b.object.len(), 2, "{case}: the notes file is skipped");
        let csv: Value = serde_json::from_str(&b.csv_json).expect("json");
        assert_eq!(csv["metadata"]["name"], "p.v2.0.0", "{case}");
        assert_eq!(b.properties.len(), 1, "{case}");
        assert_eq!(b.properties[0].r#type, "olm.package", "{case}");
    }
}

/// The steps OLM v0 wrote for the bundle, names as OLM gives them (its RBAC hash is not olm-rs's).
fn plan() -> Vec<Step> {
    vec![
        step(
            "ClusterServiceVersion",
            "operators.coreos.com",
            "v1alpha1",
            "p.v2.0.0",
        ),
        step("BundleSecret", "", "v1", "p-secret"),
        step("ServiceAccount", "", "v1", "p-sa"),
        step(
            "Role",
            "rbac.authorization.k8s.io",
            "v1",
            "p.v2.0.0-p-sa-OLMsOwnHash",
        ),
        step(
            "RoleBinding",
            "rbac.authorization.k8s.io",
            "v1",
            "p.v2.0.0-p-sa-OLMsOwnHash",
        ),
    ]
}

#[test]
fn each_step_finds_its_object_as_olm_builds_it() {
    let b = bundle(&gzipped(), &reference(), "p.v2.0.0").expect("bundle");
    let plan = plan();
    let steps: Vec<&Step> = plan.iter().collect();
    let objects = objects_for(&steps, &reference(), &b, "ops").expect("objects");
    let objects: Vec<Value> = objects
        .iter()
        .map(|o| serde_json::from_str(o).expect("json"))
        .collect();

    let csv = &objects[0];
    assert_eq!(csv["metadata"]["namespace"], "ops");
    assert_eq!(
        csv["spec"]["replaces"], "p.v1.0.0",
        "the reference's replaces"
    );
    let props = csv["metadata"]["annotations"][steps::PROPERTIES_ANNOTATION]
        .as_str()
        .expect("properties annotation");
    assert!(props.contains("olm.package"), "{props}");
    assert_eq!(
        csv["metadata"]["annotations"]["createdAt"], "",
        "Go's zero value"
    );

    assert_eq!(objects[1]["kind"], "Secret");
    assert_eq!(
        objects[2]["metadata"]["namespace"], "ops",
        "the generated ServiceAccount"
    );
    assert_eq!(objects[3]["kind"], "Role");
    assert_eq!(
        objects[3]["metadata"]["name"], "p.v2.0.0-p-sa-OLMsOwnHash",
        "the plan's name"
    );
    assert_eq!(objects[3]["rules"][0]["resources"][0], "configmaps");
    assert_eq!(objects[4]["kind"], "RoleBinding");
    assert_eq!(
        objects[4]["roleRef"]["name"], "p.v2.0.0-p-sa-OLMsOwnHash",
        "the binding follows its role"
    );
}

#[test]
fn a_step_the_configmap_cannot_give_is_named() {
    let b = bundle(&gzipped(), &reference(), "p.v2.0.0").expect("bundle");
    let missing = step("ConfigMap", "", "v1", "nope");
    let e = objects_for(&[&missing], &reference(), &b, "ops").expect_err("no such object");
    assert!(
        e.contains("ConfigMap olm/0a1b2c") && e.contains("no ConfigMap nope"),
        "{e}"
    );
}

#[test]
fn a_configmap_without_a_csv_or_with_bad_encoding_is_named() {
    let mut no_csv = plain();
    no_csv.data = Some(BTreeMap::from([("s.json".to_string(), SECRET.to_string())]));
    let e = bundle(&no_csv, &reference(), "p.v2.0.0").expect_err("no csv");
    assert!(
        e.contains("ConfigMap olm/0a1b2c") && e.contains("no ClusterServiceVersion"),
        "{e}"
    );

    let mut bad = gzipped();
    bad.binary_data = Some(BTreeMap::from([(
        "x.yaml".to_string(),
        ByteString(b"not base64 !!".to_vec()),
    )]));
    let e = bundle(&bad, &reference(), "p.v2.0.0").expect_err("bad encoding");
    assert!(
        e.contains("ConfigMap olm/0a1b2c: binaryData x.yaml: not base64"),
        "{e}"
    );
}
