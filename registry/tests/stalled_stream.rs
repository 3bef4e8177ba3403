//! A registry that stops mid-stream: a TCP forwarder in front of a real server passes the server's bytes up to a
//! limit and then holds the connection open, sending nothing more (a registry process frozen mid-answer, a
//! middlebox that dropped the flow). The client's streamed RPCs end with an error naming the RPC within their
//! bounds, never hang; and a stream longer than its message limit is refused.

use registry::client::{ClientError, ClientOptions, ConnectionState, RegistryClient};
use registry::store::Store;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn fixture() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("tests/fixtures/rpc/catalog.yaml")
}

async fn serve() -> SocketAddr {
    let catalog = catalog::Catalog::load(&[fixture()]).expect("fixture loads");
    let store = Arc::new(Store::build(catalog).expect("store builds"));
    let listener = registry::server::bind("127.0.0.1:0".parse().expect("address"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(registry::server::serve(
        store,
        listener,
        std::future::pending(),
    ));
    addr
}

/// Forwards to `upstream`; of the server's bytes, passes the first `limit` (over all connections) and then
/// stops reading from the server while keeping both connections open. Counts what it passed.
async fn stalling_forwarder(upstream: SocketAddr, limit: u64) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let passed = Arc::new(AtomicU64::new(0));
    let count = passed.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(upstream).await else {
                continue;
            };
            let count = count.clone();
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                tokio::spawn(async move { tokio::io::copy(&mut cr, &mut sw).await });
                let mut buf = vec![0u8; 1024];
                loop {
                    let left = limit.saturating_sub(count.load(Ordering::SeqCst));
                    if left == 0 {
                        // Stalled: hold the connection, send nothing.
                        std::future::pending::<()>().await;
                    }
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let Ok(n) = sr.read(&mut buf[..want]).await else {
                        return;
                    };
                    if n == 0 || cw.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                    count.fetch_add(n as u64, Ordering::SeqCst);
                }
            });
        }
    });
    (addr, passed)
}

fn options() -> ClientOptions {
    ClientOptions {
        probe_interval: Duration::from_secs(60),
        request_timeout: Duration::from_secs(2),
        stream_idle_timeout: Duration::from_secs(1),
        stream_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn a_registry_that_stops_mid_stream_fails_the_call_within_its_bounds() {
    let server = serve().await;
    // How many bytes a whole ListBundles takes through the forwarder, connection set-up included.
    let (open, passed) = stalling_forwarder(server, u64::MAX).await;
    let client = RegistryClient::connect(&open.to_string(), options()).expect("client");
    let bundles = client.list_bundles().await.expect("a whole answer");
    assert!(
        bundles.len() >= 2,
        "the fixture has bundles: {}",
        bundles.len()
    );
    let whole = passed.load(Ordering::SeqCst);

    // The same call through a forwarder that stops halfway through the answer.
    let (stalling, _) = stalling_forwarder(server, whole - whole / 3).await;
    let client = RegistryClient::connect(&stalling.to_string(), options()).expect("client");
    let started = Instant::now();
    let e = tokio::time::timeout(Duration::from_secs(20), client.list_bundles())
        .await
        .expect("the call ends by itself")
        .expect_err("a stalled stream fails");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "ended after {took:?}");
    let message = e.to_string();
    assert!(
        matches!(e, ClientError::Stream { .. }),
        "stalled after the answer began: {message}"
    );
    assert!(
        message.starts_with("ListBundles: no message for 1s"),
        "{message}"
    );
    assert_ne!(client.state(), ConnectionState::Ready, "{message}");
}

#[tokio::test]
async fn a_stream_longer_than_its_message_limit_is_refused() {
    let server = serve().await;
    let client = RegistryClient::connect(
        &server.to_string(),
        ClientOptions {
            max_stream_messages: 1,
            ..options()
        },
    )
    .expect("client");
    match client.list_bundles().await {
        Err(ClientError::Stream { rpc, problem }) => {
            assert_eq!(rpc, "ListBundles");
            assert_eq!(problem, "more than 1 messages");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
