//! The crate layering, without a cluster: the operator binaries (olm-operator, catalog-operator, package-server)
//! share library crates and never depend on one another, and no library crate depends on one of them; the test kit
//! (crate `testkit`) is only ever a dev-dependency. Read from
//! `cargo metadata` of the workspace: normal and build dependencies (tests and dev-dependencies may use anything).

use serde_json::Value;

/// The crates that are a binary's whole program: none may be another crate's dependency.
const BINARIES: [&str; 3] = ["olm-operator", "catalog-operator", "package-server"];
/// The crate of the cluster tests, which drives every binary.
const TESTS: &str = "olm-tests";
/// The operators' test kit: a dev-dependency only.
const TEST_KIT: &str = "testkit";

/// Each dependency of a workspace crate on an operator binary, or other than a dev-dependency on the test kit, as
/// `crate -> dependency`.
fn violations(metadata: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        if name == TESTS {
            continue;
        }
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            let dev = dep["kind"].as_str() == Some("dev");
            if !dev && dep_name != name && (BINARIES.contains(&dep_name) || dep_name == TEST_KIT) {
                out.push(format!("{name} -> {dep_name}"));
            }
        }
    }
    out
}

/// `cargo metadata` of the workspace (no dependencies, offline).
fn workspace_metadata() -> anyhow::Result<Value> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .args(["--manifest-path", manifest])
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

#[test]
fn no_crate_depends_on_an_operator_binary() -> anyhow::Result<()> {
    let metadata = workspace_metadata()?;
    let crates = metadata["packages"].as_array().map_or(0, Vec::len);
    anyhow::ensure!(
        crates > BINARIES.len(),
        "the workspace lists {crates} crates"
    );
    assert_eq!(violations(&metadata), Vec::<String>::new());
    Ok(())
}

#[test]
fn a_binary_or_test_kit_dependency_is_named_and_dev_dependencies_are_not() -> anyhow::Result<()> {
    let metadata: Value = serde_json::from_str(
        r#"{"packages": [
            {"name": "package-server", "dependencies": [
                {"name": "catalog-image", "kind": null},
                {"name": "catalog-operator", "kind": null}]},
            {"name": "olm-operator", "dependencies": [
                {"name": "catalog-operator", "kind": "dev"},
                {"name": "testkit", "kind": "dev"}]},
            {"name": "catalog-image", "dependencies": [{"name": "olm-operator", "kind": "build"}]},
            {"name": "oci", "dependencies": [{"name": "testkit", "kind": null}]},
            {"name": "olm-tests", "dependencies": [{"name": "olm-operator", "kind": null}]}
        ]}"#,
    )?;
    assert_eq!(
        violations(&metadata),
        [
            "package-server -> catalog-operator",
            "catalog-image -> olm-operator",
            "oci -> testkit"
        ]
    );
    Ok(())
}

/// Every crate's sibling modules import each other without circles, at every level (`testkit::import_graph`).
#[test]
fn no_crate_has_an_import_circle() -> anyhow::Result<()> {
    let metadata = workspace_metadata()?;
    let mut checked = 0;
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(manifest) = package["manifest_path"].as_str() else {
            continue;
        };
        let dir = std::path::Path::new(manifest)
            .parent()
            .ok_or_else(|| anyhow::anyhow!("{manifest} has no folder"))?;
        if dir.join("src").is_dir() {
            testkit::import_graph::assert_acyclic(dir);
            checked += 1;
        }
    }
    anyhow::ensure!(checked > BINARIES.len(), "only {checked} crates checked");
    Ok(())
}
