//! The span of one InstallPlan step (a child of `installplan.execute`, so of the resolution's trace), named
//! `apply <Kind>` (OTel `otel.name`) with the attributes a person filters by: namespace, plan, the step's kind,
//! name and resolving CSV, and the resulting step status; a failed step records its error on the span (OTel
//! status ERROR with the message). API warnings an applied object drew are counted in OLM's
//! `installplan_warnings_total` and announced by a Warning Event `AppliedWithWarnings` on the InstallPlan.

use messages::crd::install_plan::{Step, StepStatus};

pub fn span(namespace: &str, plan: &str, step: &Step) -> tracing::Span {
    tracing::info_span!(
        "installplan.step",
        otel.name = %format!("apply {}", step.resource.kind),
        namespace = %namespace,
        plan = %plan,
        step.kind = %step.resource.kind,
        step.name = %step.resource.name,
        csv = %step.resolving,
        status = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_message = tracing::field::Empty,
    )
}

/// Record the step's outcome on its span.
pub fn finish(span: &tracing::Span, result: Result<&StepStatus, &str>) {
    match result {
        Ok(status) => {
            span.record("status", format!("{status:?}"));
        }
        Err(message) => {
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_message", message);
        }
    }
}
