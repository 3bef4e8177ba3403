//! W3C trace context carried in object annotations, so one trace follows a Subscription from the
//! catalog-operator (which writes InstallPlans and CSVs) into the olm-operator (which reconciles them).
//! opentelemetry implements `Injector`/`Extractor` only for `HashMap`; annotations are a `BTreeMap`.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::collections::BTreeMap;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Prefix of the annotations that carry `traceparent`/`tracestate`.
pub const TRACE_ANNOTATION_PREFIX: &str = "tracing.olm.operatorframework.io/";

pub struct AnnotationInjector<'a>(pub &'a mut BTreeMap<String, String>);
pub struct AnnotationExtractor<'a>(pub &'a BTreeMap<String, String>);

impl Injector for AnnotationInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0
            .insert(format!("{TRACE_ANNOTATION_PREFIX}{key}"), value);
    }
}

impl Extractor for AnnotationExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(&format!("{TRACE_ANNOTATION_PREFIX}{key}"))
            .map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|k| k.strip_prefix(TRACE_ANNOTATION_PREFIX))
            .collect()
    }
}

/// Write the current span's context into `annotations` (do it in the same write that makes the change).
pub fn inject_current(annotations: &mut BTreeMap<String, String>) {
    let cx = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&cx, &mut AnnotationInjector(annotations));
}

/// How a reconcile span joins the trace carried by its object's annotations (KEP-5915): as a child while
/// the change that wrote the annotation is being carried out, as a new root with a span link afterwards
/// (resyncs and status updates repeat forever; parenting them all would grow one trace without end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    Child,
    Link,
}

/// Make `span` a child of the context found in `annotations`, if any. Call before entering the span.
pub fn adopt_parent(span: &tracing::Span, annotations: &BTreeMap<String, String>) -> bool {
    join(span, annotations, Join::Child)
}

/// Join `span` to the trace found in `annotations`, if any, as `how` says. Call before entering the span.
/// Returns whether the annotations carried a valid trace context.
pub fn join(span: &tracing::Span, annotations: &BTreeMap<String, String>, how: Join) -> bool {
    let extractor = AnnotationExtractor(annotations);
    if extractor.get("traceparent").is_none() {
        return false;
    }
    let cx = TraceContextPropagator::new().extract(&extractor);
    let remote = cx.span().span_context().clone();
    if !remote.is_valid() {
        return false;
    }
    match how {
        Join::Child => span.set_parent(cx).is_ok(),
        Join::Link => {
            span.add_link(remote);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;

    /// Run `f` with an OpenTelemetry tracing layer installed.
    fn with_tracer(f: impl FnOnce()) {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let tracer = provider.tracer("test");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::with_default(subscriber, f);
    }

    fn current_trace_id() -> opentelemetry::trace::TraceId {
        tracing::Span::current()
            .context()
            .span()
            .span_context()
            .trace_id()
    }

    #[test]
    fn a_trace_id_survives_annotations_from_writer_to_reader() {
        with_tracer(|| {
            let mut annotations = BTreeMap::new();
            let writer = tracing::info_span!("catalog.resolve");
            let written = writer.in_scope(|| {
                inject_current(&mut annotations);
                current_trace_id()
            });
            assert!(
                annotations.contains_key("tracing.olm.operatorframework.io/traceparent"),
                "{annotations:?}"
            );
            let reader = tracing::info_span!("csv.reconcile");
            assert!(adopt_parent(&reader, &annotations));
            let read = reader.in_scope(current_trace_id);
            assert_eq!(written, read);
        });
    }

    #[test]
    fn a_linked_span_starts_its_own_trace() {
        with_tracer(|| {
            let mut annotations = BTreeMap::new();
            let writer = tracing::info_span!("catalog.resolve");
            let written = writer.in_scope(|| {
                inject_current(&mut annotations);
                current_trace_id()
            });
            let reader = tracing::info_span!("csv.reconcile");
            assert!(join(&reader, &annotations, Join::Link));
            let read = reader.in_scope(current_trace_id);
            assert_ne!(written, read, "a link is not a parent");
        });
    }

    #[test]
    fn a_malformed_traceparent_joins_nothing() {
        let span = tracing::info_span!("x");
        let annotations = BTreeMap::from([(
            "tracing.olm.operatorframework.io/traceparent".to_string(),
            "00-not-a-trace-01".to_string(),
        )]);
        assert!(!join(&span, &annotations, Join::Child));
        assert!(!join(&span, &annotations, Join::Link));
    }

    #[test]
    fn annotations_without_a_traceparent_adopt_nothing() {
        let span = tracing::info_span!("x");
        assert!(!adopt_parent(
            &span,
            &BTreeMap::from([("a".to_string(), "b".to_string())])
        ));
    }
}
