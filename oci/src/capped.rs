//! A sink for a download that refuses a byte past its limit, so a registry that sends more than a blob's declared
//! size (a lying manifest, an endless body) is cut off as the bytes arrive, not after they filled memory.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;

pub struct Capped<'a> {
    buf: &'a mut Vec<u8>,
    limit: usize,
    /// Whether a write was refused (the sender went past the limit).
    pub over: bool,
}

impl<'a> Capped<'a> {
    pub fn new(buf: &'a mut Vec<u8>, limit: usize) -> Self {
        Capped {
            buf,
            limit,
            over: false,
        }
    }
}

impl AsyncWrite for Capped<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.buf.len().saturating_add(data.len()) > this.limit {
            this.over = true;
            return Poll::Ready(Err(io::Error::other(format!(
                "more than the {} bytes declared",
                this.limit
            ))));
        }
        this.buf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn writes_up_to_the_limit_and_refuses_past_it() {
        let mut buf = Vec::new();
        let mut w = Capped::new(&mut buf, 5);
        w.write_all(b"abc").await.expect("within");
        w.write_all(b"de").await.expect("at the limit");
        assert!(w.write_all(b"f").await.is_err());
        assert!(w.over);
        assert_eq!(buf, b"abcde");
    }
}
