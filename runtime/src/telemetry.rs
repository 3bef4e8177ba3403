//! Tracing to stdout (text or JSON, filtered by `RUST_LOG`, default `info`) and, when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set, spans exported over OTLP/gRPC. The `EnvFilter` sits on the stdout layer
//! only: a global filter would disable spans and so drop trace propagation (crate-stack §3.1).
//!
//! The tonic exporter needs a tokio runtime when it is built (its channel spawns a worker) and while it
//! exports; the batch processor exports from its own thread. So the exporter gets a one-thread runtime of
//! its own, owned by the [`TelemetryGuard`]: export works whether or not `init` runs inside a runtime, and
//! never competes with the operator's actors. `OTEL_BSP_SCHEDULE_DELAY` (ms) sets the batch delay.

use crate::args::LogFormat;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("cannot start the span export runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot build the OTLP exporter")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
    #[error("a global tracing subscriber is already installed")]
    AlreadyInstalled(#[source] tracing_subscriber::util::TryInitError),
}

/// Keeps the tracer provider and its export runtime alive; flushes spans on drop.
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
    export_runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("telemetry: span export shutdown: {error}");
        }
        if let Some(runtime) = self.export_runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The OTLP/gRPC pipeline: a batch processor over the tonic exporter, built inside its own runtime.
fn otlp_provider(
    service_name: &'static str,
) -> Result<(SdkTracerProvider, tokio::runtime::Runtime), TelemetryError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("otlp-export")
        .enable_all()
        .build()
        .map_err(TelemetryError::Runtime)?;
    let exporter = {
        let _entered = runtime.enter();
        opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()
            .map_err(TelemetryError::Exporter)?
    };
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service_name)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    Ok((provider, runtime))
}

pub fn init(
    service_name: &'static str,
    format: LogFormat,
) -> Result<TelemetryGuard, TelemetryError> {
    let env_filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env_lossy();
    let fmt_layer = match format {
        LogFormat::Text => fmt::layer().with_target(false).boxed(),
        LogFormat::Json => fmt::layer().json().flatten_event(true).boxed(),
    }
    .with_filter(env_filter);

    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let (provider, export_runtime) = if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() {
        let (provider, runtime) = otlp_provider(service_name)?;
        (Some(provider), Some(runtime))
    } else {
        (None, None)
    };
    let otel_layer = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer(service_name))
            .with_filter(LevelFilter::INFO)
    });
    tracing_subscriber::registry()
        .with(fmt_layer)
        .with(otel_layer)
        .try_init()
        .map_err(TelemetryError::AlreadyInstalled)?;
    Ok(TelemetryGuard {
        provider,
        export_runtime,
    })
}
