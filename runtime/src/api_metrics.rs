//! Kubernetes API request latency by verb, under client-go's name `rest_client_request_duration_seconds{verb}`
//! (verb = the HTTP method, as client-go labels it): a tower layer on the kube client's service stack times
//! each request until its response headers arrive (a watch counts until the stream opens). Every verb the
//! operators use is published at zero from the start.

use prometheus::{HistogramOpts, HistogramVec, Registry};
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Instant;

const VERBS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

static GLOBAL: OnceLock<HistogramVec> = OnceLock::new();

/// Register the histogram in `registry` and make it the process's (the first call wins).
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    let histogram = HistogramVec::new(
        HistogramOpts::new(
            "rest_client_request_duration_seconds",
            "Kubernetes API request latency (until the response headers), by verb (HTTP method)",
        )
        .buckets(BUCKETS.to_vec()),
        &["verb"],
    )?;
    registry.register(Box::new(histogram.clone()))?;
    for verb in VERBS {
        histogram.with_label_values(&[verb]);
    }
    let _ = GLOBAL.set(histogram);
    Ok(())
}

/// The layer to add to the kube client's stack (`ClientBuilder::with_layer`).
#[derive(Clone, Copy, Default)]
pub struct TimeRequests;

impl<S> tower::Layer<S> for TimeRequests {
    type Service = Timed<S>;
    fn layer(&self, inner: S) -> Timed<S> {
        Timed { inner }
    }
}

#[derive(Clone)]
pub struct Timed<S> {
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for Timed<S>
where
    S: tower::Service<http::Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let verb = request.method().clone();
        let start = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = response.await;
            if let Some(histogram) = GLOBAL.get() {
                histogram
                    .with_label_values(&[verb.as_str()])
                    .observe(start.elapsed().as_secs_f64());
            }
            result
        })
    }
}
