//! An OTLP/gRPC trace receiver of the test's own (the `TraceService` the operators' tonic exporter calls), on
//! a free loopback port: it decodes every `ExportTraceServiceRequest` into [`ReceivedSpan`]s and lets a test
//! wait, with a deadline, until the spans received so far satisfy a condition.

use anyhow::Context;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// Attributes every span carries (tracing-opentelemetry's code location and timings), left out of error text.
const NOISE: &[&str] = &["code.", "thread.", "busy_ns", "idle_ns", "target"];

/// One span as received: ids in lowercase hex (as in a W3C `traceparent`), attributes as strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceivedSpan {
    /// `service.name` of the resource that exported the span.
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub attributes: BTreeMap<String, String>,
    /// (trace id, span id) of each span link.
    pub links: Vec<(String, String)>,
}

impl ReceivedSpan {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

pub struct OtlpReceiver {
    /// `http://127.0.0.1:<port>`, the value for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    spans: watch::Receiver<Vec<ReceivedSpan>>,
    stop: Option<oneshot::Sender<()>>,
}

struct Collector {
    spans: watch::Sender<Vec<ReceivedSpan>>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

/// Flatten an export request into spans, each with its resource's `service.name`.
pub fn decode(request: &ExportTraceServiceRequest) -> Vec<ReceivedSpan> {
    let mut out = Vec::new();
    for resource_spans in &request.resource_spans {
        let service = resource_spans
            .resource
            .as_ref()
            .map(|r| attributes(&r.attributes))
            .and_then(|a| a.get("service.name").cloned())
            .unwrap_or_default();
        for scope_spans in &resource_spans.scope_spans {
            for span in &scope_spans.spans {
                out.push(ReceivedSpan {
                    service: service.clone(),
                    name: span.name.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: attributes(&span.attributes),
                    links: span
                        .links
                        .iter()
                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                        .collect(),
                });
            }
        }
    }
    out
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let received = decode(request.get_ref());
        self.spans.send_modify(|all| all.extend(received));
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

impl OtlpReceiver {
    /// Listen on a free loopback port and serve until dropped.
    pub async fn start() -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("bind the OTLP receiver")?;
        let addr = listener.local_addr()?;
        let (tx, rx) = watch::channel(Vec::new());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Collector { spans: tx }))
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                async {
                    let _ = stopped.await;
                },
            );
        tokio::spawn(async move {
            if let Err(error) = server.await {
                eprintln!("OTLP receiver stopped: {error}");
            }
        });
        Ok(Self {
            endpoint: format!("http://{addr}"),
            spans: rx,
            stop: Some(stop),
        })
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.borrow().clone()
    }

    /// Wait until the spans received so far satisfy `cond`; returns them. On timeout the error names `what`
    /// and lists the spans received (service, name, trace id).
    pub async fn await_spans<F>(
        &self,
        deadline: Duration,
        what: &str,
        cond: F,
    ) -> anyhow::Result<Vec<ReceivedSpan>>
    where
        F: Fn(&[ReceivedSpan]) -> bool,
    {
        let mut rx = self.spans.clone();
        match tokio::time::timeout(deadline, rx.wait_for(|s| cond(s))).await {
            Ok(Ok(spans)) => Ok(spans.clone()),
            Ok(Err(_)) => anyhow::bail!("the OTLP receiver stopped while waiting for {what}"),
            Err(_) => {
                let seen: Vec<String> = self
                    .spans()
                    .iter()
                    .map(|s| {
                        let own: BTreeMap<&str, &str> = s
                            .attributes
                            .iter()
                            .filter(|(k, _)| !NOISE.iter().any(|n| k.starts_with(n)))
                            .map(|(k, v)| (k.as_str(), v.as_str()))
                            .collect();
                        format!(
                            "{} {} trace={} parent={} {own:?}",
                            s.service, s.name, s.trace_id, s.parent_span_id
                        )
                    })
                    .collect();
                anyhow::bail!(
                    "timed out after {deadline:?} waiting for {what}; {} spans received:\n{}",
                    seen.len(),
                    seen.join("\n")
                )
            }
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
