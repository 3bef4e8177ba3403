//! Kubernetes API request latency by verb, under client-go's name `rest_client_request_duration_seconds{verb}`
//! (verb = the HTTP method, as client-go labels it): a tower layer on the kube client's service stack times
//! each request until its response headers arrive (a watch counts until the stream opens). Every verb the
//! operators use is published at zero from the start. The same layer counts API `Warning` headers for the
//! caller that asks ([`count_warnings`]).

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

tokio::task_local! {
    static WARNINGS: std::sync::Arc<std::sync::atomic::AtomicU64>;
}

/// Run `fut` counting the API `Warning` response headers its requests draw (e.g. a deprecated API or an
/// unknown field in an applied object): OLM counts them in `installplan_warnings_total`.
pub async fn count_warnings<F: Future>(fut: F) -> (F::Output, u64) {
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let output = WARNINGS.scope(counter.clone(), fut).await;
    (output, counter.load(std::sync::atomic::Ordering::Relaxed))
}

impl<S, B, R> tower::Service<http::Request<B>> for Timed<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
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
            if let Ok(response) = result.as_ref() {
                let warnings = response
                    .headers()
                    .get_all(http::header::WARNING)
                    .iter()
                    .count() as u64;
                if warnings > 0 {
                    let _ = WARNINGS
                        .try_with(|w| w.fetch_add(warnings, std::sync::atomic::Ordering::Relaxed));
                }
            }
            if let Some(histogram) = GLOBAL.get() {
                histogram
                    .with_label_values(&[verb.as_str()])
                    .observe(start.elapsed().as_secs_f64());
            }
            result
        })
    }
}
