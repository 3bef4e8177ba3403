//! One trace across the two binaries (issue 7's design card): the catalog-operator's `catalog.resolve` span
//! writes its W3C trace context into the InstallPlan and the CSV it creates
//! (`tracing.olm.operatorframework.io/traceparent`); the olm-operator's `csv.reconcile` spans that install
//! the CSV continue that trace; later reconciles of the installed CSV start their own trace with a span link
//! to it. Both operators export over OTLP/gRPC to a receiver of the test's own, which must see spans of both
//! services in the trace the annotations name.

use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{
    Cluster, OperatorProcess, OtlpReceiver, ReceivedSpan, await_object, with_namespace,
};
use std::collections::BTreeSet;

const TRACEPARENT: &str = "tracing.olm.operatorframework.io/traceparent";

/// (trace id, parent span id) of a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`).
fn parse_traceparent(value: &str) -> anyhow::Result<(String, String)> {
    let parts: Vec<&str> = value.split('-').collect();
    match parts.as_slice() {
        ["00", trace, span, _flags] if trace.len() == 32 && span.len() == 16 => {
            Ok((trace.to_string(), span.to_string()))
        }
        _ => anyhow::bail!("not a W3C traceparent: {value:?}"),
    }
}

fn traceparent_of<K: kube::Resource>(object: &K) -> anyhow::Result<(String, String)> {
    let value = object
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(TRACEPARENT))
        .ok_or_else(|| {
            anyhow::anyhow!("{:?} has no {TRACEPARENT} annotation", object.meta().name)
        })?;
    parse_traceparent(value)
}

fn in_trace<'a>(
    spans: &'a [ReceivedSpan],
    trace: &'a str,
) -> impl Iterator<Item = &'a ReceivedSpan> {
    spans.iter().filter(move |s| s.trace_id == trace)
}

fn is_install_reconcile(s: &ReceivedSpan, csv: &str) -> bool {
    s.service == "olm-operator"
        && s.name == "csv.reconcile"
        && s.attribute("csv.name") == Some(csv)
        && s.attribute("phase") == Some("Installing")
}

#[tokio::test]
async fn resolution_and_csv_install_spans_of_both_operators_share_one_trace() -> anyhow::Result<()>
{
    let cluster = Cluster::shared()?;
    let receiver = OtlpReceiver::start().await?;
    with_namespace(cluster, "trace", |ctx| async move {
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ];
        let ns = ctx.namespace.as_str();
        let _cat = OperatorProcess::start_with_env(
            ctx.cluster,
            "catalog-operator",
            &["--watched-namespaces", ns, "--namespace", ns],
            &env,
        )
        .await?;
        let _olm = OperatorProcess::start_with_env(ctx.cluster, "olm-operator", &["--watched-namespaces", ns], &env).await?;
        let crd = Crd::new("gizmos", &format!("{}.trace.olm-rs.io", &ns[ns.len() - 6..]), "Gizmo");
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &Catalog::with(vec![Op::new("traced", "0.1.0").owns(&crd)]), 0).await?;
        subscription(&ctx, sub_to(&ctx, "traced", "traced", "cat")).await?;

        let sub = await_sub(&ctx, "traced", "AtLatestKnown traced.v0.1.0", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "traced.v0.1.0"
        })
        .await?;
        let plan_name = sub.status.and_then(|s| s.install_plan).map(|p| p.name).ok_or_else(|| anyhow::anyhow!("no installplan reference"))?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), ns);
        let csv = await_object(&csvs, "traced.v0.1.0", DEADLINE, "Succeeded", |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded")).await?;

        // The objects carry the resolution's context: the InstallPlan and the CSV name the same span.
        let (trace, resolve_span) = traceparent_of(&csv)?;
        let plan = plans(&ctx).get(&plan_name).await?;
        assert_eq!(traceparent_of(&plan)?, (trace.clone(), resolve_span.clone()), "InstallPlan and CSV carry the same context");

        // Both services exported spans in that trace: the resolution, the plan's execution, the CSV install.
        let spans = receiver
            .await_spans(DEADLINE, &format!("catalog.resolve, installplan.execute and an Installing csv.reconcile in trace {trace}"), |spans| {
                let mut names = BTreeSet::new();
                for s in in_trace(spans, &trace) {
                    if is_install_reconcile(s, "traced.v0.1.0") {
                        names.insert("csv.reconcile");
                    } else if s.service == "catalog-operator" {
                        names.insert(s.name.as_str());
                    }
                }
                ["catalog.resolve", "installplan.execute", "csv.reconcile"].iter().all(|n| names.contains(n))
            })
            .await?;

        let resolve: Vec<&ReceivedSpan> = in_trace(&spans, &trace).filter(|s| s.name == "catalog.resolve").collect();
        assert_eq!(resolve.len(), 1, "one resolution span in the trace: {resolve:?}");
        let resolve = resolve[0];
        assert_eq!(resolve.service, "catalog-operator");
        assert_eq!(resolve.span_id, resolve_span, "the annotation names the resolution span");
        assert_eq!(resolve.attribute("namespace"), Some(ns));

        let services: BTreeSet<&str> = in_trace(&spans, &trace).map(|s| s.service.as_str()).collect();
        assert_eq!(services, BTreeSet::from(["catalog-operator", "olm-operator"]));

        let install: Vec<&ReceivedSpan> = in_trace(&spans, &trace).filter(|s| s.service == "olm-operator").collect();
        for s in &install {
            assert_eq!(s.name, "csv.reconcile", "{s:?}");
            assert_eq!(s.attribute("csv.name"), Some("traced.v0.1.0"), "{s:?}");
            assert_eq!(s.parent_span_id, resolve.span_id, "olm-operator's spans are children of the resolution: {s:?}");
            assert_ne!(s.attribute("phase"), Some("Succeeded"), "reconciles after the install start their own trace: {s:?}");
        }
        let execute = in_trace(&spans, &trace).find(|s| s.name == "installplan.execute").ok_or_else(|| anyhow::anyhow!("no installplan.execute"))?;
        assert_eq!(execute.parent_span_id, resolve.span_id);
        assert_eq!(execute.attribute("name"), Some(plan_name.as_str()));

        // Reconciles of the installed CSV (status echoes, resyncs) start their own trace, linked to the resolution.
        let context = (trace.clone(), resolve.span_id.clone());
        let later = receiver
            .await_spans(DEADLINE, "a csv.reconcile of the Succeeded CSV linked to the resolution", |spans| {
                spans.iter().any(|s| s.name == "csv.reconcile" && s.attribute("phase") == Some("Succeeded") && s.links.contains(&context))
            })
            .await?;
        for s in later.iter().filter(|s| s.name == "csv.reconcile" && s.attribute("phase") == Some("Succeeded")) {
            assert_ne!(s.trace_id, trace, "{s:?}");
            assert_eq!(s.parent_span_id, "", "a new root: {s:?}");
            assert_eq!(s.links, vec![context.clone()], "{s:?}");
        }
        Ok(())
    })
    .await
}
