//! Support for the PackageManifest API tests: the package-server as a local process on a non-loopback address
//! of this machine (Endpoints may not hold loopback addresses), registered with the API server's aggregation
//! layer through a selector-less Service + Endpoints and the `v1.packages.operators.coreos.com` APIService, which
//! is cluster-scoped: one test at a time holds it ([`exclusive`]), and it is deleted when the guard drops, so a
//! stopped server never leaves an unavailable API group behind (that would stall namespace deletion).

use crate::{Cluster, OperatorProcess, await_object};
use anyhow::Context;
use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use std::time::Duration;

pub const APISERVICE: &str = "v1.packages.operators.coreos.com";
static EXCLUSIVE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Hold the APIService for the length of a test.
pub async fn exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    EXCLUSIVE.lock().await
}

/// A non-loopback IPv4 address of this machine (the source address of its default route).
pub fn host_ip() -> anyhow::Result<String> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    socket
        .connect("192.0.2.1:9")
        .context("no IPv4 route to pick a host address from")?;
    let ip = socket.local_addr()?.ip();
    anyhow::ensure!(!ip.is_loopback(), "only a loopback address: {ip}");
    Ok(ip.to_string())
}

fn free_port_on(ip: &str) -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind((ip, 0))?;
    Ok(listener.local_addr()?.port())
}

/// The running server and its registration; dropping it deletes the APIService, then stops the process.
pub struct PackageServer {
    pub process: OperatorProcess,
    /// `https://<host address>:<port>`: the server itself, not through the aggregator.
    pub direct_url: String,
    pub kubeconfig: std::path::PathBuf,
}

impl Drop for PackageServer {
    fn drop(&mut self) {
        let out = std::process::Command::new("kubectl")
            .args([
                "delete",
                "apiservice",
                APISERVICE,
                "--ignore-not-found",
                "--wait=false",
            ])
            .env("KUBECONFIG", &self.kubeconfig)
            .output();
        if let Ok(out) = out
            && !out.status.success()
        {
            eprintln!(
                "deleting the APIService failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        self.process.kill();
    }
}

/// Start the server with `global` as its global namespace, register it (Service and Endpoints in `global`),
/// and wait until the aggregator reports the APIService Available.
pub async fn start(
    cluster: &'static Cluster,
    client: &kube::Client,
    global: &str,
) -> anyhow::Result<PackageServer> {
    start_with(cluster, client, global, &[]).await
}

/// [`start`] with more command-line arguments.
pub async fn start_with(
    cluster: &'static Cluster,
    client: &kube::Client,
    global: &str,
    extra: &[&str],
) -> anyhow::Result<PackageServer> {
    let ip = host_ip()?;
    let port = free_port_on(&ip)?;
    let service = "packageserver";
    let port_s = port.to_string();
    let process = OperatorProcess::start(
        cluster,
        "package-server",
        &[
            "--global-namespace",
            global,
            "--bind-address",
            &ip,
            "--secure-port",
            &port_s,
            "--service-name",
            service,
            "--service-namespace",
            global,
            "--tls-extra-names",
            &ip,
            "--registry-probe-seconds",
            "1",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect::<Vec<_>>(),
    )
    .await?;
    let server = PackageServer {
        process,
        direct_url: format!("https://{ip}:{port}"),
        kubeconfig: cluster.kubeconfig.clone(),
    };
    let services: Api<Service> = Api::namespaced(client.clone(), global);
    services
        .create(
            &PostParams::default(),
            &Service {
                metadata: ObjectMeta {
                    name: Some(service.into()),
                    ..Default::default()
                },
                spec: Some(ServiceSpec {
                    ports: Some(vec![ServicePort {
                        port: 443,
                        target_port: Some(
                            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(
                                i32::from(port),
                            ),
                        ),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await?;
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), global);
    endpoints
        .create(
            &PostParams::default(),
            &Endpoints {
                metadata: ObjectMeta {
                    name: Some(service.into()),
                    ..Default::default()
                },
                subsets: Some(vec![EndpointSubset {
                    addresses: Some(vec![EndpointAddress {
                        ip: ip.clone(),
                        ..Default::default()
                    }]),
                    ports: Some(vec![EndpointPort {
                        port: i32::from(port),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }]),
            },
        )
        .await?;
    let apiservices: Api<APIService> = Api::all(client.clone());
    if apiservices.get_opt(APISERVICE).await?.is_some() {
        apiservices
            .delete(APISERVICE, &DeleteParams::default())
            .await?;
        await_object(
            &apiservices,
            APISERVICE,
            Duration::from_secs(30),
            "the stale APIService gone",
            |a| a.is_none(),
        )
        .await
        .ok();
    }
    apiservices
        .create(
            &PostParams::default(),
            &APIService {
                metadata: ObjectMeta {
                    name: Some(APISERVICE.into()),
                    ..Default::default()
                },
                spec: Some(APIServiceSpec {
                    group: Some("packages.operators.coreos.com".into()),
                    version: Some("v1".into()),
                    group_priority_minimum: 2000,
                    version_priority: 15,
                    service: Some(ServiceReference {
                        name: Some(service.into()),
                        namespace: Some(global.into()),
                        port: Some(443),
                    }),
                    ..Default::default()
                }),
                status: None,
            },
        )
        .await?;
    await_object(
        &apiservices,
        APISERVICE,
        Duration::from_secs(90),
        "APIService Available",
        |a| {
            a.and_then(|a| a.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Available" && c.status == "True")
                })
        },
    )
    .await
    .with_context(|| format!("package-server log:\n{}", server.process.logs()))?;
    Ok(server)
}

/// The HTTP status of a GET straight to the server (no client certificate), with extra curl arguments.
pub fn direct_status(server: &PackageServer, path: &str, extra: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(extra)
        .arg(format!("{}{path}", server.direct_url))
        .output()
        .context("run curl")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An answer of the server to a request made straight to it.
pub struct Direct {
    pub status: u16,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Direct {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A GET straight to the server as the aggregator makes one: with the plane's front-proxy client certificate
/// (`certs/` beside the kubeconfig) and the aggregator's user in `X-Remote-User`/`X-Remote-Group`, plus
/// `headers` (`Name: value`). Redirects are not followed.
pub fn as_aggregator(
    cluster: &Cluster,
    server: &PackageServer,
    path: &str,
    headers: &[&str],
) -> anyhow::Result<Direct> {
    let certs = cluster
        .kubeconfig
        .parent()
        .context("kubeconfig without a folder")?
        .join("certs");
    let mut args = vec![
        "-sk".to_string(),
        "-i".into(),
        "--cert".into(),
        certs.join("front-proxy-client.crt").display().to_string(),
        "--key".into(),
        certs.join("front-proxy-client.key").display().to_string(),
        "-H".into(),
        "X-Remote-User: system:kube-aggregator".into(),
        "-H".into(),
        "X-Remote-Group: system:masters".into(),
    ];
    for h in headers {
        args.extend(["-H".to_string(), (*h).to_string()]);
    }
    args.push(format!("{}{path}", server.direct_url));
    let out = std::process::Command::new("curl")
        .args(&args)
        .output()
        .context("run curl")?;
    anyhow::ensure!(
        out.status.success(),
        "curl {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of headers")?;
    let head = String::from_utf8_lossy(&out.stdout[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .context("no status line")?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Direct {
        status,
        headers,
        body: out.stdout[split + 4..].to_vec(),
    })
}

/// `kubectl` with extra arguments, returning (success, stdout, stderr).
pub fn kubectl(cluster: &Cluster, args: &[&str]) -> anyhow::Result<(bool, String, String)> {
    let out = std::process::Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .output()
        .context("run kubectl")?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The names `kubectl get packagemanifests -o name` prints in `ns` with extra arguments, sorted.
pub fn names(cluster: &Cluster, ns: &str, extra: &[&str]) -> anyhow::Result<Vec<String>> {
    let mut args = vec!["get", "packagemanifests", "-n", ns, "-o", "name"];
    args.extend_from_slice(extra);
    let (ok, out, err) = kubectl(cluster, &args)?;
    anyhow::ensure!(ok, "kubectl {}: {err}", args.join(" "));
    let mut names: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.rsplit('/').next().unwrap_or(l).to_string())
        .collect();
    names.sort();
    Ok(names)
}
