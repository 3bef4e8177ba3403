//! opm reads what olm-rs builds: every bundle image olm-rs pushes (`oci::publish`, what `olm-oci push-tree` runs)
//! of three community packages, and the catalog image olm-rs makes of them, are rendered by `opm render` (built
//! from its Go module) into the catalog olm-rs reads: per bundle the same name, package, image, version, provided
//! and required APIs and required packages, and the same objects as olm-rs unpacks from the image; for the catalog
//! image, the same packages, channels and bundles as the FBC olm-rs pushed. Needs the local registry only.

use catalog_operator::unpacker::pull_bundle;
use oci::Auth;
use olm_tests::oci_fixture::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const PACKAGES: &[&str] = &["pcc-operator", "sonar-operator", "analytics-operator"];

/// `opm render IMAGE --use-http`: its documents. opm's image library wants a containers policy, given in a
/// scratch HOME.
fn opm_render(home: &Path, image: &str) -> anyhow::Result<Vec<Value>> {
    let opm = olm_tests::peer_bin_dir("opm")?.join("opm");
    let out = Command::new(&opm)
        .args(["render", image, "--use-http", "-o", "json"])
        .env("HOME", home)
        .current_dir(home)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "opm render {image}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    catalog::documents::parse_json_documents(&String::from_utf8(out.stdout)?)
        .map_err(anyhow::Error::from)
}

/// What both sides must agree on for one bundle: properties by type (values sorted), `olm.bundle.object` and
/// `olm.csv.metadata` left out (olm-rs's catalog names the image instead of carrying objects).
fn facts(bundle: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in bundle["properties"].as_array().into_iter().flatten() {
        let kind = p["type"].as_str().unwrap_or_default();
        if matches!(kind, "olm.bundle.object" | "olm.csv.metadata") {
            continue;
        }
        out.entry(kind.to_string())
            .or_default()
            .push(p["value"].to_string());
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// The (kind, name) of each object opm rendered into `olm.bundle.object` properties.
fn opm_objects(bundle: &Value) -> anyhow::Result<BTreeSet<(String, String)>> {
    use base64::Engine;
    let mut out = BTreeSet::new();
    for p in bundle["properties"].as_array().into_iter().flatten() {
        if p["type"] != "olm.bundle.object" {
            continue;
        }
        let data = p["value"]["data"].as_str().unwrap_or_default();
        let obj: Value =
            serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(data)?)?;
        out.insert(kind_name(&obj));
    }
    Ok(out)
}

fn kind_name(obj: &Value) -> (String, String) {
    (
        obj["kind"].as_str().unwrap_or_default().to_string(),
        obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test]
async fn opm_renders_olm_rs_bundle_and_catalog_images_into_the_catalog_olm_rs_reads()
-> anyhow::Result<()> {
    let root = olm_tests::shared_operators()?;
    let home = std::env::temp_dir().join(format!("olm-rs-opm-render-{}", std::process::id()));
    std::fs::create_dir_all(home.join(".config/containers"))?;
    std::fs::write(
        home.join(".config/containers/policy.json"),
        r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
    )?;
    let registry = oci::Registry::default();
    let prefix = format!("{}/opm-render-{}", registry_addr(), std::process::id());
    let packages: Vec<String> = PACKAGES.iter().map(|p| p.to_string()).collect();
    let published = oci::publish::push_tree(&registry, &root, &packages, &prefix).await?;
    let ours =
        catalog::documents::parse_json_documents(&String::from_utf8(published.fbc.clone())?)?;
    let our_bundles: BTreeMap<String, &Value> = ours
        .iter()
        .filter(|d| d["schema"] == "olm.bundle")
        .filter_map(|d| Some((d["name"].as_str()?.to_string(), d)))
        .collect();
    assert!(our_bundles.len() >= 8, "bundles: {}", our_bundles.len());

    // Each bundle image, as opm renders it.
    for (name, image) in &published.bundles {
        let rendered = opm_render(&home, image)?;
        let [theirs] = rendered.as_slice() else {
            anyhow::bail!("opm rendered {} documents for {image}", rendered.len());
        };
        let mine = our_bundles
            .get(name)
            .ok_or_else(|| anyhow::anyhow!("{name} is not in olm-rs's catalog"))?;
        assert_eq!(theirs["name"], mine["name"], "{image}");
        assert_eq!(theirs["package"], mine["package"], "{image}");
        assert_eq!(theirs["image"].as_str(), Some(image.as_str()));
        assert_eq!(facts(theirs), facts(mine), "{name}: properties");
        let unpacked = pull_bundle(&registry, image, &Auth::Anonymous).await?;
        let read: BTreeSet<(String, String)> = unpacked.objects.iter().map(kind_name).collect();
        assert_eq!(opm_objects(theirs)?, read, "{name}: objects");
    }

    // The catalog image olm-rs makes of them.
    let (layers, labels) = catalog_image(&published.fbc)?;
    let reference = format!("{prefix}/catalog:v1");
    let digest = registry
        .push(&reference, &Auth::Anonymous, layers, &labels)
        .await?;
    let rendered = opm_render(&home, &oci::publish::pinned(&reference, &digest))?;
    let key = |d: &Value| {
        (
            d["schema"].as_str().unwrap_or_default().to_string(),
            d["package"].as_str().unwrap_or_default().to_string(),
            d["name"].as_str().unwrap_or_default().to_string(),
        )
    };
    let theirs: BTreeMap<_, &Value> = rendered.iter().map(|d| (key(d), d)).collect();
    let mine: BTreeMap<_, &Value> = ours.iter().map(|d| (key(d), d)).collect();
    assert_eq!(
        theirs.keys().collect::<Vec<_>>(),
        mine.keys().collect::<Vec<_>>(),
        "the same packages, channels and bundles"
    );
    for (k, d) in &mine {
        let t = theirs[k];
        if k.0 == "olm.channel" {
            assert_eq!(t["entries"], d["entries"], "{k:?}");
        }
        if k.0 == "olm.bundle" {
            assert_eq!(facts(t), facts(d), "{k:?}");
            assert_eq!(t["image"], d["image"], "{k:?}");
        }
    }
    println!(
        "opm render: {} bundle images and the catalog image ({} documents) read as olm-rs reads them",
        published.bundles.len(),
        rendered.len()
    );
    std::fs::remove_dir_all(&home).ok();
    Ok(())
}
