//! A loopback TCP forwarder for the chaos runs' catalog faults: a CatalogSource's `spec.address` names it, it
//! forwards each connection to the registry server behind it, and on command it answers slowly (each chunk the
//! server sends is held `delay` first: a CatalogSource whose server answers slowly) or stops reaching the server
//! (its upstream changed, e.g. to a restarted registry on another port; while the registry is down, connections
//! are refused by the server and closed here). Bytes are forwarded unchanged.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

struct State {
    upstream: Mutex<SocketAddr>,
    delay_ms: AtomicU64,
}

/// The forwarder; stops accepting when dropped.
pub struct SlowTcp {
    pub addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl SlowTcp {
    /// Listen on a free loopback port and forward to `upstream`.
    pub async fn start(upstream: SocketAddr) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            upstream: Mutex::new(upstream),
            delay_ms: AtomicU64::new(0),
        });
        let st = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(forward(client, st.clone()));
            }
        });
        Ok(Self {
            addr,
            state,
            accept,
        })
    }

    /// Hold each chunk the server sends this long (zero: forward at once). Applies to open connections too.
    pub fn set_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.state.delay_ms.store(ms, Ordering::Relaxed);
    }

    /// Forward new connections to `upstream` from now on.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self
            .state
            .upstream
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = upstream;
    }
}

impl Drop for SlowTcp {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn forward(client: TcpStream, state: Arc<State>) {
    let upstream = *state
        .upstream
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // A server that is down: the client's connection closes at once, as a refused one would fail.
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let delay = state.delay_ms.load(Ordering::Relaxed);
            if delay > 0 {
                // The fault itself (a slow server), not a wait for state.
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    // Either side closing ends the connection (a killed registry closes its clients' connections).
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> anyhow::Result<SocketAddr> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Ok(addr)
    }

    async fn round_trip(addr: SocketAddr) -> anyhow::Result<Vec<u8>> {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await?;
        Ok(buf.to_vec())
    }

    #[tokio::test]
    async fn forwards_holds_answers_while_slow_and_follows_a_new_upstream() -> anyhow::Result<()> {
        let first = echo_server().await?;
        let proxy = SlowTcp::start(first).await?;
        assert_eq!(round_trip(proxy.addr).await?, b"ping");

        proxy.set_delay(Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        assert_eq!(round_trip(proxy.addr).await?, b"ping");
        assert!(
            t0.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t0.elapsed()
        );
        proxy.set_delay(Duration::ZERO);

        // Upstream gone (a port nothing listens on): the connection is closed, nothing is answered.
        let gone = TcpListener::bind("127.0.0.1:0").await?.local_addr()?;
        proxy.set_upstream(gone);
        assert!(round_trip(proxy.addr).await.is_err());

        let second = echo_server().await?;
        proxy.set_upstream(second);
        assert_eq!(round_trip(proxy.addr).await?, b"ping");
        Ok(())
    }
}
