//! A watch that stops moving is ended, so its watcher resumes it. The API server sends every watch that asks for
//! bookmarks (kube-runtime's watchers do) a bookmark about once a minute and another just before the watch's
//! deadline; a watch response with no bytes for [`IDLE_LIMIT`] is stalled (a connection that died without a FIN,
//! a proxy that stopped forwarding, an apiserver restarted behind one). kube-runtime's own idle limit is the
//! watch's `timeoutSeconds` plus 5 s (605 s with [`crate::watch::WATCH_TIMEOUT_SECS`]), long enough for a stalled
//! Deployment watch to hold a CSV `Installing` for ten minutes. This tower layer on the kube client ends such a
//! response body with an error after [`IDLE_LIMIT`]; the watcher then watches again from the last version it saw
//! (no relist). A healthy watch never reaches the limit, so it costs no request. Only bookmark watches are
//! limited: a watch without bookmarks may be quiet for its whole timeout.

use hyper::body::{Body, Bytes, Frame};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How long a bookmark watch may send nothing: two and a half bookmark periods.
pub const IDLE_LIMIT: Duration = Duration::from_secs(150);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Whether a request is a watch that asked for bookmarks (`watch=true&allowWatchBookmarks=true`).
pub fn is_bookmark_watch(uri: &http::Uri) -> bool {
    let Some(query) = uri.query() else {
        return false;
    };
    let mut watch = false;
    let mut bookmarks = false;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("watch", v)) => watch = v == "true" || v == "1",
            Some(("allowWatchBookmarks", v)) => bookmarks = v == "true" || v == "1",
            _ => {}
        }
    }
    watch && bookmarks
}

/// The layer to add to the kube client's stack (`ClientBuilder::with_layer`).
#[derive(Clone, Copy, Debug)]
pub struct LimitIdleWatches {
    pub limit: Duration,
}

impl Default for LimitIdleWatches {
    fn default() -> Self {
        Self { limit: IDLE_LIMIT }
    }
}

impl<S> tower::Layer<S> for LimitIdleWatches {
    type Service = Limited<S>;
    fn layer(&self, inner: S) -> Limited<S> {
        Limited {
            inner,
            limit: self.limit,
        }
    }
}

#[derive(Clone)]
pub struct Limited<S> {
    inner: S,
    limit: Duration,
}

impl<S, B, R> tower::Service<http::Request<B>> for Limited<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<IdleBody<R>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let limit = is_bookmark_watch(request.uri()).then_some(self.limit);
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| IdleBody::new(body, limit)))
        })
    }
}

/// A response body that fails once it has sent nothing for its limit (none: never).
pub struct IdleBody<B> {
    inner: B,
    limit: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl<B> IdleBody<B> {
    pub fn new(inner: B, limit: Option<Duration>) -> Self {
        Self {
            inner,
            limit: limit.map(|l| (l, Box::pin(tokio::time::sleep(l)))),
        }
    }
}

/// The error a stalled watch ends with.
#[derive(Debug, thiserror::Error)]
#[error("the watch sent nothing (not even a bookmark) for {0:?}: ended, to be watched again")]
pub struct Stalled(pub Duration);

impl<B> Body for IdleBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some((limit, sleep)) = this.limit.as_mut() {
                    sleep.as_mut().reset(tokio::time::Instant::now() + *limit);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let Some((limit, sleep)) = this.limit.as_mut() else {
                    return Poll::Pending;
                };
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                tracing::warn!(limit = ?limit, "a watch stalled; watching again");
                Poll::Ready(Some(Err(Box::new(Stalled(*limit)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests;
