//! The `registry` binary's commands: validate (exit status and findings), render (output
//! loads back and validates), gen-synthetic (the copies validate).

#![allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]

use std::path::PathBuf;
use std::process::Command;

use rstest::rstest;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_registry"))
}

fn manifest() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("registry-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[rstest]
#[case::a_valid_catalog_passes(
    "registry/tests/fixtures/rpc/catalog.yaml",
    true,
    "valid: 2 packages, 3 channels, 4 bundles"
)]
#[case::an_invalid_catalog_fails_with_the_file_and_fix(
    "catalog/tests/fixtures/invalid/several_heads.yaml",
    false,
    "several_heads.yaml (document 2): package \"p\", channel \"stable\": channel has 2 heads"
)]
fn validate_reports_the_verdict(#[case] rel: &str, #[case] ok: bool, #[case] says: &str) {
    let out = bin()
        .arg("validate")
        .arg(manifest().join("..").join(rel))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.success(), ok, "{text}");
    assert!(text.contains(says), "expected {says:?} in:\n{text}");
}

#[test]
fn rendered_catalog_validates_again() {
    let dir = scratch("render");
    let out_file = dir.join("catalog.json");
    let out = bin()
        .arg("render")
        .arg(manifest().join("tests/fixtures/rpc/catalog.yaml"))
        .arg("-o")
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again = bin().arg("validate").arg(&dir).output().unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("2 packages, 3 channels, 4 bundles"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn synthetic_copies_validate_with_factor_times_the_packages() {
    let dir = scratch("synthetic");
    let out = bin()
        .args(["gen-synthetic", "--factor", "3", "--from"])
        .arg(manifest().join("tests/fixtures/rpc/catalog.yaml"))
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = bin().arg("validate").arg(&dir).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    assert!(
        String::from_utf8_lossy(&v.stdout).contains("valid: 6 packages, 9 channels, 12 bundles"),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn serve_refuses_an_invalid_catalog() {
    let out = bin()
        .args(["serve", "--port", "0", "--listen", "127.0.0.1"])
        .arg(manifest().join("../catalog/tests/fixtures/invalid/cycle.yaml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cycle") && err.contains("cycle.yaml"), "{err}");
}

#[rstest]
#[case::one_folder_per_package(&[("a/catalog.yaml", "pa"), ("b/catalog.yaml", "pb")], "2 packages, 2 bundles")]
#[case::a_package_split_across_folders_falls_back_to_one_load(&[("a/package.yaml", "pa-package"), ("b/rest.yaml", "pa-rest")], "1 packages, 1 bundles")]
fn cache_build_loads_fbc_folders_part_by_part(
    #[case] files: &[(&str, &str)],
    #[case] summary: &str,
) {
    let doc = |which: &str| -> String {
        let pkg =
            |n: &str| format!("---\nschema: olm.package\nname: {n}\ndefaultChannel: stable\n");
        let rest = |n: &str| {
            format!(
                "---\nschema: olm.channel\npackage: {n}\nname: stable\nentries: [{{name: {n}.v1}}]\n---\nschema: olm.bundle\npackage: {n}\nname: {n}.v1\nimage: quay.io/x/{n}:1\nproperties:\n- type: olm.package\n  value: {{packageName: {n}, version: 1.0.0}}\n"
            )
        };
        match which {
            "pa" => pkg("pa") + &rest("pa"),
            "pb" => pkg("pb") + &rest("pb"),
            "pa-package" => pkg("pa"),
            _ => rest("pa"),
        }
    };
    let dir = scratch(&format!("parts-{}", files[0].1));
    let src = dir.join("src");
    for (rel, which) in files {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, doc(which)).unwrap();
    }
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = bin()
        .arg("cache-build")
        .arg("--out")
        .arg(&out_dir)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(summary),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out_dir.join("index.msgpack").is_file() && out_dir.join("bodies").is_file());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn serve_stops_cleanly_on_sigterm() {
    use std::io::BufRead;
    let mut child = bin()
        .args(["serve", "--port", "0", "--listen", "127.0.0.1"])
        .arg(manifest().join("tests/fixtures/rpc/catalog.yaml"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("serving on 127.0.0.1:"), "{line}");
    let killed = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("serve exits within 20 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
}
