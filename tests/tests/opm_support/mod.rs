//! Two registries side by side for the opm diff: `opm serve` (operator-registry, built from its Go module by
//! `hack/peers.sh`) and our `registry serve`, over the same catalog, each on a free loopback port; and the
//! normal form the answers are compared in.

use registry::api;
use registry::client::{ClientOptions, RegistryClient};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `../shared/catalogs` (or `$OLM_RS_SHARED/catalogs`): this test's input.
pub fn shared_catalogs() -> PathBuf {
    olm_tests::shared_catalogs().expect("the shared catalogs are this test's input")
}

/// The folder of opm's commands, built from its module unless cached (`hack/peers.sh path opm`).
pub fn opm_bin_dir() -> PathBuf {
    olm_tests::peer_bin_dir("opm").expect("opm built from its module")
}

/// A registry process, killed when dropped.
pub struct Served {
    pub name: &'static str,
    pub addr: String,
    child: Child,
    log: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn spawn(name: &'static str, mut cmd: Command, port: u16, scratch: &Path) -> Served {
    let log = scratch.join(format!("{name}.log"));
    let out = std::fs::File::create(&log).expect("log file");
    let err = out.try_clone().expect("log file");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    Served {
        name,
        addr: format!("http://127.0.0.1:{port}"),
        child,
        log,
    }
}

/// `opm serve CATALOG` (an FBC folder).
pub fn opm_serve(opm: &Path, catalog: &Path, scratch: &Path) -> Served {
    let port = free_port();
    let mut cmd = Command::new(opm.join("opm"));
    cmd.arg("serve")
        .arg(catalog)
        .args(["-p", &port.to_string()]);
    spawn("opm", cmd, port, scratch)
}

/// `opm registry serve --database DB` (the sqlite format).
pub fn opm_serve_sqlite(opm: &Path, db: &Path, scratch: &Path) -> Served {
    let port = free_port();
    let mut cmd = Command::new(opm.join("opm"));
    cmd.args(["registry", "serve", "--database"])
        .arg(db)
        .args(["-p", &port.to_string()]);
    spawn("opm", cmd, port, scratch)
}

/// Our `registry serve CATALOG`.
pub fn ours_serve(catalog: &Path, scratch: &Path) -> Served {
    let port = free_port();
    let mut cmd = Command::new(olm_tests::bin_path("registry").expect("the registry binary"));
    cmd.arg("serve")
        .arg(catalog)
        .args(["--listen", "127.0.0.1", "--port", &port.to_string()]);
    spawn("olm-rs", cmd, port, scratch)
}

/// A client of `served` once it lists packages (opm builds its cache first).
pub async fn client(served: &mut Served) -> RegistryClient {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(Some(status)) = served.child.try_wait() {
            panic!(
                "{} exited with {status}; its log:\n{}",
                served.name,
                served.log()
            );
        }
        if let Ok(c) = RegistryClient::connect(&served.addr, ClientOptions::default())
            && c.list_packages().await.is_ok()
        {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "{} at {} did not answer ListPackages within 180 s; its log:\n{}",
            served.name,
            served.addr,
            served.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A JSON string as its value (clients parse these; key order and spacing carry nothing).
fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|_| serde_json::Value::String(s.to_string()))
}

/// A manifest as a Go client decodes it into its typed struct: members holding their type's zero value (null,
/// false, 0, "", {} and [] once emptied) dropped. opm writes a CSV it builds from `olm.csv.metadata` through Go's
/// encoder, which spells out zero values (`spec.cleanup: {enabled: false}`, `creationTimestamp: null`).
fn go_decoded(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let zero = |v: &Value| match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    };
    match v {
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, go_decoded(v)))
                .filter(|(_, v)| !zero(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(go_decoded).collect()),
        other => other,
    }
}

fn gvk(g: &api::GroupVersionKind) -> String {
    format!("{}/{}/{}/{}", g.group, g.version, g.kind, g.plural)
}

/// A bundle in the form compared: JSON fields as values (manifests as a Go client decodes them), and repeated
/// fields whose order carries no meaning (manifests, APIs, properties, dependencies, skips) sorted.
pub fn bundle(b: &api::Bundle) -> serde_json::Value {
    let mut objects: Vec<serde_json::Value> =
        b.object.iter().map(|o| go_decoded(json(o))).collect();
    objects.sort_by_key(|o| o.to_string());
    let mut provided: Vec<String> = b.provided_apis.iter().map(gvk).collect();
    provided.sort();
    let mut required: Vec<String> = b.required_apis.iter().map(gvk).collect();
    required.sort();
    let mut properties: Vec<(String, String)> = b
        .properties
        .iter()
        .map(|p| (p.r#type.clone(), json(&p.value).to_string()))
        .collect();
    properties.sort();
    let mut dependencies: Vec<(String, String)> = b
        .dependencies
        .iter()
        .map(|d| (d.r#type.clone(), json(&d.value).to_string()))
        .collect();
    dependencies.sort();
    let mut skips = b.skips.clone();
    skips.sort();
    serde_json::json!({
        "csvName": b.csv_name, "packageName": b.package_name, "channelName": b.channel_name,
        "csvJson": go_decoded(json(&b.csv_json)), "object": objects, "bundlePath": b.bundle_path,
        "providedApis": provided, "requiredApis": required, "version": b.version, "skipRange": b.skip_range,
        "dependencies": dependencies, "properties": properties, "replaces": b.replaces, "skips": skips,
        "deprecation": b.deprecation.as_ref().map(|d| d.message.clone()),
    })
}

pub fn package(p: &api::Package) -> serde_json::Value {
    let mut channels: Vec<serde_json::Value> = p
        .channels
        .iter()
        .map(|c| {
            serde_json::json!({"name": c.name, "csvName": c.csv_name,
                               "deprecation": c.deprecation.as_ref().map(|d| d.message.clone())})
        })
        .collect();
    channels.sort_by_key(|c| c.to_string());
    serde_json::json!({
        "name": p.name, "channels": channels, "defaultChannelName": p.default_channel_name,
        "deprecation": p.deprecation.as_ref().map(|d| d.message.clone()),
    })
}

pub fn entries(list: &[api::ChannelEntry]) -> serde_json::Value {
    let mut v: Vec<String> = list
        .iter()
        .map(|e| {
            format!(
                "{}/{}/{} replaces {}",
                e.package_name, e.channel_name, e.bundle_name, e.replaces
            )
        })
        .collect();
    v.sort();
    serde_json::json!(v)
}
