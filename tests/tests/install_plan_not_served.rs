//! Steps whose API the cluster does not serve (docs/v1beta1-crds.md; OLM `catalog/not_found.go`): the plan
//! stays Installing with OLM's not-found message while it retries, then fails with reason
//! `InstallComponentFailed`. Two inputs: OLM's own e2e case (test/e2e/deprecated_e2e_test.go, a step of a
//! GroupVersionKind nobody serves), and a real bundle whose CRD is `apiextensions.k8s.io/v1beta1` (apicurito
//! 0.1.0, channel `alpha`, from the shared catalogs), which current Kubernetes no longer serves: its plan names
//! the bundle and the CRD, and creates nothing (OLM would create the CSV first).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::PostParams;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::{InstallPlan, InstallPlanPhase};
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, shared_operators, with_namespace};
use serde_json::json;

const DEPRECATION_GUIDE: &str = "This API may have been deprecated and removed, see \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/ for more information.";

fn installed_condition(ip: &InstallPlan) -> Option<(String, String, String)> {
    ip.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_.as_str() == "Installed")
            .map(|c| {
                (
                    c.status.clone(),
                    c.reason.as_str().to_string(),
                    c.message.clone(),
                )
            })
    })
}

fn message(ip: &InstallPlan) -> String {
    ip.status
        .as_ref()
        .map(|s| s.message.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_step_of_an_api_nobody_serves_retries_then_fails_with_olms_message() -> anyhow::Result<()>
{
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "notserved", |ctx| async move {
        let _op = catalog_operator(&ctx, &["--install-plan-retry-timeout", "5s"]).await?;
        operator_group(&ctx).await?;
        // As OLM's e2e test writes it: an approved plan whose one step is a VerticalPodAutoscaler of a group
        // that does not exist.
        let plan = Ip::named("test-plan-api").approval(Approval::Automatic, true);
        let ip: InstallPlan = create(&ctx, plan.build()).await?;
        let mut with_status = ip;
        with_status.status = Some(serde_json::from_value(json!({"phase": "Installing", "catalogSources": [],
            "plan": [{"resolving": "test-csv", "status": "Unknown", "resource": {
                "name": "my.thing", "group": "verticalpodautoscalers.autoscaling.k8s.io", "version": "v1",
                "kind": "VerticalPodAutoscaler", "sourceName": "", "sourceNamespace": "",
                "manifest": r#"{"apiVersion":"verticalpodautoscalers.autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"my.thing","namespace":"foo"}}"#}}]}))?);
        plans(&ctx)
            .replace_status("test-plan-api", &PostParams::default(), &with_status)
            .await?;
        let expected = "api-server resource not found installing VerticalPodAutoscaler my.thing: GroupVersionKind \
                        verticalpodautoscalers.autoscaling.k8s.io/v1, Kind=VerticalPodAutoscaler not found on the cluster";
        let retrying = await_object(&plans(&ctx), "test-plan-api", DEADLINE, "Installing with the GVK message", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Installing && message(ip).contains(expected))
        })
        .await?;
        assert!(
            message(&retrying).starts_with("retrying execution due to error: "),
            "{}",
            message(&retrying)
        );
        let failed = await_object(&plans(&ctx), "test-plan-api", DEADLINE, "Failed", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Failed)
        })
        .await?;
        assert_eq!(
            message(&failed),
            format!("{expected}. {DEPRECATION_GUIDE}")
        );
        assert_eq!(
            installed_condition(&failed),
            Some(("False".into(), "InstallComponentFailed".into(), format!("{expected}. {DEPRECATION_GUIDE}")))
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_bundle_with_a_v1beta1_crd_fails_its_plan_naming_the_bundle_and_creates_nothing()
-> anyhow::Result<()> {
    let package = shared_operators()?.join("apicurito");
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "v1beta1", |ctx| async move {
        let port = free_port()?;
        let _registry = RegistryProcess::start(&[&package], port)?;
        let _cat = catalog_operator(
            &ctx,
            &["--registry-probe-interval", "500ms", "--install-plan-retry-timeout", "5s"],
        )
        .await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "community", &format!("127.0.0.1:{port}")).await?;
        // Channel alpha holds only apicuritooperator.v0.1.0, whose CRD apicuritos.apicur.io is v1beta1.
        subscription(&ctx, sub_to(&ctx, "apicurito", "apicurito", "community").channel("alpha")).await?;
        let sub = await_sub(&ctx, "apicurito", "InstallPlanFailed", |s| {
            sub_condition(s, "InstallPlanFailed").is_some_and(|c| c.0 == "True")
        })
        .await?;
        let status = sub.status.unwrap_or_default();
        assert_eq!(status.current_csv, "apicuritooperator.v0.1.0");
        let crd = "apicuritos.apicur.io";
        let expected = format!(
            "api-server resource not found installing CustomResourceDefinition {crd}: GroupVersionKind \
             apiextensions.k8s.io/v1beta1, Kind=CustomResourceDefinition not found on the cluster. {DEPRECATION_GUIDE} \
             Bundle apicuritooperator.v0.1.0 ships CustomResourceDefinition {crd} as apiextensions.k8s.io/v1beta1, \
             which Kubernetes 1.22 and later no longer serve, so it cannot be installed on this cluster; a version \
             of the operator whose CRDs are apiextensions.k8s.io/v1 can."
        );
        assert_eq!(
            sub_condition(&status, "InstallPlanFailed"),
            Some(("True".into(), "InstallComponentFailed".into(), expected.clone()))
        );
        let plan_name = status.install_plan.map(|p| p.name).unwrap_or_default();
        let plan = plans(&ctx).get(&plan_name).await?;
        assert_eq!(plan.phase(), InstallPlanPhase::Failed);
        assert_eq!(
            installed_condition(&plan),
            Some(("False".into(), "InstallComponentFailed".into(), expected))
        );
        // Refused before any step: neither the CSV nor the CRD exists.
        let csv = Api::<ClusterServiceVersion>::namespaced(ctx.client.clone(), &ctx.namespace)
            .get_opt("apicuritooperator.v0.1.0")
            .await?;
        assert!(csv.is_none(), "the CSV of a refused plan was created");
        let crd_obj = Api::<CustomResourceDefinition>::all(ctx.client.clone()).get_opt(crd).await?;
        assert!(crd_obj.is_none(), "the v1beta1 CRD was created");
        Ok(())
    })
    .await
}
