//! The catalog Service routes to the leader alone (`catalog-operator/src/catalog_endpoint.rs`). Two replicas of
//! catalog-operator as real processes, "in their pods" at this machine's own non-loopback address (the API
//! server refuses loopback endpoints), each serving catalogs on a free port: the Lease holder, once it listens,
//! writes the EndpointSlice `<service>-leader` naming its address, port (which accepts a connection) and pod;
//! the standby writes none. When the leader is killed, the new leader points the slice at itself.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, with_namespace};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);
const LEASE: &str = "catalog-operator";
const SERVICE: &str = "cats";
const SLICE: &str = "cats-leader";

/// This machine's address on its default route (no packet is sent).
fn own_address() -> anyhow::Result<String> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    socket
        .connect("192.0.2.255:9")
        .or_else(|_| socket.connect("10.255.255.255:9"))
        .map_err(|e| {
            anyhow::anyhow!("this machine has no non-loopback IPv4 address to serve on: {e}")
        })?;
    let ip = socket.local_addr()?.ip();
    anyhow::ensure!(
        !ip.is_loopback(),
        "this machine's address is loopback ({ip})"
    );
    Ok(ip.to_string())
}

async fn replica(ctx: &TestContext, identity: &str, ip: &str) -> anyhow::Result<OperatorProcess> {
    let serve = format!("{ip}:0");
    let mut args = olm_tests::replica_args(&ctx.namespace, identity);
    args.extend([
        "--catalog-serve-addr",
        &serve,
        "--catalog-serve-service",
        SERVICE,
    ]);
    OperatorProcess::start_with_env(
        ctx.cluster,
        "catalog-operator",
        &args,
        &[("POD_IP", ip), ("POD_NAME", identity)],
    )
    .await
}

fn holder(lease: Option<&Lease>) -> Option<&str> {
    lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.holder_identity.as_deref())
}

/// The slice's port, once it names `pod` at `ip`.
async fn slice_at(ctx: &TestContext, ip: &str, pod: &str) -> anyhow::Result<u16> {
    let slices: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let s = await_object(
        &slices,
        SLICE,
        DEADLINE,
        &format!("naming {pod} at {ip}"),
        |s| {
            s.is_some_and(|s| {
                s.endpoints.iter().any(|e| {
                    e.addresses == [ip]
                        && e.target_ref.as_ref().and_then(|r| r.name.as_deref()) == Some(pod)
                })
            })
        },
    )
    .await?;
    let labels = s.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("kubernetes.io/service-name").map(String::as_str),
        Some(SERVICE),
        "the slice belongs to the Service"
    );
    assert_eq!(s.endpoints.len(), 1, "one endpoint: {:?}", s.endpoints);
    let ports = s.ports.clone().unwrap_or_default();
    let port = ports
        .iter()
        .find(|p| p.name.as_deref() == Some("catalogs"))
        .and_then(|p| p.port)
        .ok_or_else(|| anyhow::anyhow!("no port named catalogs: {ports:?}"))?;
    Ok(u16::try_from(port)?)
}

#[tokio::test]
async fn the_catalog_service_routes_to_the_leader_and_follows_a_new_one() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "catserve", |ctx| async move {
        let leases: Api<Lease> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let ip = own_address()?;
        let mut a = replica(&ctx, "replica-a", &ip).await?;
        await_object(&leases, LEASE, DEADLINE, "held by replica-a", |l| {
            holder(l) == Some("replica-a")
        })
        .await?;
        let b = replica(&ctx, "replica-b", &ip).await?;

        let port = slice_at(&ctx, &ip, "replica-a")
            .await
            .map_err(|e| anyhow::anyhow!("{e}; replica-a's log:\n{}", a.logs()))?;
        tokio::net::TcpStream::connect((ip.as_str(), port))
            .await
            .map_err(|e| anyhow::anyhow!("the leader's catalog port {ip}:{port}: {e}"))?;

        a.kill();
        await_object(&leases, LEASE, DEADLINE, "held by replica-b", |l| {
            holder(l) == Some("replica-b")
        })
        .await?;
        let new_port = slice_at(&ctx, &ip, "replica-b")
            .await
            .map_err(|e| anyhow::anyhow!("{e}; replica-b's log:\n{}", b.logs()))?;
        tokio::net::TcpStream::connect((ip.as_str(), new_port))
            .await
            .map_err(|e| anyhow::anyhow!("the new leader's catalog port {ip}:{new_port}: {e}"))?;
        Ok(())
    })
    .await
}
